package smartpool

import (
	"context"
	"sync"
)

// Results is a Group whose tasks return a value: Wait returns every value,
// in submission order, with the group's error, as pond's result groups and
// conc's ResultContextPool do. Create one with NewResults. It is safe for
// concurrent use and must not be copied.
//
// Everything but the values is its Group's: the context, the two error
// modes (the first error cancels the rest, the default; or CollectErrors),
// SetLimit, help while you wait (a task of the group that finds no room
// runs the child itself and Go returns when it ended), the rounds of reuse
// and the rule that a Go starting a round must happen before the Wait that
// ends it. See Group for each.
//
// Order: each Go takes the next slot of the round when it is called, before
// it waits for room; Wait's slice has one slot per Go of the round, in that
// order, whether the task ran, failed or was refused. Calls made one after
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
// struct with a value and an error) with a nil error.
type Results[K comparable, T any] struct {
	g *Group[K]

	mu   sync.Mutex // guards vals and gen; taken inside the group's mu by Wait's end of round
	vals []T        // the round's slots, one per Go, in the order of the Go calls
	gen  uint64     // the round of vals: a slot taken in an earlier one is not written
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
	var zero T
	r.mu.Lock()
	i, gen := len(r.vals), r.gen
	r.vals = append(r.vals, zero)
	r.mu.Unlock()
	if fn == nil {
		r.g.Go(key, nil, opts...) // refused with ErrNilTask, as Group's
		return
	}
	r.g.Go(key, func(ctx context.Context) error {
		v, err := fn(ctx)
		if err == nil {
			r.mu.Lock()
			if r.gen == gen {
				r.vals[i] = v
			}
			r.mu.Unlock()
		}
		return err
	}, opts...)
}

// Wait blocks until every task of the round has ended, then ends the round
// as Group's Wait does and returns its values, one slot per Go in
// submission order (a nil slice for a round without Go), with the round's
// first error, or with CollectErrors all its errors. If ctx ends first it
// returns nil and ctx.Err(), and the round goes on: a later Wait returns its
// values. After a round that failed in the default mode, later rounds keep
// its error, as Group's do, and their slots stay zero.
func (r *Results[K, T]) Wait(ctx context.Context) ([]T, error) {
	var vals []T
	err := r.g.wait(ctx, func() {
		r.mu.Lock()
		vals = r.vals
		r.vals = nil
		r.gen++
		r.mu.Unlock()
	})
	return vals, err
}
