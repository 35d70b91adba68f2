package smartpool

import (
	"errors"
	"fmt"

	"github.com/smartpool-go/smartpool/internal/nilcheck"
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
	ErrUnknownKey = errors.New("smartpool: unknown channel key")
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
	// outside this module returns it too (see Source).
	ErrAttached = task.ErrAttached
)

// ErrConfig is wrapped by every error that refuses a configuration: New's,
// for a PoolBehavior that breaks a rule of Config or ChannelParams, and the
// run-time setters' (SetWorkers, SetCap, SetLimit) for a setting the pool
// was not built with or a value out of range. The message names the value
// and the rule. A negative or zero limit or cap also wraps ErrBadLimit, and
// the scheduler's own rules scheduler.ErrBadPolicy.
var ErrConfig = task.ErrConfig

// The configuration rules, one error each, so that tests can tell which rule
// New applied (export_test.go); users test ErrConfig and read the message.
var (
	errNoLevels       = errors.New("Config.Levels is empty: a pool needs at least one level")
	errEmptyLevel     = errors.New("a level has no channels")
	errDuplicateKey   = errors.New("a key is listed twice")
	errWorkers        = errors.New("worker count out of range")
	errNilBehavior    = errors.New("the PoolBehavior is nil")
	errNilChannel     = errors.New("the behavior returned no channel")
	errNoSource       = errors.New("the channel holds no Source: not made by its constructor")
	errFollowup       = errors.New("bad followup")
	errTooManyQueues  = errors.New("too many queues or levels")
	errCapBoth        = errors.New("both MaxRunning and MaxInFlight are set")
	errNotConfigured  = errors.New("setting not configured at New")
	errSchedulerPanic = errors.New("the scheduler panicked")
	errAdmitInAttach  = errors.New("Bits.AdmitWait called from Attach")
	errQuantum        = errors.New("quantum out of range")
)

// configError is a configuration error: it wraps ErrConfig and the rule (one
// of the errors above, ErrBadLimit, ErrNoQueues, ErrAttached or the
// scheduler's error), and its message says where and why, once.
type configError struct {
	rule error
	msg  string
}

func configErr(rule error, format string, args ...any) error {
	return &configError{rule: rule, msg: fmt.Sprintf(format, args...)}
}

func (e *configError) Error() string {
	return "smartpool: bad configuration: " + e.msg
}

func (e *configError) Unwrap() []error { return []error{ErrConfig, e.rule} }

// keyError is ErrUnknownKey naming the key, so that a typo says which.
type keyError struct{ key any }

func unknownKey(key any) error { return &keyError{key: key} }

func (e *keyError) Error() string {
	if s, ok := e.key.(string); ok {
		return fmt.Sprintf("%v %q", ErrUnknownKey, s)
	}
	return fmt.Sprintf("%v %v", ErrUnknownKey, e.key)
}

func (e *keyError) Unwrap() error { return ErrUnknownKey }

// closedError is ErrClosed for a call on a closed pool, naming the call:
// ErrClosed's own text speaks of channels.
type closedError struct{ call string }

func poolClosed(call string) error { return &closedError{call: call} }

// removedError is a by-key call's error when the channel its key named was
// removed while the call waited (keyPin): ErrClosed, as for any call to a
// channel being removed, not ErrUnknownKey, which says the key was never
// right.
type removedError struct{ key any }

func (e *removedError) Error() string {
	if s, ok := e.key.(string); ok {
		return fmt.Sprintf("smartpool: channel %q was removed while the call waited", s)
	}
	return fmt.Sprintf("smartpool: channel %v was removed while the call waited", e.key)
}

func (e *removedError) Unwrap() error { return ErrClosed }

func (e *closedError) Error() string { return "smartpool: " + e.call + ": the pool is closed" }

func (e *closedError) Unwrap() error { return ErrClosed }

// nilTask reports whether t is nil or holds a nil function or pointer
// (Func(nil)): every submit refuses it with ErrNilTask rather than let it
// panic on a worker.
func nilTask(t Task) bool { return nilcheck.Nil(t) }

// ErrBadLimit is wrapped by the errors that refuse a limit or cap out of
// range: SetLimit and SetCap below 0, New's for a negative Limit, MaxRunning
// or MaxInFlight (beside ErrConfig), and channels.Keyed's for a group limit
// below 1.
var ErrBadLimit = task.ErrBadLimit
