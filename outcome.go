package smartpool

import "github.com/smartpool-go/smartpool/task"

// Outcome is how a task ended. Every task a pool admitted ends exactly once,
// with one of these, and the channel it came from counts it in its
// ChannelStats and passes it to its ChannelParams.OnEnd.
type Outcome = task.Outcome

// The outcomes.
const (
	// Ran: its Run returned (a task run inline by its spawner too).
	Ran = task.Ran
	// Panicked: its Run panicked; the panic went to Config.PanicHandler,
	// its Future or its Group.
	Panicked = task.Panicked
	// Goexited: its Run called runtime.Goexit.
	Goexited = task.Goexited
	// Cancelled: its submit's context (WithContext) ended, or its
	// Handle.Cancel was called, while it was queued; it never ran.
	Cancelled = task.Cancelled
	// DroppedOnClose: Close dropped it, queued in a channel that does not
	// complete on close, or yielded in one when its wait returned.
	DroppedOnClose = task.DroppedOnClose
	// DroppedLate: a deadline channel dropped it once its deadline passed
	// (channels.DropLate).
	DroppedLate = task.DroppedLate
	// DroppedDisplaced: a full channel dropped it to make room for a newer
	// task (channels.DropOldest).
	DroppedDisplaced = task.DroppedDisplaced
)
