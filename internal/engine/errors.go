package engine

import (
	"errors"
	"fmt"

	"github.com/smartpool-go/smartpool/internal/nilcheck"
	"github.com/smartpool-go/smartpool/task"
)

// The configuration rules, one error each, so that tests can tell which rule
// New applied (export_test.go); users test ErrConfig and read the message.
var (
	ErrNoLevels       = errors.New("Config.Levels is empty: a pool needs at least one level")
	ErrEmptyLevel     = errors.New("a level has no channels")
	ErrDuplicateKey   = errors.New("a key is listed twice")
	ErrWorkers        = errors.New("worker count out of range")
	ErrNilBehavior    = errors.New("the PoolBehavior is nil")
	ErrNilChannel     = errors.New("the behavior returned no channel")
	ErrNoSource       = errors.New("the channel holds no Source: not made by its constructor")
	ErrFollowup       = errors.New("bad followup")
	ErrTooManyQueues  = errors.New("too many queues or levels")
	ErrCapBoth        = errors.New("both MaxRunning and MaxInFlight are set")
	ErrNotConfigured  = errors.New("setting not configured at New")
	errSchedulerPanic = errors.New("the scheduler panicked")
	errAdmitInAttach  = errors.New("Bits.AdmitWait called from Attach")
	ErrQuantum        = errors.New("quantum out of range")
)

// configError is a configuration error: it wraps ErrConfig and the rule (one
// of the errors above, ErrBadLimit, ErrNoQueues, ErrAttached or the
// scheduler's error), and its message says where and why, once.
type configError struct {
	rule error
	msg  string
}

func ConfigErr(rule error, format string, args ...any) error {
	return &configError{rule: rule, msg: fmt.Sprintf(format, args...)}
}

func (e *configError) Error() string {
	return "smartpool: bad configuration: " + e.msg
}

func (e *configError) Unwrap() []error { return []error{task.ErrConfig, e.rule} }

// keyError is ErrUnknownKey naming the key, so that a typo says which.
type keyError struct{ key any }

func UnknownKey(key any) error { return &keyError{key: key} }

func (e *keyError) Error() string {
	if s, ok := e.key.(string); ok {
		return fmt.Sprintf("%v %q", task.ErrUnknownKey, s)
	}
	return fmt.Sprintf("%v %v", task.ErrUnknownKey, e.key)
}

func (e *keyError) Unwrap() error { return task.ErrUnknownKey }

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

func (e *removedError) Unwrap() error { return task.ErrClosed }

func (e *closedError) Error() string { return "smartpool: " + e.call + ": the pool is closed" }

func (e *closedError) Unwrap() error { return task.ErrClosed }

// NilTask reports whether t is nil or holds a nil function or pointer
// (Func(nil)): every submit refuses it with ErrNilTask rather than let it
// panic on a worker.
func NilTask(t task.Task) bool { return nilcheck.Nil(t) }
