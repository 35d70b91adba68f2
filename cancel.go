package smartpool

import (
	"context"
	"runtime"
	"sync/atomic"
)

// SubmitContext is SubmitTask for work whose submitter may give up. It waits
// for a unit of the in-flight limit (Config.Limit) until ctx ends, then
// queues t; if ctx ends while t is still queued, t never runs: it is counted
// in ChannelStats.Cancelled, its unit is released at once, and the channel
// skips it when it comes up. ctx does not reach t's Run: once t started,
// cancelling ctx does nothing. It returns ErrNilTask, ErrClosed (also to a
// submitter waiting when Close starts, even if ctx ended since),
// ErrUnknownKey, ctx.Err(), or the channel's error. A t the channel refused
// is not counted as cancelled, whenever ctx ends.
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
	e.credited(ch, 1)
	err := e.chans[ch].c.Push(t)
	c, _ := t.(*cancellable)
	switch {
	case err != nil:
		if c != nil {
			c.refused()
		}
		e.queuedUnitsDone(ch, 1)
	case c != nil:
		c.pushed()
	}
	return err
}

// cancellable is a task queued by SubmitContext with a context that can end.
// Exactly one party claims it, by compare-and-swap on state: its Run (the
// task starts), a cancellation, Close or a channel that drops it, or the
// submit whose Push failed. The claimer accounts for it; everyone else
// leaves it alone, so it is counted once and its unit released once. The
// check is in Run, so it works through channels that wrap the tasks they
// queue (channels.Keyed): a Run that lost the claim marks its task context
// skipped, and the worker counts nothing.
//
// A task is pushing until its submit's Push returned. The context's
// AfterFunc cannot claim it then, since Push may yet fail (the submit
// returns the error, and the task was never queued, so it is not
// cancelled); the submit looks at the context once Push succeeded instead.
// Whoever holds the task from the queue (a worker's Run, a drop) knows it
// was queued and may claim it in either state.
type cancellable struct {
	Task
	ctx   context.Context // the submitter's: Run checks it, as the AfterFunc may not have run yet
	e     *engine
	ch    int
	stop  func() bool // unregisters the AfterFunc; set before the task is queued
	state atomic.Int32
}

const (
	pushing int32 = iota
	queued
	claimedStarted
	cancelling // claimed by a cancellation that is counting it
	claimedCancelled
	claimedDropped
	claimedRefused
)

func newCancellable(ctx context.Context, e *engine, ch int, t Task) *cancellable {
	c := &cancellable{Task: t, ctx: ctx, e: e, ch: ch}
	c.stop = context.AfterFunc(ctx, func() { c.cancel(false) })
	return c
}

// claim moves c from queued (or, with fromQueue, from pushing too) to how,
// and reports whether it did. A winner other than a cancellation unregisters
// the AfterFunc (a cancellation needs not: its context is done; and the
// AfterFunc may run before newCancellable has stored stop). A loser waits
// until a cancellation that won has been counted, so that a worker or a
// Close that goes on after losing sees the count: the report Close returns
// is exact. The wait spans a few instructions of the cancelling goroutine.
func (c *cancellable) claim(how int32, fromQueue bool) bool {
	for {
		s := c.state.Load()
		if s != queued && (!fromQueue || s != pushing) {
			break
		}
		if c.state.CompareAndSwap(s, how) { // fails only if the submit moved it from pushing to queued
			if how != cancelling {
				c.stop()
			}
			return true
		}
	}
	for c.state.Load() == cancelling {
		runtime.Gosched()
	}
	return false
}

// pushed is called by the submit once Push queued c: from now on its
// context's end cancels it, and if it ended meanwhile, it cancels it now.
func (c *cancellable) pushed() {
	if c.state.CompareAndSwap(pushing, queued) && c.ctx.Err() != nil {
		c.cancel(false)
	}
}

// refused is called by the submit whose Push failed: c was never queued, so
// nothing else can claim it, and the submit releases its unit.
func (c *cancellable) refused() {
	c.state.Store(claimedRefused)
	c.stop()
}

// Run runs the task unless its submitter cancelled it first. The context is
// checked here too: the AfterFunc runs on a goroutine of its own, which may
// not have been scheduled yet when a worker reaches the task.
func (c *cancellable) Run(ctx context.Context) {
	if c.ctx.Err() == nil && c.claim(claimedStarted, true) {
		c.Task.Run(ctx)
		return
	}
	c.cancel(true) // unless the AfterFunc counted it already
	if tc := taskOf(ctx); tc != nil && tc.e == c.e {
		tc.skipped = true
	}
}

// cancel counts c as cancelled, unless another party claimed it. It runs
// when the submitter's context ends (on the AfterFunc's goroutine), from
// the submit if that came first, or from Run (fromQueue) when the context
// ended before the AfterFunc ran.
func (c *cancellable) cancel(fromQueue bool) {
	if c.claim(cancelling, fromQueue) {
		c.e.chans[c.ch].cancelled.Add(1)
		c.e.unitDone()
		c.state.Store(claimedCancelled)
	}
}
