package smartpool

// # In-flight limit on work units
//
// Config.Limit caps the work units admitted and not finished, pool-wide: a
// task takes a unit when it enters a channel (Submit, SubmitContext, a
// channel's own submit method through Bits.Admit) and keeps it while it is
// queued, runs, yields and re-enters, until it ends (ran, panicked, called
// runtime.Goexit, was dropped or cancelled). Handoff passes the calling
// task's unit to the task it submits, so that a pipeline A -> B never needs
// a second unit to finish the first: seed 003's cure for the deadlock of a
// task that holds a slot while it waits for one.
//
// held is changed only by compare-and-swap below limit (admit) and by
// release; a lowered limit revokes nothing: admissions stop until held drops
// below it. Waiters (SubmitContext, Bits.AdmitWait) park on free, a channel
// that release closes and replaces when someone waits: a waiter registers
// (waiters+1), takes free, then tries again, so a release that it missed
// happened after its registration and sees waiters > 0. Pools without a
// limit never touch these fields.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ErrNotLimited is returned by SetLimit for a pool created without
// Config.Limit: such a pool keeps no count, so that it pays nothing for the
// feature.
var ErrNotLimited = errors.New("smartpool: pool has no in-flight limit")

// ErrNotInTask is returned by Handoff when its context is not the context of
// a task of this pool.
var ErrNotInTask = errors.New("smartpool: not called from a task of this pool")

type admission struct {
	on      bool // Config.Limit > 0; read-only after New
	limit   atomic.Int64
	held    atomic.Int64 // units admitted and not released
	waiters atomic.Int32 // goroutines blocked in admitWait
	mu      sync.Mutex
	free    chan struct{} // closed when units free up while someone waits; guarded by mu
}

// tryAdmit takes k units if that many are free.
func (a *admission) tryAdmit(k int64) bool {
	for {
		n := a.held.Load()
		if n+k > a.limit.Load() {
			return false
		}
		if a.held.CompareAndSwap(n, n+k) {
			return true
		}
	}
}

// release gives back n units and wakes the waiters, if any.
func (a *admission) release(n int64) {
	a.held.Add(-n)
	if a.waiters.Load() > 0 {
		a.broadcast()
	}
}

func (a *admission) broadcast() {
	a.mu.Lock()
	if a.free != nil {
		close(a.free)
		a.free = nil
	}
	a.mu.Unlock()
}

// admitWait takes a unit, waiting until one frees, ctx ends (ctx.Err()) or
// the pool stops admission (ErrClosed).
func (e *engine) admitWait(ctx context.Context) error {
	a := &e.admit
	for {
		if e.stopped.Load() {
			return ErrClosed
		}
		if a.tryAdmit(1) {
			return nil
		}
		a.waiters.Add(1)
		a.mu.Lock()
		if a.free == nil {
			a.free = make(chan struct{})
		}
		free := a.free
		a.mu.Unlock()
		// Look again now that a release or a Close will close free: one that
		// came before registering closed an older channel, or none.
		if e.stopped.Load() {
			a.waiters.Add(-1)
			return ErrClosed
		}
		if a.tryAdmit(1) {
			a.waiters.Add(-1)
			return nil
		}
		var err error
		select {
		case <-free:
		case <-ctx.Done():
			err = ctx.Err()
		}
		a.waiters.Add(-1)
		if err != nil {
			return err
		}
	}
}

// admitNow takes k units without waiting: ErrFull if fewer are free.
func (e *engine) admitNow(k int) error {
	if e.admit.on && !e.admit.tryAdmit(int64(k)) {
		return ErrFull
	}
	return nil
}

// unitDone releases the unit of a task that ended or was never queued.
func (e *engine) unitDone() { e.unitsDone(1) }

func (e *engine) unitsDone(k int) {
	if e.admit.on && k > 0 {
		e.admit.release(int64(k))
	}
}

// SetLimit changes the pool's in-flight limit (Config.Limit) at run time.
// A raised limit admits waiting submitters at once; a lowered one revokes
// nothing: admissions stop until enough admitted tasks finish. n must be at
// least 1. It returns ErrNotLimited for a pool created without a limit, or
// ErrBadLimit.
func (p *Pool[K]) SetLimit(n int) error {
	a := &p.e.admit
	switch {
	case !a.on:
		return ErrNotLimited
	case n < 1:
		return ErrBadLimit
	}
	a.limit.Store(int64(n))
	a.broadcast()
	return nil
}

// SubmitContext is SubmitTask for work whose submitter may give up. It waits
// for a unit of the in-flight limit (Config.Limit) until ctx ends, then
// queues t; if ctx ends while t is still queued, t never runs: it is counted
// in ChannelStats.Cancelled, its unit is released at once, and the channel
// skips it when it comes up. ctx does not reach t's Run: once t started,
// cancelling ctx does nothing. It returns ErrNilTask, ErrClosed (also to a
// submitter waiting when Close starts), ErrUnknownKey, ctx.Err(), or the
// channel's error.
//
// Queuing costs one allocation more than SubmitTask when ctx can be
// cancelled.
func (p *Pool[K]) SubmitContext(ctx context.Context, key K, t Task) error {
	if t == nil {
		return ErrNilTask
	}
	e := p.e
	if e.stopped.Load() {
		return ErrClosed
	}
	ch, ok := p.index[key]
	if !ok {
		return ErrUnknownKey
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if e.admit.on {
		if err := e.admitWait(ctx); err != nil {
			return err
		}
	}
	if ctx.Done() != nil {
		t = newCancellable(ctx, e, ch, t)
	}
	err := e.chans[ch].c.Push(t)
	if err != nil {
		if c, ok := t.(*cancellable); ok && !c.claim(claimedRefused) {
			return err // cancelled meanwhile: its unit is already back
		}
		e.unitDone()
	}
	return err
}

// Handoff submits t to the channel named key as the continuation of the task
// that runs with ctx: t takes over that task's unit of the in-flight limit
// instead of waiting for one, so a chain of tasks (fetch, then parse, then
// store) holds one unit from its start to its end and a full pool can always
// finish what it admitted. The calling task should end soon after: it no
// longer holds a unit. A second Handoff from the same task needs a free unit
// (ErrFull if there is none); in a pool without a limit there are no units
// to pass on.
//
// Once Close started, Handoff still queues t if the calling task holds a
// worker (it is not inside a Yield's wait): it continues work the pool
// admitted, so a complete-on-close pipeline drains to its end; into a
// channel that does not complete on close, t is then dropped and reported.
// Errors, in this order: ErrNotInTask if ctx is not a task context of this
// pool, ErrNilTask, ErrUnknownKey, ErrFull, then the channel's (ErrClosed
// during Close only from inside a Yield's wait or from a dropped channel).
// Call it from the task's own goroutine.
func (p *Pool[K]) Handoff(ctx context.Context, key K, t Task) error {
	e := p.e
	tc := taskOf(ctx)
	switch {
	case tc == nil || tc.e != e:
		return ErrNotInTask
	case t == nil:
		return ErrNilTask
	}
	ch, ok := p.index[key]
	if !ok {
		return ErrUnknownKey
	}
	transfer := e.admit.on && !tc.handedOff
	if !transfer {
		if err := e.admitNow(1); err != nil {
			return err
		}
	}
	c := e.chans[ch].c
	err := c.Push(t)
	if errors.Is(err, ErrClosed) && tc.w != nil {
		// Draining: the work goes on, like a yielded task's re-entry. The
		// calling task holds a worker, which looks for work again when the
		// task ends, so t cannot be stranded by workers exiting.
		err = c.Requeue(t)
	}
	switch {
	case err != nil && !transfer:
		e.unitDone()
	case err == nil && transfer:
		tc.handedOff = true
	}
	return err
}

// Admit takes n units of the pool's in-flight limit, all or none, for tasks
// about to be queued by one of the channel's own submit methods (Push and
// Requeue get tasks the pool admitted). It returns ErrFull when fewer are
// free, and nil at once if the pool has no limit or b belongs to no pool. A
// channel that then does not queue a task after all calls Refund.
func (b Bits) Admit(n int) error {
	if b.e == nil {
		return nil
	}
	return b.e.admitNow(n)
}

// AdmitWait is Admit for blocking submit methods: it waits for a unit until
// ctx ends (returning ctx.Err()) or the pool's Close starts (ErrClosed).
func (b Bits) AdmitWait(ctx context.Context) error {
	if b.e == nil || !b.e.admit.on {
		return nil
	}
	return b.e.admitWait(ctx)
}

// Refund gives back n units that Admit or AdmitWait took (or that the pool
// took for Push) for tasks the channel did not queue after all, such as a
// task it ran on the caller's goroutine instead.
func (b Bits) Refund(n int) {
	if b.e != nil {
		b.e.unitsDone(n)
	}
}

// Discard is called by a channel that throws away a queued task the pool
// never ran (a late deadline, a displaced oldest task): the pool releases
// the task's unit. It returns the task to hand to the user's drop callback,
// or false if there is none (the task was cancelled by its submitter and
// already reported).
func (b Bits) Discard(t Task) (Task, bool) {
	if b.e == nil {
		return t, true
	}
	return b.e.discard(t)
}
