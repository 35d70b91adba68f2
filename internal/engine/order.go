package engine

import "github.com/smartpool-go/smartpool/task"

// # A yielded task keeps its place
//
// A task that yields re-enters through its followup channel (Yield). A
// channel that orders by a key (channels.Priority, channels.Deadline) would
// otherwise queue the re-entry with its default key, so a task of priority
// 100 would come back at 0. So the pool carries the key the task was first
// ordered by: such a channel implements OrderedPoller, and the worker that
// polls it keeps the key of the task it takes (worker.order, touched only by
// the goroutine carrying the worker). When the task first yields it is still
// running on that worker, so suspend copies the key into its context, where
// it stays until the task ends. Its resumption carries it, and the followup
// channel's Requeue reads it back with Bits.OrderOf and keeps it when it
// orders by the same kind of key.

// OrderOf is source.Bits.OrderOf, whose documentation is the channel author's.
func (Bits) OrderOf(t task.Task) (task.Order, bool) {
	r, ok := t.(*resumption)
	if !ok {
		return task.Order{}, false
	}
	o := (*taskContext)(r).order
	return o, o.HasPriority || o.HasDeadline
}

// poll polls queue q, keeping the task's key if the channel has one.
func (w *Worker) poll(q *queueRef) task.Task {
	if q.ordered == nil {
		return q.c.Poll(q.local)
	}
	t, o := q.ordered.PollOrder(q.local)
	w.order = o
	return t
}
