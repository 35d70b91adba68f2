package channels

import (
	"context"
	"reflect"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/source"
)

// Multi is one logical channel sharded over several inner channels, its
// shards, to cut lock contention: submitters spread over the shards in
// rotation, so concurrent submits mostly take different locks. Each shard
// keeps its own queues and availability bits, and workers poll each shard
// queue separately.
//
// # Ordering
//
// Each shard keeps its own order (FIFO for FIFO shards, earliest deadline for
// Deadline shards, and so on). Across shards there is no order: tasks are
// served only roughly in the shards' order, and a task may run before an
// older one, or a later deadline before an earlier one, that sits in another
// shard.
//
// # Handles
//
// A task submitted with smartpool.WithHandle can be cancelled in any Multi.
// In a Multi of Priority or Deadline shards, the handle's Reprioritize or
// SetDeadline moves the task within the shard that holds it, to where its new
// key puts it among that shard's tasks (across shards there is still no
// order). The Multi keeps no index of its own, so that submits stay as cheap
// as a shard's: a move asks the shards in turn, each under its own lock, so
// it costs up to one short critical section per shard. A Multi of FIFOs, or
// of shards asked for a key they do not order by, refuses the move with an
// error wrapping smartpool.ErrOption that names the channel.
//
// # Emptiness
//
// Len sums the shards one after the other, and a worker polls one shard
// only, so either may see an empty shard while another holds work. That is
// by design and loses nothing: a pool finds work through each shard queue's
// own availability bit, never through Len.
//
// Use NewMulti: smartpool.New refuses a zero Multi, and one with no shards
// (see NewMulti) with smartpool.ErrNoQueues. Neither is ever served, so
// their submit methods return smartpool.ErrNotServed. A Multi must not be
// copied. All methods are safe for concurrent use and none blocks beyond
// the shards' short critical sections, unless a submit's options say so.
//
// A Multi takes tasks only while a running pool serves it: its submit
// methods return smartpool.ErrNotServed before New attached it (or after a
// New that failed), and smartpool.ErrClosed from the pool's Close on.
type Multi[C smartpool.Channel] struct {
	plug
	src multiSource[C]
}

// maxShards bounds NewMulti's n: far more queues than any pool accepts.
const maxShards = 1 << 16

// NewMulti returns a Multi of n shards, each made by one call of newShard,
// which must return a new channel each time. For n <= 0, n > 65536, a nil
// newShard, or a shard that is nil or not made by its constructor, it
// returns a Multi with no shards (see Multi) rather than panic. NewMulti
// asks each shard's Source its queue count once; a shard must always report
// the same count.
func NewMulti[C smartpool.Channel](n int, newShard func() C) *Multi[C] {
	m := new(Multi[C])
	m.plug = source.NewPlug(&m.src)
	if n <= 0 || n > maxShards || newShard == nil {
		return m
	}
	shards := make([]C, n)
	srcs := make([]source.Source, n)
	first := make([]int, n+1)
	for s := range shards {
		c := newShard()
		if isNilChannel(c) {
			return m
		}
		src := source.SourceOf(c)
		if src == nil {
			return m
		}
		shards[s], srcs[s] = c, src
		first[s+1] = first[s] + max(src.Queues(), 0)
	}
	m.src.shards, m.src.srcs, m.src.first = shards, srcs, first
	for s := range shards {
		if first[s+1] == first[s] {
			return m // a shard nothing could poll: Queues 0 refuses the whole Multi
		}
	}
	m.src.queues = first[n]
	m.src.single = m.src.queues == n
	return m
}

// isNilChannel reports whether c is a nil interface or a typed nil pointer
// (or other nil-able kind), which a constructor returns easily by mistake.
func isNilChannel(c smartpool.Channel) bool {
	if c == nil {
		return true
	}
	switch v := reflect.ValueOf(c); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// Shards returns the shards, in queue order, in a new slice.
func (m *Multi[C]) Shards() []C { return append([]C(nil), m.src.shards...) }

// Next returns the next shard in the rotation the Multi's submits use, for
// typed submits such as m.Next().Submit(deadline, fn). It returns the zero C
// if the Multi has no shards.
func (m *Multi[C]) Next() C {
	if len(m.src.shards) == 0 {
		var zero C
		return zero
	}
	return m.src.shards[m.src.nextShard()]
}

// Submit queues fn in the next shard with that shard's default ordering (its
// Source's Push). It returns smartpool.ErrNilTask for a nil fn,
// smartpool.ErrNotServed while no pool serves the Multi, smartpool.ErrFull
// when the pool's in-flight limit is reached, and otherwise what the shard
// returns. It does not block
// unless opts say so: smartpool.WithContext waits for a unit of the limit
// and cancels fn if ctx ends while it is queued. smartpool.WithDeadline and
// smartpool.WithPriority order fn in the shard, which refuses them with
// smartpool.ErrOption unless it orders by that key (a Multi of Deadline or
// Priority shards).
func (m *Multi[C]) Submit(fn func(ctx context.Context), opts ...smartpool.Option) error {
	if fn == nil {
		return smartpool.ErrNilTask
	}
	b := m.src.bits.Load()
	switch {
	case b == nil:
		return smartpool.ErrNotServed
	case len(opts) > 0:
		return b.Submit(smartpool.Func(fn), smartpool.Order{}, opts, nil)
	}
	if err := b.Admit(1); err != nil {
		return err
	}
	t := b.Stamp(smartpool.Func(fn))
	err := m.src.Push(t, smartpool.Order{})
	if err != nil {
		b.Refund(1)
		b.Unstamp(t, err)
	}
	return err
}

// Len returns the sum of the shards' Len, each read at a different instant
// (see Multi).
func (m *Multi[C]) Len() int {
	n := 0
	for _, s := range m.src.shards {
		n += s.Len()
	}
	return n
}
