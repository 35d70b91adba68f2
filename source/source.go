package source

import (
	"github.com/smartpool-go/smartpool/internal/engine"
	"github.com/smartpool-go/smartpool/task"
)

// Source is the side of a channel the pool talks to: everything a channel
// author implements beyond the channel's own submit methods. The package
// documentation is its contract: when each method is called, the bit rule,
// admission, the in-flight limit, drops, held tasks, timing and Close.
// No method may block for long: they run on workers and submitters.
type Source interface {
	Queues() int
	Attach(b Bits) error
	Push(t task.Task, o task.Order) error
	Requeue(t task.Task) error
	Poll(queue int) task.Task
	Close(drop bool) []task.Task
}

// Reorderer is implemented by a Source that can move a queued task to a new
// key in place (channels.Priority, channels.Deadline, and channels.Multi by
// its shards'), for Handle's Reprioritize and SetDeadline.
//
// PushIndexed is Push, with the same contract, for a task submitted with
// WithHandle: the Source also keeps an index from t to its entry, so that
// Reorder finds it without a search, until t leaves the queue (Poll, Close,
// Discard) and the entry is forgotten. Only such tasks are indexed, so the
// tasks queued by Push cost nothing more. The pool calls it with tasks that
// are pointers, comparable with ==.
//
// Reorder gives the queued task t the key o, with the channel's lock held,
// and moves it to the place that key gives (among tasks of equal key, it
// keeps its place of submission). It returns Unordered(o) for a key the
// channel does not order by, before anything else, as Push does; then
// ErrNotQueued if t is not an indexed task the Source still holds (nil
// included: the pool asks so when the task has started, to learn only
// whether o's key is the channel's); nil once t is moved. It must not block
// for long; it calls no Bits method, as the queue goes neither empty nor
// non-empty.
type Reorderer interface {
	PushIndexed(t task.Task, o task.Order) error
	Reorder(t task.Task, o task.Order) error
}

// OrderedPoller is implemented by channels that order their tasks by a key,
// so that a task that yields keeps its place when it re-enters: the pool
// calls PollOrder instead of Poll, and hands the Order back to the followup
// channel's Requeue (see Bits.OrderOf). PollOrder is Poll that also returns
// the key the task was queued with.
type OrderedPoller interface {
	PollOrder(queue int) (task.Task, task.Order)
}

// BatchPoller is implemented by channels that can give a worker several
// tasks of one queue under one lock hold. A worker whose run buffer is empty
// calls PollBatch instead of Poll; it keeps
// the tasks in its buffer and runs them one by one, looking before each one
// whether a higher level has work, and idle workers steal from the buffer
// before they park. A task in a buffer is still queued: Stats counts it in
// Queued, Close drops it unless its channel completes on close, and
// WithContext can cancel it.
//
// The pool polls in batches only the channels of its lowest level, whose
// buffered tasks no lower level's can overtake, and not a capped one
// (ChannelParams.MaxRunning, MaxInFlight), nor under a scheduler of the
// user's (Config.Schedule), whose picks are per task. A channel that orders
// by a key (a priority, a deadline) should not implement BatchPoller: a task
// queued after a batch was taken would wait behind the batch however it is
// ordered.
type BatchPoller interface {
	// PollBatch removes tasks from queue, the ones successive Polls would
	// return and in that order, into ts, and returns how many: at most
	// len(ts), and at most ⌈n/share⌉ of the n tasks the queue holds (share
	// is at least 1: the pool's worker count), so that workers polling in
	// turn each get some; 0 when the queue is empty. If keys is not nil,
	// the channel is an OrderedPoller and keys has the length of ts:
	// PollBatch stores each task's key at the task's index, as PollOrder
	// returns it. PollBatch keeps the bit rule as Poll does.
	PollBatch(queue int, ts []task.Task, keys []task.Order, share int) int
}

// Option is a submit option (smartpool.Option: WithContext, WithDeadline,
// WithPriority, WithHandle), which a channel's own submit methods take and
// pass to Bits.Submit. It is opaque.
type Option = engine.Option

// Unordered returns the error a channel's Push or Reorder returns for an
// Order with a key the channel does not order by (wrapping
// task.ErrOption), or nil for the zero Order: Push calls it first, before
// anything else.
func Unordered(o task.Order) error { return engine.Unordered(o) }
