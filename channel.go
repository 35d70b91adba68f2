package smartpool

import (
	"github.com/smartpool-go/smartpool/source"
	"github.com/smartpool-go/smartpool/task"
)

// Task is a unit of work: Run is called once, on a worker goroutine, with a
// context that carries the pool's task handle and is cancelled when a Close
// gives up waiting. Most code submits plain functions (Func).
//
// Task and the other words every reader shares (Func, Unwrapper, Order,
// Outcome, PanicError, the errors) are defined in package task, below the
// pool and the channels, and re-exported here, so a program imports one
// package.
type Task = task.Task

// Func adapts a function to Task without allocating.
type Func = task.Func

// Unwrapper is implemented by tasks that a channel wraps around the tasks it
// is given (see channels.Keyed), so that ChannelParams.OnEnd receives the
// task that was submitted, and so that the pool finds its own wrappers
// inside (a WithContext task it hands to an idle worker, or drops). The pool may
// call Unwrap on a task it is about to run as well as on one it drops, any
// number of times: Unwrap must only return the wrapped task, with no side
// effect.
type Unwrapper = task.Unwrapper

// Channel is a source of tasks that a pool's levels list: a queue with its
// own ordering, or anything that can be polled. The channels package has
// FIFO, Deadline, Priority, Bounded, Keyed and Multi.
//
// Users call a channel's own submit methods (Submit, SubmitTask, ...), Len
// and its inspection methods; the pool talks to the channel through its
// Source, which users never see. A channel's zero value, not made by its
// constructor, holds no Source: New refuses it with an error wrapping
// ErrConfig. To write a channel, see package source, where Channel is
// defined.
type Channel = source.Channel

// Order is the key a channel ordered a task by: a priority, a deadline, or
// neither (the zero Order).
type Order = task.Order

// Outcome is how a task ended. Every task a pool admitted ends exactly once,
// with one of these, and the channel it came from counts it in its
// ChannelStats and passes it to its ChannelParams.OnEnd.
type Outcome = task.Outcome

// The outcomes, documented in package task.
const (
	Ran              = task.Ran              // its Run returned
	Panicked         = task.Panicked         // its Run panicked: the panic went to the handler, its Future or its Group
	Goexited         = task.Goexited         // its Run called runtime.Goexit
	Cancelled        = task.Cancelled        // its WithContext context ended, or Handle.Cancel, while it was queued
	DroppedOnClose   = task.DroppedOnClose   // Close (or a Drop removal) dropped it, queued or yielded
	DroppedLate      = task.DroppedLate      // its deadline passed in a DropLate channel
	DroppedDisplaced = task.DroppedDisplaced // a DropOldest channel made room for a newer task
)
