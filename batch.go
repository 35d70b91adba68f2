package smartpool

// BatchPoller is implemented by channels that can give a worker several
// tasks of one queue under one lock hold. A worker whose run buffer is empty
// calls PollBatch instead of Poll (see "Batch polls" in buffer.go); it keeps
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
	PollBatch(queue int, ts []Task, keys []Order, share int) int
}
