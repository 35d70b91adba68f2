package task

import "errors"

// The errors of submits, channels and task handles. Test them with
// errors.Is: the pool wraps them in errors that say which call, key or
// setting.
var (
	// ErrNilTask is returned when a nil task or function is submitted, or a
	// Task that holds a nil function or pointer (Func(nil)).
	ErrNilTask = errors.New("smartpool: nil task")
	// ErrClosed is returned for work submitted after Close started, and by a
	// channel's own submit methods once its pool's Close started or its
	// removal (Pool.RemoveChannel) did.
	ErrClosed = errors.New("smartpool: closed")
	// ErrNotServed is returned by a channel's own submit methods while no
	// pool serves the channel yet: a channel no New has attached (a new or
	// zero channel, or one whose New failed), or one Pool.AddChannel is
	// still adding. Pass the channel to New first, and submit once New
	// returned.
	ErrNotServed = errors.New("smartpool: channel not served by any pool yet (pass it to New, or Pool.AddChannel, before submitting)")
	// ErrFull is returned by a non-blocking submit to a bounded channel
	// that has no room, or to a pool whose in-flight limit is reached.
	ErrFull = errors.New("smartpool: full")
	// ErrUnknownKey is returned by a by-key call (Pool.Submit) for a key
	// the pool's configuration does not list; the error returned names the
	// key and wraps it.
	ErrUnknownKey = errors.New("smartpool: unknown channel key")
	// ErrNoQueues is returned by a channel that has no queues, such as a
	// zero channels.Bounded or a channels.Keyed without a limit: New refuses
	// it (wrapped in ErrConfig) and its submit methods return it.
	ErrNoQueues = errors.New("smartpool: channel has no queues")
	// ErrAttached is returned by a channel's Attach when the channel already
	// belongs to a pool; New wraps it in ErrConfig.
	ErrAttached = errors.New("smartpool: channel already attached to a pool")
	// ErrOption is wrapped by the error of a submit given an option its
	// channel cannot honour: a deadline for a channel that does not order by
	// deadline, a priority for one that does not order by priority, or the
	// same option twice. The message names the channel and the option.
	ErrOption = errors.New("smartpool: option not supported")
	// ErrNotQueued is returned by Handle.Reprioritize and Handle.SetDeadline
	// when the task is no longer waiting in its queue: it started (or
	// ended), was cancelled or dropped; and by a zero Handle, which holds no
	// task. A Reorderer's Reorder returns it for a task it does not hold.
	ErrNotQueued = errors.New("smartpool: task not queued (started, cancelled or dropped)")
	// ErrDropped is the result of a task the pool dropped: Close dropped it
	// queued or while it was yielded, or its channel discarded it (a late
	// deadline under DropLate, the oldest task under DropOldest).
	ErrDropped = errors.New("smartpool: task dropped")
	// ErrGoexit is the result of a task that called runtime.Goexit.
	ErrGoexit = errors.New("smartpool: task called runtime.Goexit")
	// ErrNotInTask is returned by Handoff when it is not called from the
	// goroutine of a task of this pool (a task's context that reached
	// another goroutine does not count: it belongs to the goroutine that
	// runs it).
	ErrNotInTask = errors.New("smartpool: not called from a task of this pool")
	// ErrCloseFromTask is returned by Close when it is called from one of
	// the pool's own tasks (whatever context it passes) or from a callback
	// the pool waits for (OnEnd, the panic handler): the close is started
	// but cannot wait for its caller. Await the close from another goroutine.
	ErrCloseFromTask = errors.New("smartpool: Close called from inside a task")
)

// ErrConfig is wrapped by every error that refuses a configuration: New's,
// for a behaviour that breaks a rule of the pool's Config, and the run-time
// setters' for a setting the pool was not built with or a value out of
// range. The message names the value and the rule.
var ErrConfig = errors.New("smartpool: bad configuration")

// ErrBadLimit is wrapped by the errors that refuse a limit or cap out of
// range: below 0 at run time, negative at New (beside ErrConfig), and
// channels.Keyed's group limit below 1.
var ErrBadLimit = errors.New("smartpool: limit must be at least 1")

// ErrBadSchedule is returned by Every for a non-positive interval or an
// unknown Missed policy.
var ErrBadSchedule = errors.New("smartpool: bad schedule")
