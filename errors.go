package smartpool

import (
	"errors"
	"fmt"
)

// Errors returned by Submit and by channels. Test them with errors.Is.
var (
	// ErrNilTask is returned when a nil task or function is submitted.
	ErrNilTask = errors.New("smartpool: nil task")
	// ErrClosed is returned for work submitted after Close started.
	ErrClosed = errors.New("smartpool: pool closed")
	// ErrFull is returned by a non-blocking submit to a bounded channel
	// that has no room, or to a pool whose in-flight limit (Config.Limit)
	// is reached.
	ErrFull = errors.New("smartpool: full")
	// ErrUnknownKey is returned by Pool.Submit for a key the configuration does not list.
	ErrUnknownKey = errors.New("smartpool: unknown channel key")
	// ErrCloseFromTask is returned by OwnedPool.Close when it is called with a
	// task's context from inside that task: the close is started but cannot
	// wait for the task that asked for it. Await the close from another
	// goroutine (Close or Done).
	ErrCloseFromTask = errors.New("smartpool: Close called from inside a task")
)

// ErrConfig is wrapped by every error New returns for a bad configuration, next
// to the sentinel that names the rule broken.
var ErrConfig = errors.New("smartpool: bad configuration")

// Configuration rules. New's error wraps ErrConfig and exactly one of these
// (or scheduler.ErrBadPolicy for the scheduler's own rules).
var (
	ErrNoLevels       = errors.New("no levels")
	ErrEmptyLevel     = errors.New("a level has no channels")
	ErrDuplicateKey   = errors.New("a key is listed twice")
	ErrNegativeWorker = errors.New("negative worker count")
	ErrTooManyWorkers = errors.New("worker count above MaxWorkers")
	ErrNilChannel     = errors.New("behavior returned a nil channel")
	ErrNoQueues       = errors.New("channel has no queues")
	ErrFollowup       = errors.New("bad followup target")
	ErrTooManyQueues  = errors.New("too many queues or levels")
	// ErrAttached is returned by a channel's Attach when the channel already
	// belongs to a pool.
	ErrAttached = errors.New("channel already attached to a pool")
)

// configError wraps ErrConfig and the rule, with a message that says where.
type configError struct {
	rule error
	msg  string
}

func configErr(rule error, format string, args ...any) error {
	return &configError{rule: rule, msg: fmt.Sprintf(format, args...)}
}

func (e *configError) Error() string {
	return "smartpool: bad configuration: " + e.rule.Error() + ": " + e.msg
}
func (e *configError) Unwrap() []error { return []error{ErrConfig, e.rule} }
