package smartpool

import (
	"context"
	"slices"
	"sync"
)

// Results is a Group whose tasks return a value: Wait returns every value,
// in submission order, with the group's error, as pond's result groups and
// conc's ResultContextPool do. Create one with NewResults; the zero
// Results has no pool and is not usable. It is safe for concurrent use and
// must not be copied.
//
// Everything but the values is its Group's: the context, the two error
// modes (the first error cancels the rest, the default; or CollectErrors),
// SetLimit, help while you wait (a task of the group that finds no room
// runs the child itself and Go returns when it ended), the rounds of reuse
// and the rule that a Go starting a round must happen before the Wait that
// ends it. See Group for each.
//
// Order: each Go (and TryGo) takes the next slot of the round when it is
// called, before it waits for room; Wait's slice has one slot per Go of
// the round, in that order, whether the task ran, failed or was refused,
// and one per TryGo that reported true. Calls made one after
// the other (from one goroutine, or a task's Go after the Go that spawned
// it) keep their order; calls made at the same time from several
// goroutines are ordered as they took their slot, which is arbitrary
// between them.
//
// Failures: a slot holds the value fn returned with a nil error, and the
// zero value of T otherwise: when fn returned an error (its value is
// dropped, as conc does by default), panicked, was skipped because the
// group's context ended, was dropped, or was refused at submission. The
// errors are the group's: Wait returns the first, or with CollectErrors all
// of them joined. For an error per slot, return it inside T (for example a
// struct with a value and an error) with a nil error. A failure no Wait
// reads is logged at Warn naming fn, as a Group's is (see Group's Wait).
type Results[K comparable, T any] struct {
	g *Group[K]

	mu     sync.Mutex // guards vals, gen and vacant; taken inside the group's mu by Wait's end of round
	vals   []T        // the round's slots, one per Go, in the order of the Go calls
	gen    uint64     // the round of vals: a slot taken in an earlier one is not written
	vacant []int      // slots of vals given back by a TryGo that reported false, in no order
}

// NewResults returns an empty Results spawning into p, whose tasks' context
// derives from ctx, as NewGroup's. A nil ctx means context.Background().
// T is the tasks' value type: NewResults[int](ctx, p).
func NewResults[T any, K comparable](ctx context.Context, p *Pool[K]) *Results[K, T] {
	return &Results[K, T]{g: NewGroup(ctx, p)}
}

// SetLimit bounds the number of the group's tasks in flight (queued, running
// or yielded) to n, as Group's SetLimit does; a negative n removes the bound.
func (r *Results[K, T]) SetLimit(n int) { r.g.SetLimit(n) }

// CollectErrors makes the group keep going after an error, as Group's
// CollectErrors does: Wait then returns every error of the round joined.
// Call it before the first Go.
func (r *Results[K, T]) CollectErrors() { r.g.CollectErrors() }

// Context returns the context the group's tasks receive, as Group's Context
// does.
func (r *Results[K, T]) Context() context.Context { return r.g.Context() }

// Go takes the round's next slot and submits fn to the channel named key,
// as Group's Go does: without room, a task of the group runs fn itself and
// Go returns once fn ended; any other caller waits for room while the
// group's context lasts. The value fn returns with a nil error fills the
// slot; an error, a panic or a refusal leaves it zero and becomes the
// group's error (see Results). opts work as Group's Go.
func (r *Results[K, T]) Go(key K, fn func(ctx context.Context) (T, error), opts ...Option) {
	i, gen := r.take()
	r.g.spawn(key, r.task(fn, i, gen), fn, true, opts)
}

// TryGo takes the round's next slot and submits fn only if there is room
// at once, as Group's TryGo does: it never waits and never runs fn itself.
// It reports whether fn was queued; if not, it gives the slot back, so the
// round's values have no slot for it, and a refusal other than for lack
// of room (see Group's TryGo) is the group's error.
func (r *Results[K, T]) TryGo(key K, fn func(ctx context.Context) (T, error), opts ...Option) bool {
	i, gen := r.take()
	if r.g.spawn(key, r.task(fn, i, gen), fn, false, opts) {
		return true
	}
	r.mu.Lock()
	if r.gen == gen {
		r.vacant = append(r.vacant, i)
	}
	r.mu.Unlock()
	return false
}

// take returns the round's next slot, zero, and the round it belongs to.
func (r *Results[K, T]) take() (i int, gen uint64) {
	var zero T
	r.mu.Lock()
	i, gen = len(r.vals), r.gen
	r.vals = append(r.vals, zero)
	r.mu.Unlock()
	return i, gen
}

// task returns the Group's function for fn: it runs fn and fills slot i
// of round gen with its value, if fn returned no error. A nil fn stays
// nil, for the Group to refuse with ErrNilTask.
func (r *Results[K, T]) task(fn func(ctx context.Context) (T, error), i int, gen uint64) func(ctx context.Context) error {
	if fn == nil {
		return nil
	}
	return func(ctx context.Context) error {
		v, err := fn(ctx)
		if err == nil {
			r.mu.Lock()
			if r.gen == gen {
				r.vals[i] = v
			}
			r.mu.Unlock()
		}
		return err
	}
}

// Wait blocks until every task of the round has ended, then ends the round
// as Group's Wait does and returns its values, one slot per Go (and per
// TryGo that reported true) in submission order (a nil slice for a round without Go), with the round's
// first error, or with CollectErrors all its errors. If ctx ends first it
// returns nil and ctx.Err(), and the round goes on: a later Wait returns its
// values. Called from a pool task, it yields the worker while it waits, as
// Group's Wait does. After a round that failed in the default mode, later rounds keep
// its error, as Group's do, and their slots stay zero.
func (r *Results[K, T]) Wait(ctx context.Context) ([]T, error) {
	var vals []T
	err := r.g.wait(ctx, func() {
		r.mu.Lock()
		vals = r.vals
		if len(r.vacant) > 0 { // rare: only a refused TryGo leaves a hole
			slices.Sort(r.vacant)
			for _, i := range slices.Backward(r.vacant) {
				vals = slices.Delete(vals, i, i+1)
			}
			r.vacant = r.vacant[:0]
		}
		r.vals = nil
		r.gen++
		r.mu.Unlock()
	})
	return vals, err
}
