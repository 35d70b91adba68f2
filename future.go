package smartpool

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/smartpool-go/smartpool/internal/engine"
)

// Future is the result of a task started with Go or NewFuture. It resolves
// once: with the task's value and error; with a *PanicError if the task
// panicked (the pool counts it in ChannelStats.Panicked, and its panic
// handler receives it too); with ErrDropped if the pool
// dropped the task; with ErrGoexit if it called runtime.Goexit; or with
// ctx.Err() if it was submitted with WithContext and ctx ended while it was
// queued. A failure (an error, a panic, Goexit) that no Wait reads is
// logged at Warn once the Future is collected or the pool has closed.
// A Future is safe for concurrent use and must not be copied.
type Future[T any] struct {
	once    sync.Once
	done    chan struct{}
	val     T               // written once, before done is closed
	err     error           // written once, before done is closed
	unread  *engine.Unread  // the task's failure until a Wait reads it; written once, before done is closed
	cleanup runtime.Cleanup // logs unread if f is collected first; written with it
}

func newFuture[T any]() *Future[T] { return &Future[T]{done: make(chan struct{})} }

func (f *Future[T]) resolve(v T, err error) { f.resolveFrom(v, err, nil, 0, nil) }

// resolveFrom resolves f with the ending of task fn, which ran in channel
// ch of e: a failure (its error, panic or Goexit) is followed until a Wait
// reads it (internal/engine/unread.go). Drops and cancellations are not
// followed: the pool counts and logs those itself.
func (f *Future[T]) resolveFrom(v T, err error, e *engine.Engine, ch int, fn any) {
	f.once.Do(func() {
		f.val, f.err = v, err
		if err != nil && e != nil {
			f.unread = e.Unread(ch, fn, err)
			f.cleanup = runtime.AddCleanup(f, (*engine.Unread).Collected, f.unread)
		}
		close(f.done)
	})
}

// read returns the result, marking a failure read.
func (f *Future[T]) read() (T, error) {
	if f.unread != nil && f.unread.Read() {
		f.cleanup.Stop()
	}
	return f.val, f.err
}

// Done returns a channel closed when the Future has resolved.
func (f *Future[T]) Done() <-chan struct{} { return f.done }

// Wait returns the task's value and error once the Future resolves, or the
// zero value and ctx.Err() if ctx ends first. Called from a pool task's
// goroutine, whatever ctx, the wait yields the worker (see Yield), so tasks
// may wait on tasks at any pool size without deadlock.
func (f *Future[T]) Wait(ctx context.Context) (T, error) {
	select {
	case <-f.done:
		return f.read()
	default:
	}
	Yield(ctx, func() {
		select {
		case <-f.done:
		case <-ctx.Done():
		}
	})
	select {
	case <-f.done:
		return f.read()
	default:
		var zero T
		return zero, ctx.Err()
	}
}

// futureTask runs fn and resolves f with what happened.
type futureTask[T any] struct {
	f  *Future[T]
	fn func(ctx context.Context) (T, error)
}

func (t *futureTask[T]) Run(ctx context.Context) {
	finished := false
	defer func() {
		if finished {
			return
		}
		var zero T
		if r := recover(); r != nil {
			pe := &PanicError{Value: r, Stack: debug.Stack()}
			recoveredPanic(ctx, pe)
			t.ended(ctx, zero, pe)
		} else if tc := engine.TaskOf(ctx); tc != nil && tc.Dropped {
			t.f.resolve(zero, ErrDropped)
		} else {
			t.ended(ctx, zero, ErrGoexit)
		}
	}()
	v, err := t.fn(ctx)
	finished = true
	t.ended(ctx, v, err)
}

// ended resolves the Future with how the run with ctx ended.
func (t *futureTask[T]) ended(ctx context.Context, v T, err error) {
	if err == nil {
		t.f.resolve(v, nil)
		return
	}
	e, ch := engine.Where(ctx)
	t.f.resolveFrom(v, err, e, ch, t.fn)
}

// dropped resolves a task the pool dropped before it ran.
func (t *futureTask[T]) Dropped() {
	var zero T
	t.f.resolve(zero, ErrDropped)
}

// cancelled resolves a task whose submitter's context ended while it was
// queued (SubmitTask with WithContext).
func (t *futureTask[T]) Cancelled(err error) {
	var zero T
	t.f.resolve(zero, err)
}

// recoveredPanic tells the pool that the task running with ctx panicked
// with pe and that its Future or Group recovered the panic: the pool counts
// the task as panicked, not ran, and hands pe to the panic handler once the
// task has ended, also when a channel ran it on the submitting goroutine
// (Bits.RunHere). So every panic reaches the handler exactly once, whoever
// else reports it as an error.
func recoveredPanic(ctx context.Context, pe *PanicError) {
	if tc := engine.TaskOf(ctx); tc != nil {
		tc.Recovered = pe
	} else if run, ok := ctx.Value(engine.InlineKey{}).(*engine.InlineRun); ok {
		run.Recovered = pe // run by Bits.RunHere
	}
}

// NewFuture returns a task that runs fn, and the Future of its result, for
// a submit that takes a Task (a channel's SubmitTask, Pool.SubmitTask,
// Handoff): Go does both for a by-key submit. If that submit fails, the
// Future never resolves: check its error. A task submitted twice resolves
// the Future with its first run.
func NewFuture[T any](fn func(ctx context.Context) (T, error)) (Task, *Future[T]) {
	f := newFuture[T]()
	if fn == nil {
		fn = func(context.Context) (T, error) { var zero T; return zero, ErrNilTask }
	}
	return &futureTask[T]{f: f, fn: fn}, f
}

// Go submits fn to the channel named key of p, as Pool.Submit does with
// opts, and returns the Future of its result. If the pool refuses fn, Go
// returns the submit's error at once and no Future (ErrNilTask, ErrClosed,
// ErrUnknownKey, ErrOption, ErrFull, or ctx.Err() of WithContext), so a
// server can answer "busy" without waiting; once Go returned a Future,
// every ending arrives through it (see Future).
func Go[K comparable, T any](p *Pool[K], key K, fn func(ctx context.Context) (T, error), opts ...Option) (*Future[T], error) {
	if fn == nil {
		return nil, ErrNilTask
	}
	t, f := NewFuture(fn)
	if err := p.SubmitTask(key, t, opts...); err != nil {
		return nil, err
	}
	return f, nil
}

// Sleep pauses the task for d without holding a worker (see Yield). It
// returns ctx.Err() if ctx ends first, nil otherwise. Outside a pool task it
// is a plain sleep that ctx can cut short.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	Yield(ctx, func() {
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	})
	return ctx.Err()
}

// Recv receives from ch without holding a worker (see Yield). ok is false if
// ch is closed; err is ctx.Err() if ctx ended first.
func Recv[T any](ctx context.Context, ch <-chan T) (v T, ok bool, err error) {
	Yield(ctx, func() {
		select {
		case v, ok = <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		}
	})
	return v, ok, err
}

// The engine ends futures and group tasks through these hooks: a method
// renamed by mistake would otherwise be skipped silently.
var (
	_ engine.Droppable        = (*futureTask[any])(nil)
	_ engine.CancelHook       = (*futureTask[any])(nil)
	_ engine.Droppable        = (*groupTask[int])(nil)
	_ engine.CancelHook       = (*groupTask[int])(nil)
	_ engine.HandleCancelHook = (*groupTask[int])(nil)
)
