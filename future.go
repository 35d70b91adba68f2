package smartpool

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"github.com/smartpool-go/smartpool/internal/engine"
)

// Errors a Future or a Group reports for tasks that did not return.
var ()

// Future is the result of a task started with Go or NewFuture. It resolves
// once: with the task's value and error; with a *PanicError if the task
// panicked (the panic goes to the Future, not to the pool's panic handler;
// the pool counts it in ChannelStats.Panicked); with ErrDropped if the pool
// dropped the task; with ErrGoexit if it called runtime.Goexit; with
// ctx.Err() if it was submitted with SubmitTask with WithContext and ctx ended
// while it was queued; or, for Go, with the submit error if the task was
// never queued.
// A Future is safe for concurrent use and must not be copied.
type Future[T any] struct {
	once sync.Once
	done chan struct{}
	val  T     // written once, before done is closed
	err  error // written once, before done is closed
}

func newFuture[T any]() *Future[T] { return &Future[T]{done: make(chan struct{})} }

func (f *Future[T]) resolve(v T, err error) {
	f.once.Do(func() {
		f.val, f.err = v, err
		close(f.done)
	})
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
		return f.val, f.err
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
		return f.val, f.err
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
			engine.RecoveredPanic(ctx, pe)
			t.f.resolve(zero, pe)
		} else if tc := engine.TaskOf(ctx); tc != nil && tc.Dropped {
			t.f.resolve(zero, ErrDropped)
		} else {
			t.f.resolve(zero, ErrGoexit)
		}
	}()
	v, err := t.fn(ctx)
	finished = true
	t.f.resolve(v, err)
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
// opts, and returns the Future of its result. A submit error (ErrNilTask,
// ErrClosed, ErrUnknownKey, ErrOption, ErrFull, ctx.Err() of WithContext)
// resolves the Future at once; so does WithContext's context ending while
// fn is queued (with ctx.Err()), and a drop (with ErrDropped).
func Go[K comparable, T any](p *Pool[K], key K, fn func(ctx context.Context) (T, error), opts ...Option) *Future[T] {
	if fn == nil {
		f := newFuture[T]()
		var zero T
		f.resolve(zero, ErrNilTask)
		return f
	}
	t, f := NewFuture(fn)
	if err := p.SubmitTask(key, t, opts...); err != nil {
		var zero T
		f.resolve(zero, err)
	}
	return f
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
