package smartpool

import (
	"github.com/smartpool-go/smartpool/task"
)

// The errors of submits, channels, handles and settings, defined in package
// task (where each is documented in full) so that channels and the pool
// return the same values. Test them with errors.Is: the pool wraps them in
// errors that name the call, the key or the setting.
var (
	ErrNilTask       = task.ErrNilTask       // a nil task or function, or a Task holding one
	ErrClosed        = task.ErrClosed        // Close started, or the channel's removal did
	ErrNotServed     = task.ErrNotServed     // no pool serves the channel yet
	ErrFull          = task.ErrFull          // no room: a full bounded channel, or the in-flight limit
	ErrUnknownKey    = task.ErrUnknownKey    // a by-key call for a key the pool does not list
	ErrCloseFromTask = task.ErrCloseFromTask // Close from a task or callback the pool waits for: started, not awaited
	ErrNoQueues      = task.ErrNoQueues      // a channel without queues (a zero Bounded, a Keyed without a limit)
	ErrAttached      = task.ErrAttached      // a channel that already belongs to a pool
	ErrOption        = task.ErrOption        // an option the channel cannot honour, or given twice
	ErrNotQueued     = task.ErrNotQueued     // a Handle's task that is no longer queued
	ErrDropped       = task.ErrDropped       // the result of a task the pool dropped
	ErrGoexit        = task.ErrGoexit        // the result of a task that called runtime.Goexit
	ErrNotInTask     = task.ErrNotInTask     // Handoff from a goroutine that runs no task of the pool
	ErrBadSchedule   = task.ErrBadSchedule   // Every with a bad interval or Missed policy
	ErrBadLimit      = task.ErrBadLimit      // a limit or cap out of range (with ErrConfig at New)
)

// ErrConfig is wrapped by every error that refuses a configuration: New's,
// for a PoolBehavior that breaks a rule of Config or ChannelParams, and the
// run-time setters' (SetWorkers, SetCap, SetLimit) for a setting the pool
// was not built with or a value out of range. The message names the value
// and the rule; a limit or cap out of range also wraps ErrBadLimit, and a
// scheduler's refusal scheduler.ErrBadPolicy.
var ErrConfig = task.ErrConfig

// PanicError carries a panic recovered from a task: the value passed to panic
// and the stack of the goroutine at the moment it was recovered.
type PanicError = task.PanicError
