package smartpool

import (
	"context"
	"sync/atomic"
)

// cancellable is a task queued by SubmitContext with a context that can end.
// Exactly one party claims it, by compare-and-swap on state: its Run (the
// task starts), the context's AfterFunc (cancelled), Close or a channel that
// drops it, or the submit whose Push failed. The claimer accounts for it;
// everyone else leaves it alone, so it is counted once and its unit released
// once. The check is in Run, so it works through channels that wrap the
// tasks they queue (channels.Keyed): a Run that lost the claim marks its
// task context skipped, and the worker counts nothing.
type cancellable struct {
	Task
	e     *engine
	ch    int
	stop  func() bool // unregisters the AfterFunc; set before the task is queued
	state atomic.Int32
}

const (
	queued int32 = iota
	claimedStarted
	claimedCancelled
	claimedDropped
	claimedRefused
)

func newCancellable(ctx context.Context, e *engine, ch int, t Task) *cancellable {
	c := &cancellable{Task: t, e: e, ch: ch}
	c.stop = context.AfterFunc(ctx, c.cancelled)
	return c
}

// claim moves c from queued to how, and reports whether it did. The winner
// also unregisters the AfterFunc, so a queued task does not keep its
// submitter's context reachable once it left the queue.
func (c *cancellable) claim(how int32) bool {
	if !c.state.CompareAndSwap(queued, how) {
		return false
	}
	if how != claimedCancelled {
		c.stop()
	}
	return true
}

// Run runs the task unless its submitter cancelled it first.
func (c *cancellable) Run(ctx context.Context) {
	if c.claim(claimedStarted) {
		c.Task.Run(ctx)
		return
	}
	if tc := taskOf(ctx); tc != nil && tc.e == c.e {
		tc.skipped = true
	}
}

// cancelled runs when the submitter's context ends.
func (c *cancellable) cancelled() {
	if c.claim(claimedCancelled) {
		c.e.chans[c.ch].cancelled.Add(1)
		c.e.unitDone()
	}
}
