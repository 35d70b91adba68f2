package task

import "fmt"

// Outcome is how a task ended. Every task a pool admitted ends exactly once,
// with one of these, and the channel it came from counts it in its stats and
// passes it to its OnEnd.
type Outcome uint8

// The outcomes.
const (
	// Ran: its Run returned (a task run inline by its spawner too).
	Ran Outcome = iota + 1
	// Panicked: its Run panicked; the panic went to the pool's panic
	// handler, and to its Future or its Group if it has one.
	Panicked
	// Goexited: its Run called runtime.Goexit.
	Goexited
	// Cancelled: its submit's context (WithContext) ended, or its
	// Handle.Cancel was called, while it was queued; it never ran.
	Cancelled
	// DroppedOnClose: Close dropped it, queued in a channel that does not
	// complete on close, or yielded in one when its wait returned.
	DroppedOnClose
	// DroppedLate: a deadline channel dropped it once its deadline passed
	// (channels.DropLate).
	DroppedLate
	// DroppedDisplaced: a full channel dropped it to make room for a newer
	// task (channels.DropOldest).
	DroppedDisplaced
)

// Dropped reports whether o is one of the drops: the task never ran to its
// end and its Future or Group resolved with ErrDropped.
func (o Outcome) Dropped() bool { return o >= DroppedOnClose && o <= DroppedDisplaced }

// String returns the outcome in words, as logs and stats print it.
func (o Outcome) String() string {
	switch o {
	case Ran:
		return "ran"
	case Panicked:
		return "panicked"
	case Goexited:
		return "goexited"
	case Cancelled:
		return "cancelled"
	case DroppedOnClose:
		return "dropped on close"
	case DroppedLate:
		return "dropped late"
	case DroppedDisplaced:
		return "dropped displaced"
	}
	return "Outcome(?)"
}

// PanicError carries a panic recovered from a task: the value passed to panic
// and the stack of the goroutine at the moment it was recovered.
type PanicError struct {
	Value any
	Stack []byte
}

// Error describes the panic value.
func (p *PanicError) Error() string { return fmt.Sprintf("smartpool: task panicked: %v", p.Value) }

// Unwrap returns the panic value when it is an error, so errors.Is and
// errors.As see through the panic.
func (p *PanicError) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}
