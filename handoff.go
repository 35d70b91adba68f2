package smartpool

import (
	"context"

	"github.com/smartpool-go/smartpool/internal/engine"
)

// Handoff submits fn to the channel named key as the continuation of the task
// that runs with ctx: fn takes over that task's unit of the in-flight limit
// instead of waiting for one, so a chain of tasks (fetch, then parse, then
// store) holds one unit from start to end and a full pool can always finish
// what it admitted. The calling task should end soon after; a second
// Handoff from it needs a free unit. During Close, Handoff still queues fn
// from a task that holds a worker, so a complete-on-close pipeline drains to
// its end (into a dropping channel, fn is dropped and reported).
//
// Errors, in this order: ErrNotInTask if the caller is not the goroutine of
// a task of this pool, ErrNilTask, ErrUnknownKey, ErrFull, then the
// channel's. fn gets a context of its own: nothing of ctx passes on but its
// unit. opts order fn as Submit's do and WithHandle works as for Submit;
// WithContext is refused with ErrOption, since a continuation lives by its
// chain's unit.
func (p *Pool[K]) Handoff(ctx context.Context, key K, fn func(ctx context.Context), opts ...Option) error {
	if fn == nil {
		if tc := engine.TaskOf(ctx); tc == nil || tc.E != p.e {
			return ErrNotInTask
		}
		return ErrNilTask
	}
	return p.HandoffTask(ctx, key, Func(fn), opts...)
}

// HandoffTask is Handoff for a Task value.
func (p *Pool[K]) HandoffTask(ctx context.Context, key K, t Task, opts ...Option) error {
	tc := engine.TaskOf(ctx)
	switch {
	case tc == nil || tc.E != p.e:
		return ErrNotInTask
	case engine.NilTask(t):
		return ErrNilTask
	}
	defer p.e.Unpin(p.e.Pin()) // see "Reshaping", 6 (internal/engine/reshape.go)
	ch, ok := p.lookup(key)
	if !ok {
		return engine.UnknownKey(key)
	}
	return p.e.Handoff(tc, ch, t, opts)
}
