package smartpool

import (
	"context"
	"runtime/debug"
	"sync"
)

// Group is a scope of tasks spawned into a pool's channels: Wait returns
// once all of them have finished, with the first error one returned (a
// panic arrives as a *PanicError, a task dropped by Close as ErrDropped).
// Waiting from inside a pool task yields the worker, so a Group is safe at
// any pool size, including one worker waiting on its own children.
//
// Create one with NewGroup or use Scope. A Group is safe for concurrent use
// and must not be copied. Go may be called until Wait has returned.
type Group[K comparable] struct {
	p *Pool[K]

	mu      sync.Mutex
	pending int           // tasks spawned and not finished; guarded by mu
	idle    chan struct{} // closed when pending drops to 0 while someone waits; guarded by mu
	err     error         // first error; guarded by mu
}

// NewGroup returns an empty Group spawning into p.
func NewGroup[K comparable](p *Pool[K]) *Group[K] { return &Group[K]{p: p} }

// Scope runs body with a new Group of p, then waits for every task body
// spawned (see Group.Wait) and returns the first error.
func Scope[K comparable](ctx context.Context, p *Pool[K], body func(g *Group[K])) error {
	g := NewGroup(p)
	body(g)
	return g.Wait(ctx)
}

// Go submits fn to the channel named key. A submit error (ErrNilTask,
// ErrClosed, ErrUnknownKey) becomes the Group's error if it is the first.
func (g *Group[K]) Go(key K, fn func(ctx context.Context) error) {
	if fn == nil {
		g.fail(ErrNilTask)
		return
	}
	g.mu.Lock()
	g.pending++
	g.mu.Unlock()
	if err := g.p.SubmitTask(key, &groupTask[K]{g: g, fn: fn}); err != nil {
		g.finish(err)
	}
}

// Wait blocks until every spawned task finished, then returns the first
// error, or returns ctx.Err() if ctx ends first. From a pool task, pass its
// context: the wait then yields the worker.
func (g *Group[K]) Wait(ctx context.Context) error {
	g.mu.Lock()
	if g.pending == 0 {
		err := g.err
		g.mu.Unlock()
		return err
	}
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
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.err
	default:
		return ctx.Err()
	}
}

func (g *Group[K]) fail(err error) {
	g.mu.Lock()
	if g.err == nil {
		g.err = err
	}
	g.mu.Unlock()
}

// finish ends one spawned task with err (nil for success).
func (g *Group[K]) finish(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil && g.err == nil {
		g.err = err
	}
	g.pending--
	if g.pending == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

type groupTask[K comparable] struct {
	g  *Group[K]
	fn func(ctx context.Context) error
}

func (t *groupTask[K]) Run(ctx context.Context) {
	finished := false
	defer func() {
		if finished {
			return
		}
		if r := recover(); r != nil {
			t.g.finish(&PanicError{Value: r, Stack: debug.Stack()})
		} else if tc := taskOf(ctx); tc != nil && tc.dropped {
			t.g.finish(ErrDropped)
		} else {
			t.g.finish(ErrGoexit)
		}
	}()
	err := t.fn(ctx)
	finished = true
	t.g.finish(err)
}

func (t *groupTask[K]) dropped() { t.g.finish(ErrDropped) }
