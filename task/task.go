package task

import (
	"context"
	"time"
)

// Task is a unit of work. Run is called once, on a worker goroutine, with a
// context that carries the pool's task handle and is cancelled when a Close
// gives up waiting (its context ended), so a long task can stop early.
//
// Most code submits plain functions (see Func); a type that implements Task
// itself can be pre-allocated and reused, and is what a channel's OnEnd
// (smartpool.ChannelParams) receives back.
type Task interface {
	Run(ctx context.Context)
}

// Func adapts a function to Task without allocating.
type Func func(ctx context.Context)

// Run calls f(ctx).
func (f Func) Run(ctx context.Context) { f(ctx) }

// Unwrapper is implemented by tasks that a channel wraps around the tasks it
// is given (see channels.Keyed), so that a channel's OnEnd receives the task
// that was submitted, and so that the pool finds its own wrappers inside (a
// WithContext task it hands to an idle worker, or drops). The pool may call
// Unwrap on a task it is about to run as well as on one it drops, any number
// of times: Unwrap must only return the wrapped task, with no side effect.
type Unwrapper interface {
	Unwrap() Task
}

// Order is the key a channel ordered a task by: a priority, a deadline, or
// neither (the zero Order).
type Order struct {
	Priority    int       // the task's priority, if HasPriority
	Deadline    time.Time // the task's deadline, if HasDeadline
	HasPriority bool
	HasDeadline bool
}
