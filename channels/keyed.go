package channels

import (
	"context"
	"fmt"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/internal/nilcheck"
	"github.com/smartpool-go/smartpool/source"
)

// Keyed is an unbounded first-in, first-out channel whose tasks belong to
// groups (a host, a tenant, a database), with a limit on how many tasks of
// one group may be in progress at once: a fetch channel that never has more
// than two requests to a host in flight. It is one queue.
//
// # Order and limits
//
// A task is in progress from the moment a worker takes it until its Run
// ends, however it ends: it returns, panics, or calls runtime.Goexit
// (including a yielded task the pool drops on Close). A task that calls
// smartpool.Yield keeps its group's slot while it waits, since the resource
// the limit guards (the host's connection) is usually what it waits on.
// A worker takes the oldest queued task whose group has fewer than the
// limit in progress; a group at its limit does not block the others, so the
// channel's bit stays set while any group may run. When a task ends, the
// next task of its group becomes eligible and an idle worker is woken for it.
//
// Yielded tasks re-entering (when a Keyed is a followup channel) are not
// subject to the limits, since they already hold whatever they hold: they
// wait in a FIFO of their own, served first.
//
// Unlike a channel's smartpool.ChannelParams.MaxInFlight cap, which limits
// the channel as a whole, a Keyed limits each group separately and may be a
// followup channel. Do not shard a Keyed with Multi: each shard would keep
// its own limits.
//
// # Cost
//
// Taking a task, submits and the end of a task are O(log g) for g groups with work
// queued: each group keeps its tasks in a list, and the groups that may run
// are in a heap ordered by the age of their oldest task. SetLimit is O(g).
// Each submitted task costs one allocation, a small wrapper that links it
// into its group's list and gives its slot back when its Run ends; a group
// costs one more when it becomes active. A group's state is removed as soon
// as it has nothing queued and nothing in progress, so memory follows the
// groups active at once, not every group ever seen.
//
// # Wrapped tasks
//
// A worker gets each submitted task wrapped (re-entries come as they are); the wrapper's Unwrap returns the task as it was submitted, so
// the pool's reports and smartpool.ChannelParams.OnEnd see the
// submitted task, and a task submitted with smartpool.WithContext whose
// context ends while it waits here is skipped as it should be. One race is
// left: a task a worker polls just as the pool's Close starts on a channel
// that does not complete on close is dropped without running, so its slot
// is never given back; that matters to nothing but Running and Stats, since
// the pool is closing.
//
// # Handles
//
// A task submitted with smartpool.WithHandle can be cancelled while it waits
// (the wrapper's Run skips it, and its group's slot is never taken). It
// cannot be moved: a Keyed has no order key (each group is first-in,
// first-out, and the groups take turns by the age of their oldest task), so
// there is no key to move a task to, and the handle's Reprioritize and
// SetDeadline are refused, as WithPriority and WithDeadline are, with an
// error wrapping smartpool.ErrOption that names the channel.
//
// # Use
//
// Use NewKeyed: smartpool.New refuses a zero Keyed, whose submit methods
// return smartpool.ErrNotServed. A Keyed must not be copied. All methods are
// safe for concurrent use and none blocks beyond a short critical section,
// unless a submit's options say so. G must be comparable at run time too:
// an interface G holding a slice panics, as it would as a map key.
//
// A submit by the channel's key (smartpool.Pool.Submit, smartpool.Go,
// Group.Go) has no group to give: its task goes under the zero value of G,
// one group that every such task shares, bound by the limit as any other.
// Submit through the Keyed to name the group.
//
// A Keyed takes tasks only while a running pool serves it: its submit
// methods return smartpool.ErrNotServed before New attached it (or after a
// New that failed), and smartpool.ErrClosed from the pool's Close on.
type Keyed[G comparable] struct {
	plug
	src keyedSource[G]
}

// NewKeyed returns an empty Keyed that lets at most limit tasks of each group
// be in progress at once. For limit < 1 it returns an error wrapping
// smartpool.ErrBadLimit.
func NewKeyed[G comparable](limit int) (*Keyed[G], error) {
	if limit < 1 {
		return nil, fmt.Errorf("channels: NewKeyed limit %d: %w", limit, smartpool.ErrBadLimit)
	}
	k := new(Keyed[G])
	k.src.limit = limit
	k.plug = source.NewPlug(&k.src)
	return k, nil
}

// Submit queues fn under group; it is SubmitTask for a function, with the
// same errors and options (and smartpool.ErrNilTask for a nil fn).
func (k *Keyed[G]) Submit(group G, fn func(ctx context.Context), opts ...smartpool.Option) error {
	if fn == nil {
		return smartpool.ErrNilTask
	}
	return k.SubmitTask(group, smartpool.Func(fn), opts...)
}

// SubmitTask queues t under group. It returns smartpool.ErrNilTask for a nil
// t, smartpool.ErrClosed once the pool's Close started, and smartpool.ErrFull
// when the pool's in-flight limit (smartpool.Config.Limit) is reached. It
// does not block unless opts say so: smartpool.WithContext waits for a unit
// of the limit and cancels t if ctx ends while it is queued; t keeps its
// group either way. A Keyed has no order key, so WithDeadline and
// WithPriority are refused with smartpool.ErrOption.
func (k *Keyed[G]) SubmitTask(group G, t smartpool.Task, opts ...smartpool.Option) error {
	if nilcheck.Nil(t) { // a Func(nil) would panic on the worker
		return smartpool.ErrNilTask
	}
	if len(opts) == 0 {
		return k.src.push(group, t, submitted)
	}
	return k.src.bitsNow().Submit(t, smartpool.Order{}, opts, func(t smartpool.Task, o smartpool.Order) error {
		if o.HasDeadline || o.HasPriority {
			return source.Unordered(o)
		}
		return k.src.push(group, t, pushed) // admitted by the pool, under its own group
	})
}

// SetLimit sets the number of tasks of each group that may be in progress at
// once to n. Raising it makes waiting tasks eligible at once and wakes idle
// workers for them; lowering it stops nothing already in progress: a group
// over the new limit just gets no more slots until enough of its tasks end.
// It returns an error wrapping smartpool.ErrBadLimit for n < 1 and then
// changes nothing.
func (k *Keyed[G]) SetLimit(n int) error { return k.src.setLimit(n) }

// Limit returns the number of tasks of each group that may be in progress at
// once.
func (k *Keyed[G]) Limit() int { return k.src.limitNow() }

// Len returns the number of queued tasks, re-entries included; tasks in
// progress are not queued.
func (k *Keyed[G]) Len() int { return k.src.len() }

// Running returns the number of tasks of group in progress: taken by a
// worker, their Run not yet ended.
func (k *Keyed[G]) Running(group G) int { return k.src.runningOf(group) }

// KeyedStats is a snapshot of a Keyed.
type KeyedStats struct {
	// Queued counts queued tasks, re-entries included: Len.
	Queued int
	// Running counts tasks in progress, over all groups.
	Running int
	// Groups counts the groups with tasks queued or in progress: the
	// groups whose state the Keyed keeps.
	Groups int
	// Ready counts the groups with a task a worker may take now.
	Ready int
	// Limit is the number of tasks of each group that may be in progress
	// at once.
	Limit int
}

// Stats returns a snapshot of the Keyed, every field read at the same
// instant under the channel's lock.
func (k *Keyed[G]) Stats() KeyedStats { return k.src.stats() }
