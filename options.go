package smartpool

import (
	"context"
	"time"

	"github.com/smartpool-go/smartpool/internal/engine"
)

// Option adjusts one submit; every submit takes the same options, by key
// and through a channel's own submit methods:
//
//	err := pool.Submit("render", fn, smartpool.WithContext(ctx), smartpool.WithDeadline(due))
//
// An option the channel cannot honour (a deadline for a FIFO) fails the
// submit with ErrOption; none is ignored. Options allocate nothing. Option
// is opaque (the engine's): only the With functions make one.
type Option = engine.Option

// WithContext ties the task to ctx while it waits: the submit waits for room
// (a unit of Config.Limit, room in a full channels.Bounded) until ctx ends,
// where without it the submit returns ErrFull at once; and if ctx ends
// while the task is queued, it never runs: it ends as Cancelled, its unit
// released, its Future or Group resolved with ctx.Err(). The task sees
// ctx's values but not its cancellation once it started. From a task of the
// pool, a submit that would wait runs the new task itself, at once, in its
// own place ("help while you wait"; see Group). A nil ctx means
// context.Background(); queuing allocates nothing with it.
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
