package smartpool

import (
	"context"

	"github.com/smartpool-go/smartpool/internal/engine"
)

// Handoff submits fn to the channel named key as the continuation of the task
// that runs with ctx: fn takes over that task's unit of the in-flight limit
// instead of waiting for one, so a chain of tasks (fetch, then parse, then
// store) holds one unit from its start to its end and a full pool can always
// finish what it admitted. The calling task should end soon after: it no
// longer holds a unit. A second Handoff from the same task needs a free unit
// (ErrFull if there is none); in a pool without a limit there are no units
// to pass on.
//
// Once Close started, Handoff still queues fn if the calling task holds a
// worker (it is not inside a Yield's wait): it continues work the pool
// admitted, so a complete-on-close pipeline drains to its end; into a
// channel that does not complete on close, fn is then dropped and reported.
// Errors, in this order: ErrNotInTask if the caller is not the goroutine of
// a task of this pool (whatever ctx), ErrNilTask, ErrUnknownKey, ErrFull,
// then the channel's (ErrClosed during Close only from inside a Yield's
// wait or from a dropped channel). fn receives a context of its own,
// as any task does: nothing of ctx but its unit passes on. A child that its
// parent runs in its own place (Group.Go, WithContext and a full
// channels.Bounded from a task with no room: see Group) hands off the
// parent's unit, which it runs on.
//
// opts order fn in its channel (WithDeadline, WithPriority) as Submit's do;
// WithContext is refused with ErrOption: a continuation lives by its
// chain's unit, not by a context of its own. WithHandle(&h) fills h once fn
// is queued, as for Submit: h.Cancel ends the chain there before fn starts
// (fn ends Cancelled, and the unit it took over is released at once), and
// h.Reprioritize and h.SetDeadline move it in an ordered channel. A
// continuation queued during Close goes in as a re-entry (Requeue), which
// no channel indexes: its h cancels but does not move it.
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
	defer p.e.Unpin(p.e.Pin()) // see "Reshaping", 6 (reshape.go)
	ch, ok := p.lookup(key)
	if !ok {
		return engine.UnknownKey(key)
	}
	return p.e.Handoff(tc, ch, t, opts)
}
