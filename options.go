package smartpool

import (
	"context"
	"time"

	"github.com/smartpool-go/smartpool/internal/engine"
)

// Option adjusts one submit. Every submit takes the same options, by key
// (Pool.Submit, Pool.SubmitTask, Go, Group.Go) and through a channel's own
// submit methods:
//
//	err := pool.Submit("render", fn, smartpool.WithContext(ctx), smartpool.WithDeadline(due))
//
// An option the channel cannot honour (a deadline for a FIFO) makes the
// submit fail with an error wrapping ErrOption; it is never ignored. The
// zero Option does nothing. Passing options allocates nothing.
//
// Option is defined by the pool's engine; it is opaque: only the With
// functions make one.
type Option = engine.Option

// WithContext ties the task to ctx while it waits: a submit given it waits
// for room (a unit of Config.Limit, room in a full channels.Bounded) until
// ctx ends, where without it the submit returns ErrFull at once; and if ctx
// ends while the task is still queued, the task never runs: it ends as
// Cancelled (counted in ChannelStats.Cancelled, its unit of the limit
// released at once, its Future or Group resolved with ctx.Err()).
//
// What of ctx reaches the task: its values (a trace ID), looked up before
// the pool's own. Not its cancellation: once the task started, ctx ending
// does nothing (a task that must stop with ctx closes over it, or runs in a
// Group, whose tasks get its cancellation).
//
// From a task of the pool, a submit that would wait for a unit of the limit
// or for room does not: the calling task runs the new one itself, at once,
// in its own place, and the submit returns nil once it ended (the fork-join
// "help while you wait" rule; see Group). Queuing allocates nothing with
// context.Background(), one object with a context that only carries values,
// and four with one that can be cancelled. A nil ctx means
// context.Background().
func WithContext(ctx context.Context) Option {
	if ctx == nil {
		ctx = context.Background()
	}
	return engine.ContextOption(ctx)
}

// WithDeadline orders the task by deadline t in a channel that orders by
// deadline (channels.Deadline, or a channels.Multi of them): earliest first,
// and late (see channels.DropLate) once t has passed. Any other channel
// refuses it with ErrOption.
func WithDeadline(t time.Time) Option { return engine.DeadlineOption(t) }

// WithPriority orders the task by priority p in a channel that orders by
// priority (channels.Priority, or a channels.Multi of them): highest first.
// Any other channel refuses it with ErrOption.
func WithPriority(p int) Option { return engine.PriorityOption(p) }
