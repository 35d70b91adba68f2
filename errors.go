package smartpool

import (
	"github.com/smartpool-go/smartpool/task"
)

// Errors returned by Submit and by channels. Test them with errors.Is.
var (
	// ErrNilTask is returned when a nil task or function is submitted, or a
	// Task that holds a nil function or pointer (Func(nil)).
	ErrNilTask = task.ErrNilTask
	// ErrClosed is returned for work submitted after Close started, and by a
	// channel's own submit methods whenever no running pool serves the
	// channel: before New attached it, after its New failed, or when it is
	// listed in no pool at all.
	ErrClosed = task.ErrClosed
	// ErrFull is returned by a non-blocking submit to a bounded channel
	// that has no room, or to a pool whose in-flight limit (Config.Limit)
	// is reached.
	ErrFull = task.ErrFull
	// ErrUnknownKey is returned by Pool.Submit for a key the configuration
	// does not list; the error returned names the key and wraps it.
	ErrUnknownKey = task.ErrUnknownKey
	// ErrCloseFromTask is returned by OwnedPool.Close when it is called from
	// one of the pool's own tasks (whatever context it passes) or from a
	// callback the pool waits for (OnEnd, the panic handler): the close is
	// started but cannot wait for its caller. Await the close from another
	// goroutine (Close or Done).
	ErrCloseFromTask = task.ErrCloseFromTask
	// ErrNoQueues is returned by a channel that has no queues, such as a
	// zero channels.Bounded or a channels.Keyed without a limit: New refuses
	// it (wrapped in ErrConfig) and its submit methods return it.
	ErrNoQueues = task.ErrNoQueues
	// ErrAttached is returned by a channel's Attach when the channel already
	// belongs to a pool; New wraps it in ErrConfig. A channel written
	// outside this module returns it too (see package source).
	ErrAttached = task.ErrAttached
)

// ErrConfig is wrapped by every error that refuses a configuration: New's,
// for a PoolBehavior that breaks a rule of Config or ChannelParams, and the
// run-time setters' (SetWorkers, SetCap, SetLimit) for a setting the pool
// was not built with or a value out of range. The message names the value
// and the rule. A negative or zero limit or cap also wraps ErrBadLimit, and
// the scheduler's own rules scheduler.ErrBadPolicy.
var ErrConfig = task.ErrConfig

// ErrBadLimit is wrapped by the errors that refuse a limit or cap out of
// range: SetLimit and SetCap below 0, New's for a negative Limit, MaxRunning
// or MaxInFlight (beside ErrConfig), and channels.Keyed's for a group limit
// below 1.
var ErrBadLimit = task.ErrBadLimit

// PanicError carries a panic recovered from a task: the value passed to panic
// and the stack of the goroutine at the moment it was recovered.
type PanicError = task.PanicError
