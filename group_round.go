package smartpool

import (
	"context"
	"errors"
	"runtime"
	"sync"

	"github.com/smartpool-go/smartpool/internal/engine"

	"go.uber.org/atomic"
)

// # Rounds
//
// A Group's life is a sequence of rounds, each ended by a Wait that saw no
// task pending. A round owns the context its tasks receive and the errors
// they return; a task keeps the round it was spawned in, so that its
// outcome lands there even if a Go raced with the Wait that ended it. The
// next Go (or Context) starts a new round, unless the last one failed in the
// default, first-error mode: that error, like errgroup's, stays.

// round is one round of a Group.
type round struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	stop    func() bool  // unregisters cancel from the pool's base context
	collect atomic.Bool  // errors are joined and cancel nothing (CollectErrors)
	first   atomic.Error // the first error, in the default mode; set once, by compare-and-swap from nil
	ended   bool         // a Wait ended it; guarded by the group's mu

	mu      sync.Mutex      // guards errs, ctxErr, unread and cleanup
	errs    []error         // every error, with collect
	ctxErr  bool            // the context's error is in errs already
	unread  *engine.Unread  // the round's first failure until a Wait reads it (watch)
	cleanup runtime.Cleanup // logs unread if the group is collected first
}

// newRound returns a round whose context derives from the group's parent
// and ends when the pool's base context does (a Close that gave up, a
// closed pool). Called with mu held, or before the group is shared.
func (g *Group[K]) newRound() *round {
	ctx, cancel := context.WithCancelCause(g.parent)
	base := g.p.e.Base
	r := &round{ctx: ctx, cancel: cancel, stop: context.AfterFunc(base, func() { cancel(context.Cause(base)) })}
	r.collect.Store(g.collect)
	return r
}

// roundLocked returns the round in progress, starting one if the last has
// ended and may be followed. Called with mu held.
func (g *Group[K]) roundLocked() *round {
	if r := g.r; r.ended && (r.collect.Load() || r.first.Load() == nil) {
		g.r = g.newRound()
	}
	return g.r
}

// current returns the round in progress (see roundLocked).
func (g *Group[K]) current() *round {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.roundLocked()
}

// Context returns the context the group's tasks receive (without the
// pool's task handle each run adds): errgroup.WithContext's second result.
// It derives from the context given to NewGroup and is cancelled as Group
// describes: by the first error (in the default mode), by the parent, and by
// the Wait that ends the round. After such a Wait it returns the next
// round's context, the one the next Go's task will receive (see Group's
// Reuse), or the failed round's, cancelled with its error as cause.
func (g *Group[K]) Context() context.Context { return g.current().ctx }

// CollectErrors makes the group keep going after an error, as conc's pools
// do by default: no error cancels the group's context or its tasks, and
// Wait returns every error of the round joined with errors.Join, in the
// order they happened (errors.Is and errors.As find each), or nil. Every
// panic is then one of them, as *PanicError, so none goes to the panic
// handler. The context's own error (tasks skipped or Go refused because the
// context given to NewGroup ended) is counted once. The default, errgroup's
// first error that cancels the rest, stays for groups that do not call it.
// It applies from the next round; call it before the first Go.
func (g *Group[K]) CollectErrors() {
	g.mu.Lock()
	g.collect = true
	if g.pending == 0 && g.r.first.Load() == nil {
		g.r.collect.Store(true) // no task in flight and no error: the round may switch
	}
	g.mu.Unlock()
}

// fail records err in r: with collect, it adds it to the round's errors;
// otherwise it keeps it if it is the first and then cancels r's context
// with it. It reports whether err was recorded.
func (g *Group[K]) fail(r *round, err error) bool {
	switch {
	case err == nil:
		return false
	case r.collect.Load():
		r.mu.Lock()
		r.errs = append(r.errs, err)
		r.mu.Unlock()
		return true
	case !r.first.CompareAndSwap(nil, err):
		return false
	}
	r.cancel(err)
	return true
}

// failed records err, the failure (error, panic or Goexit) of task fn of
// channel ch, or its refused submit (ch negative if no channel was found),
// in r, and follows the round's first
// such failure until a Wait reads it (internal/engine/unread.go), so that
// a forgotten Wait does not lose it. Drops and cancellations are not
// followed: the pool counts and logs those itself.
func (g *Group[K]) failed(r *round, ch int, fn any, err error) {
	if !g.fail(r, err) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unread == nil {
		r.unread = g.p.e.Unread(ch, fn, err)
		r.cleanup = runtime.AddCleanup(g, (*engine.Unread).Collected, r.unread)
	}
}

// read marks r's failure read by a Wait.
func (r *round) read() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unread.Read() {
		r.cleanup.Stop()
	}
}

// failContext records err, the error of r's context that refused or
// skipped a task: with collect, only once per round.
func (g *Group[K]) failContext(r *round, err error) {
	if r.collect.Load() {
		r.mu.Lock()
		seen := r.ctxErr
		r.ctxErr = true
		r.mu.Unlock()
		if seen {
			return
		}
	}
	g.fail(r, err)
}

// result is what Wait returns for r.
func (r *round) result() error {
	if !r.collect.Load() {
		return r.first.Load()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) == 1 {
		return r.errs[0] // as is: Wait returns exactly what the task returned
	}
	return errors.Join(r.errs...)
}
