// Package scheduler holds the policies that decide which level a free worker
// of a smartpool serves next.
//
// A policy is a pure decision: it sees a snapshot of which levels have work
// (bit l of avail set means level l has at least one eligible task; level 0 is
// the highest) and, if it asks, the time. It never blocks, never touches a
// queue and never starts a goroutine, so it can be table-tested and fuzzed.
//
// Three policies ship: HighestFirst, RoundRobin and Weighted. Users plug in
// their own by implementing Scheduler and Picker.
package scheduler

import (
	"errors"
	"time"
)

// MaxLevels is the largest number of levels a pool may have: one bit per level
// in the availability snapshot.
const MaxLevels = 64

// ErrBadPolicy is wrapped by every error a Scheduler's Start returns for a
// configuration it cannot serve (a number of levels out of range, the wrong
// number of slices or weights, a slice or weight out of range).
var ErrBadPolicy = errors.New("scheduler: bad policy")

// Scheduler is a scheduling policy for one pool.
//
// The pool calls Start once, from New, before any worker runs; an error
// rejects the pool's configuration. It then calls NewPicker once per worker.
// A Scheduler value serves one pool: do not pass the same value to two pools.
//
// The pool guards every call into a policy: a Start that panics fails New
// with smartpool.ErrConfig; a worker whose NewPicker panics or returns nil,
// or whose Pick panics, logs the panic (log/slog) once and serves the highest
// level with work from then on, without calling that picker again.
type Scheduler interface {
	// Start validates the policy for a pool with the given number of levels
	// (1 to MaxLevels) and resets any shared state.
	Start(levels int) error
	// NewPicker returns the picker of one worker. Pickers may share state
	// through their Scheduler; such state must be safe for concurrent use
	// and must never block.
	NewPicker() Picker
}

// StrictPriority is implemented by a Scheduler whose pickers always return
// the highest level set in avail, as HighestFirst's do. The pool then calls
// no picker at all and serves such a policy exactly as it serves a pool
// with no Schedule: the same order, the same batch polls of the lowest
// level, the same cost. HighestFirst implements it.
type StrictPriority interface {
	Scheduler
	// PicksHighestFirst reports whether every Pick returns the highest
	// level set in avail.
	PicksHighestFirst() bool
}

// Picker chooses the level one worker serves next.
type Picker interface {
	// Pick returns the index of a level whose bit is set in avail. avail is
	// never zero. now returns the current time; call it only when the policy
	// depends on time, since it costs a clock read. Pick is called only from
	// its worker's goroutine, between tasks, and must not block. A returned
	// level whose bit is clear is treated as the highest level with work.
	Pick(avail uint64, now func() time.Time) int
}
