package smartpool

import (
	"time"

	"github.com/smartpool-go/smartpool/internal/engine"
)

// WithHandle asks the submit to fill h, once it queued the task, with a
// handle on it, to cancel or move the task while it waits (see Handle).
// Every submit takes it. A submit that fails, or whose task ran at once in
// its submitter's place, leaves h as it was: give each submit its own zero
// Handle, and do not use it before the submit returned. It costs one
// allocation; a submit without it pays nothing.
//
// A Group task's Cancel ends it as if it returned context.Canceled without
// running (errgroup's rule for any error: see Group), and frees its place
// under SetLimit. A Handoff's Cancel ends its chain there, releasing the
// unit the continuation took over.
func WithHandle(h *Handle) Option {
	if h == nil {
		return Option{}
	}
	return engine.HandleOption(&h.h)
}

// Handle is a submitter's hold on a queued task, filled by a submit given
// WithHandle. Its methods act only while the task waits in its queue: once a
// worker took it (it started), or it was cancelled or dropped, Cancel
// reports false and the others return ErrNotQueued. The zero Handle holds
// no task and answers the same.
//
// A Handle is a small value; copies act on the same task. Its methods are
// safe for concurrent use, with each other and with the pool's workers.
type Handle struct{ h engine.Handle }

// Cancel ends the task as Cancelled if it has not started, as if its
// WithContext context had ended while it was queued (counted, its unit
// released, its Future or Group resolved with context.Canceled, OnEnd
// called), and reports whether it did: exactly one of the task's start,
// cancellation and drop happens. The task stays in its queue, counted in
// Len, until a worker reaches it and skips it.
func (h *Handle) Cancel() bool { return h != nil && h.h.Cancel() }

// Reprioritize gives the queued task priority p in its channels.Priority:
// it moves in the queue, under the channel's lock, to where a task
// submitted with priority p would be, keeping its place of submission among
// tasks of priority p. It returns an error wrapping ErrOption, which names
// the channel as a submit's does (smartpool: channel "jobs": ...), if the
// task's channel does not reorder by priority (a FIFO, a Deadline, a
// channels.Keyed, which has no order key, a channels.Multi of shards that
// do not; a Multi of Priority shards moves the task in its shard), then
// ErrNotQueued if the task is no longer queued (started, cancelled,
// dropped); a task already running is not affected.
func (h *Handle) Reprioritize(p int) error {
	if h == nil {
		return ErrNotQueued
	}
	return h.h.Reorder(Order{Priority: p, HasPriority: true})
}

// SetDeadline gives the queued task deadline t in its channels.Deadline:
// it moves in the queue to where a task submitted with deadline t would be,
// and from then on it is a task with a deadline of its own (channels.DropLate
// may drop it once t passed). Its errors are Reprioritize's, for a channel
// that does not reorder by deadline.
func (h *Handle) SetDeadline(t time.Time) error {
	if h == nil {
		return ErrNotQueued
	}
	return h.h.Reorder(Order{Deadline: t, HasDeadline: true})
}
