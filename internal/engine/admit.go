package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/smartpool-go/smartpool/internal/gid"
	"github.com/smartpool-go/smartpool/task"
)

// # In-flight limit on work units
//
// Config.Limit caps the work units admitted and not finished, pool-wide: a
// task takes a unit when it enters a channel (Submit, WithContext, a
// channel's own submit method through Bits.Admit) and keeps it while it is
// queued, runs, yields and re-enters, until it ends (ran, panicked, called
// runtime.Goexit, was dropped or cancelled). Handoff passes the calling
// task's unit to the task it submits, so that a pipeline A -> B never needs
// a second unit to finish the first. That rules out the deadlock of a task
// that holds a slot while it waits for one (Paul Khuong's critique of
// generic pools).
//
// held is changed only by compare-and-swap below limit (admit) and by
// release; a lowered limit revokes nothing: admissions stop until held drops
// below it. Waiters (WithContext, Bits.AdmitWait) park on free, a channel
// that release closes and replaces when someone waits: a waiter registers
// (waiters+1), takes free, then tries again, so a release that it missed
// happened after its registration and sees waiters > 0. Pools without a
// limit never touch these fields.

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

// awaitStart returns nil once the pool has started and admits, waiting for
// New to finish if need be: a goroutine a channel starts in Attach waits
// for its first unit instead of being refused. It returns ErrClosed if New
// failed or Close started, or ctx.Err(); and an error wrapping ErrConfig,
// at once, if called by New's own goroutine (from Attach), which would wait
// for itself.
func (e *Engine) awaitStart(ctx context.Context) error {
	select {
	case <-e.started:
	default:
		if gid.Current() == e.attacher {
			return ConfigErr(errAdmitInAttach, "Bits.AdmitWait called from Attach would wait for New, which waits for Attach: call it from the goroutines Attach starts")
		}
	}
	select {
	case <-e.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	if e.stopped.Load() { // New failed (the pool never started), or Close began
		return task.ErrClosed
	}
	return nil
}

// admitWait takes a unit, waiting until one frees, ctx ends (ctx.Err()) or
// the pool stops admission (ErrClosed).
func (e *Engine) admitWait(ctx context.Context) error {
	a := &e.admit
	for {
		if e.stopped.Load() {
			if err := e.awaitStart(ctx); err != nil {
				return err
			}
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
			return task.ErrClosed
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
		if e.stopped.Load() {
			return task.ErrClosed // Close released every waiter; its ctx may have ended since
		}
		if err != nil {
			return err
		}
	}
}

// admitNow takes k units without waiting: errLimitFull if fewer are free.
func (e *Engine) admitNow(k int) error {
	if e.admit.on && !e.admit.tryAdmit(int64(k)) {
		return errLimitFull
	}
	return nil
}

// errLimitFull is ErrFull from the in-flight limit: it says which limit,
// and how to wait for a unit instead. It is built once, so a producer that
// retries on it allocates nothing.
var errLimitFull = fmt.Errorf("%w: the pool's in-flight limit (Config.Limit) is reached; submit WithContext(ctx) to wait for a unit", task.ErrFull)

// unitDone releases the unit of a task that ended or was never queued.
func (e *Engine) unitDone() { e.unitsDone(1) }

func (e *Engine) unitsDone(k int) {
	if e.admit.on && k > 0 {
		e.admit.release(int64(k))
	}
}

// Admit is source.Bits.Admit, whose documentation is the channel author's.
func (b Bits) Admit(n int) error {
	if b.e == nil || !b.e.admit.on {
		return nil
	}
	if err := b.e.admitNow(n); err != nil {
		return err
	}
	b.e.credited(b.e.channelOf(b), n)
	return nil
}

// AdmitWait is source.Bits.AdmitWait, whose documentation is the channel author's.
func (b Bits) AdmitWait(ctx context.Context) error {
	if b.e == nil {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if !b.e.admit.on {
		if b.e.stopped.Load() { // not started yet, New failed, or Close began
			return b.e.awaitStart(ctx)
		}
		return nil
	}
	if err := b.e.admitWait(ctx); err != nil {
		return err
	}
	b.e.credited(b.e.channelOf(b), 1)
	return nil
}

// Refund is source.Bits.Refund, whose documentation is the channel author's.
func (b Bits) Refund(n int) {
	if b.e != nil {
		b.e.queuedUnitsDone(b.e.channelOf(b), n)
	}
}

// Discard is source.Bits.Discard, whose documentation is the channel author's.
func (b Bits) Discard(t task.Task, why task.Outcome) bool {
	if b.e == nil {
		return true
	}
	if !why.Dropped() {
		why = task.DroppedOnClose
	}
	ch := b.e.channelOf(b)
	if ch < 0 { // a slice of no queues, or a standalone engine: no channel to count in
		_, ok := b.e.discard(-1, t)
		return ok
	}
	// Outside Poll, on the submitter, within the channel's Hold; inside
	// Poll, maybe on a submitter searching on an idle worker's behalf
	// (handOver), which holds that worker meanwhile: either way a Close
	// from the task's OnEnd must not wait for this goroutine.
	defer b.e.leaveCallbacks(b.e.enterCallbacks(ch))
	return b.e.dropQueued(ch, t, why, causeOf(why))
}

// SetLimit is Pool.SetLimit.
func (e *Engine) SetLimit(n int) error {
	a := &e.admit
	switch {
	case !a.on:
		return ConfigErr(ErrNotConfigured, "SetLimit(%d): the pool has no in-flight limit: set Config.Limit at New", n)
	case n < 0:
		return ConfigErr(task.ErrBadLimit, "SetLimit(%d): a limit must be at least 0", n)
	case e.stopped.Load():
		return poolClosed(fmt.Sprintf("SetLimit(%d)", n))
	}
	a.limit.Store(int64(n))
	a.broadcast()
	return nil
}
