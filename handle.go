package smartpool

import (
	"time"

	"github.com/smartpool-go/smartpool/internal/engine"
)

// WithHandle asks the submit to fill h, once it queued the task, with a
// handle on it: the submitter can then cancel the task while it waits, or
// move it in its queue (see Handle). A submit that fails, or whose task ran
// at once in its submitter's place (see WithContext), leaves h as it was:
// give each submit its own zero Handle. The submit writes h before it
// returns; do not use h meanwhile.
//
// Every submit takes it: Pool.Submit, Pool.SubmitTask, Go, Group.Go,
// Group.TryGo, Pool.Handoff, Pool.HandoffTask and the channels' own submit
// methods. Without a WithContext it changes nothing else: the submit does
// not wait, and returns ErrFull at the in-flight limit or in a full
// channel. It costs one allocation, the wrapper a WithContext task gets (a
// Group's tasks have it already); a submit without it pays nothing.
//
// In a Group, Cancel ends the task as if its function had returned
// context.Canceled without running, errgroup's rule for any error: in the
// default mode it is the group's first error unless another came before, so
// it cancels the group's context (the group's other queued tasks are
// skipped, running ones see their context end) and Wait returns it; with
// CollectErrors it is one of Wait's errors and cancels nothing. Its place
// under the group's SetLimit is free at once. A Group.Go that runs the task
// itself, in its caller's place (see Group), leaves h as it was.
//
// A Handoff's Cancel ends its chain there: the unit of the in-flight limit
// the continuation took over is released at once, as any cancelled task's.
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

// Cancel ends the task as Cancelled if it has not started, and reports
// whether it did. The task is then handled as one whose WithContext context
// ended while it was queued: it never runs, it is counted in
// ChannelStats.Cancelled, its unit of Config.Limit is released at once,
// its Future or Group resolves with context.Canceled, and the channel's
// ChannelParams.OnEnd receives it with Cancelled. Exactly one of the task's
// start, its cancellation (by its context or a Cancel) and its drop
// happens: Cancel reports false if the task started, ended, was dropped or
// was cancelled already, and then changes nothing.
//
// The cancelled task stays in its queue until a worker reaches it and
// skips it, as a cancelled WithContext task does (Len counts it till then).
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
