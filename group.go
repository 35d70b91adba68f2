package smartpool

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"

	"go.uber.org/atomic"
)

// Group is a scope of tasks spawned into a pool's channels, in the manner of
// errgroup.WithContext and conc's context pools. Create one with NewGroup, or
// use Scope.
//
// Context: every task receives a context derived from the one given to
// NewGroup. Its values (trace IDs, a deadline stored as a value) reach the
// task, and so do its deadline and cancellation. It is cancelled when that
// context ends, when a task of the group fails (returns an error, panics,
// calls runtime.Goexit or is dropped), when the pool's Close gives up
// waiting, and when Wait returns; context.Cause gives the first error. It
// also carries the pool's task handle, so Yield, Sleep, Recv and waits on a
// Future or another Group work in the task as in any task.
//
// Cancellation: a task still queued when the group's context is cancelled
// never runs; the pool counts it in ChannelStats.Cancelled. Go on a group
// whose context is done queues nothing and counts nothing.
//
// Errors: Wait returns once every task has ended, with the first error in
// this order of events: a task's error; a panic, as *PanicError (every later
// panic goes to the pool's panic handler, Config.PanicHandler, so none is
// lost; each is counted in ChannelStats.Panicked); ErrGoexit; ErrDropped for
// a task Close dropped; a submit error (ErrClosed, ErrUnknownKey,
// ErrNilTask); or the context's error, when a task was skipped or a Go gave
// up waiting because the context given to NewGroup ended.
//
// Room: SetLimit bounds the group's tasks in flight (queued, running or
// yielded), as errgroup's SetLimit bounds its goroutines. Go waits for room
// in the group, for a unit of the pool's in-flight limit (Config.Limit) and
// for room in a full channels.Bounded, as long as the group's context lasts;
// TryGo never waits.
//
// Waiting from inside a pool task yields the worker, so a Group is safe at
// any pool size, including one worker waiting on its own children: Wait
// yields with the context it is given, and Go, when it must wait for room,
// with the group's context. As with Yield, that context's task must be the
// calling goroutine's: when the group's context comes from a pool task, call
// a Go that may wait from that task's goroutine (Scope's body does). A task
// of the group that spawns more work can open a Scope of its own with its
// context, or use TryGo.
//
// A Group is safe for concurrent use and must not be copied. It is used
// once: Go after Wait returned finds the group's context cancelled.
type Group[K comparable] struct {
	p      *Pool[K]
	ctx    context.Context // the tasks' context; read-only
	cancel context.CancelCauseFunc
	stop   func() bool  // unregisters the group's cancel on the pool's base context
	err    atomic.Error // the first error; set once, by compare-and-swap from nil

	mu      sync.Mutex
	pending int           // tasks spawned and not ended; guarded by mu
	limit   int           // SetLimit's bound on pending, 0 for none; guarded by mu
	idle    chan struct{} // closed when pending drops to 0 while someone waits; guarded by mu
	room    chan struct{} // closed when pending drops or the limit changes while a Go waits; guarded by mu
}

// NewGroup returns an empty Group spawning into p, whose tasks' context
// derives from ctx (see Group). A nil ctx means context.Background().
func NewGroup[K comparable](ctx context.Context, p *Pool[K]) *Group[K] {
	if ctx == nil {
		ctx = context.Background()
	}
	gctx, cancel := context.WithCancelCause(ctx)
	g := &Group[K]{p: p, ctx: gctx, cancel: cancel}
	base := p.e.base // cancelled when a Close gives up waiting, and when the pool has closed
	g.stop = context.AfterFunc(base, func() { cancel(context.Cause(base)) })
	return g
}

// Scope runs body with a new Group of p whose tasks' context derives from
// ctx, then waits for every task body spawned and returns the first error
// (see Group). It waits for the tasks even after ctx ended: they see their
// context cancelled and queued ones are skipped, so nothing outlives the
// scope. If body panics, Scope cancels the group, waits for its tasks and
// panics on.
func Scope[K comparable](ctx context.Context, p *Pool[K], body func(g *Group[K])) error {
	if ctx == nil {
		ctx = context.Background()
	}
	g := NewGroup(ctx, p)
	wait := context.WithoutCancel(ctx) // keeps the task handle: a scope inside a task yields
	returned := false
	defer func() {
		if !returned {
			g.cancel(errScopePanicked)
			_ = g.Wait(wait)
		}
	}()
	body(g)
	returned = true
	return g.Wait(wait)
}

// errScopePanicked is the cause of a scope's context when its body panicked.
var errScopePanicked = errors.New("smartpool: scope body panicked")

// SetLimit bounds the number of the group's tasks in flight (queued, running
// or yielded) to n, as errgroup's SetLimit does; n <= 0 removes the bound.
// Unlike errgroup's, it may be called at any time: a raised bound lets
// waiting Go calls in at once; a lowered one stops nothing that was
// spawned.
func (g *Group[K]) SetLimit(n int) {
	g.mu.Lock()
	g.limit = max(n, 0)
	g.wakeRoomLocked()
	g.mu.Unlock()
}

// Go submits fn to the channel named key. If there is no room (see Group),
// it waits until there is or the group's context ends. A submit error
// (ErrNilTask, ErrClosed, ErrUnknownKey, ErrFull from a full channel that
// cannot wait), or the context's error if it ends first, becomes the
// group's error if it is the first, and fn is not run.
func (g *Group[K]) Go(key K, fn func(ctx context.Context) error) {
	g.spawn(key, fn, true)
}

// TryGo submits fn to the channel named key only if there is room at once:
// in the group (SetLimit), in the pool's in-flight limit and in the
// channel. It reports whether fn was queued, like errgroup's TryGo. A
// refusal for lack of room leaves the group as it was, so the caller may try
// again; any other refusal (ErrNilTask, ErrClosed, ErrUnknownKey, the
// group's context ended) also becomes the group's error and cancels it, so
// false with the group's context still live means "no room".
func (g *Group[K]) TryGo(key K, fn func(ctx context.Context) error) bool {
	return g.spawn(key, fn, false)
}

// errNoRoom is enter's refusal when the group is at its limit.
var errNoRoom = errors.New("no room in the group")

func (g *Group[K]) spawn(key K, fn func(ctx context.Context) error, wait bool) bool {
	ch, ok := g.p.index[key]
	switch {
	case fn == nil:
		g.fail(ErrNilTask)
		return false
	case !ok:
		g.fail(unknownKey(key))
		return false
	}
	if err := g.enter(wait); err != nil {
		if err != errNoRoom {
			g.fail(err)
		}
		return false
	}
	t := &groupTask[K]{g: g, fn: fn, ch: ch}
	err := g.p.e.submitContext(g.ctx, ch, t, submitMode{wait: wait, room: wait})
	switch {
	case err == nil:
		return true
	case !wait && errors.Is(err, ErrFull):
		g.leave()
	default:
		g.fail(err)
		g.leave()
	}
	return false
}

// enter takes a place for a new task under the group's limit, waiting for
// one if wait, until the group's context ends.
func (g *Group[K]) enter(wait bool) error {
	g.mu.Lock()
	for g.limit > 0 && g.pending >= g.limit {
		if !wait {
			g.mu.Unlock()
			return errNoRoom
		}
		if g.room == nil {
			g.room = make(chan struct{})
		}
		room := g.room
		g.mu.Unlock()
		if err := g.ctx.Err(); err != nil {
			return err
		}
		Yield(g.ctx, func() {
			select {
			case <-room:
			case <-g.ctx.Done():
			}
		})
		if err := g.ctx.Err(); err != nil {
			return err
		}
		g.mu.Lock()
	}
	g.pending++
	g.mu.Unlock()
	return nil
}

// Wait blocks until every spawned task has ended, then cancels the group's
// context and returns the first error (see Group); or it returns ctx.Err()
// if ctx ends first, and the group goes on. From a pool task, pass its
// context: the wait then yields the worker.
func (g *Group[K]) Wait(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	g.mu.Lock()
	if g.pending != 0 {
		if g.idle == nil {
			g.idle = make(chan struct{})
		}
		idle := g.idle
		g.mu.Unlock()
		Yield(ctx, func() {
			select {
			case <-idle:
			case <-ctx.Done():
			}
		})
		select {
		case <-idle:
		default:
			return ctx.Err()
		}
	} else {
		g.mu.Unlock()
	}
	g.stop()
	g.cancel(nil)
	return g.err.Load()
}

// fail records err as the group's error if it is the first, and then
// cancels the group's context with it; it reports whether err was first.
func (g *Group[K]) fail(err error) bool {
	if err == nil || !g.err.CompareAndSwap(nil, err) {
		return false
	}
	g.cancel(err)
	return true
}

// leave ends one spawned task (its outcome recorded by fail before).
func (g *Group[K]) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending--
	g.wakeRoomLocked()
	if g.pending == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

func (g *Group[K]) wakeRoomLocked() {
	if g.room != nil {
		close(g.room)
		g.room = nil
	}
}

// groupTask runs one function of a group and records its outcome.
type groupTask[K comparable] struct {
	g   *Group[K]
	fn  func(ctx context.Context) error
	ch  int          // the channel it was spawned into: a later panic is reported as its
	ctx groupContext // the context fn receives; written by Run
}

// groupContext is the context a group's task receives: the group's
// (deadline, cancellation, values) with the pool's task handle of the run,
// so that Yield finds the task that runs, not the one that made the group.
type groupContext struct {
	context.Context                 // the group's
	task            context.Context // the context the worker passed to Run
}

// Value returns the run's task handle for the pool's key and the group
// context's value for any other.
func (c *groupContext) Value(key any) any {
	if key == (taskKey{}) {
		return c.task.Value(key)
	}
	return c.Context.Value(key)
}

func (t *groupTask[K]) Run(ctx context.Context) {
	g := t.g
	t.ctx = groupContext{Context: g.ctx, task: ctx}
	finished := false
	defer func() {
		if finished {
			return
		}
		if r := recover(); r != nil {
			recoveredPanic(ctx)
			pe := &PanicError{Value: r, Stack: debug.Stack()}
			if !g.fail(pe) {
				g.p.e.panicked(t.ch, pe) // the group reports its first error only
			}
		} else if tc := taskOf(ctx); tc != nil && tc.dropped {
			g.fail(ErrDropped)
		} else {
			g.fail(ErrGoexit)
		}
		g.leave()
	}()
	err := t.fn(&t.ctx)
	finished = true
	g.fail(err)
	g.leave()
}

// dropped resolves a task the pool dropped before it ran.
func (t *groupTask[K]) dropped() {
	t.g.fail(ErrDropped)
	t.g.leave()
}

// cancelled resolves a task skipped because the group's context ended.
func (t *groupTask[K]) cancelled(err error) {
	t.g.fail(err)
	t.g.leave()
}
