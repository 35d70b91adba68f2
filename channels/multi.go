package channels

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/smartpool-go/smartpool"
)

// Multi is one logical channel sharded over several inner channels, its
// shards, to cut lock contention: submitters spread over the shards in
// rotation, so concurrent submits mostly take different locks. Each shard
// keeps its own queues and availability bits, and the pool polls each shard
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
// # Emptiness
//
// Len sums the shards one after the other, and Poll looks at one shard only,
// so either may see an empty shard while another holds work. That is by
// design and loses nothing: a pool finds work through each shard queue's own
// availability bit, never through Len.
//
// A Multi with no shards (see NewMulti; the zero Multi has none either)
// reports Queues() == 0, which smartpool.New refuses with
// smartpool.ErrNoQueues, and its Push returns smartpool.ErrNoQueues. So does
// Queues for a Multi with a shard that has no queues. A Multi must not be
// copied after first use. All methods are safe for concurrent use and none
// blocks beyond the shards' short critical sections.
//
// A Multi takes tasks only while a running pool serves it: before New attached
// it, after a New that failed, and from the pool's Close on, its submit
// methods return smartpool.ErrClosed (see smartpool.Channel). Its Queues,
// Attach, Push, Requeue, Poll and Close are called by the pool, not by users.
type Multi[C smartpool.Channel] struct {
	shards []C                            // read-only after NewMulti
	first  []int                          // first[s]: the Multi's queue number of shard s's queue 0; read-only
	single bool                           // every shard has one queue, so queue i is shard i; read-only
	queues int                            // read-only; 0 if any shard has no queues
	next   atomic.Uint32                  // pushes and Next calls so far: the rotation
	bits   atomic.Pointer[smartpool.Bits] // set by Attach under mu; Submit admits through it

	mu sync.Mutex // serialises Attach
}

// maxShards bounds NewMulti's n: far more queues than any pool accepts.
const maxShards = 1 << 16

// NewMulti returns a Multi of n shards, each made by one call of newShard,
// which must return a new channel each time. For n <= 0, n > 65536, a nil
// newShard or a nil shard it returns a Multi with no shards (see Multi)
// rather than panic. NewMulti calls each shard's Queues once; a shard must
// always report the same count.
func NewMulti[C smartpool.Channel](n int, newShard func() C) *Multi[C] {
	m := new(Multi[C])
	if n <= 0 || n > maxShards || newShard == nil {
		return m
	}
	shards := make([]C, n)
	first := make([]int, n+1)
	for s := range shards {
		c := newShard()
		if isNilChannel(c) {
			return m
		}
		shards[s] = c
		first[s+1] = first[s] + max(c.Queues(), 0)
	}
	m.shards, m.first = shards, first
	for s := range shards {
		if first[s+1] == first[s] {
			return m // a shard nothing could poll: Queues 0 refuses the whole Multi
		}
	}
	m.queues = first[n]
	m.single = m.queues == n
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
func (m *Multi[C]) Shards() []C { return append([]C(nil), m.shards...) }

// Next returns the next shard in the rotation Push uses, for typed submits
// such as m.Next().Submit(deadline, fn). It returns the zero C if the Multi
// has no shards.
func (m *Multi[C]) Next() C {
	if len(m.shards) == 0 {
		var zero C
		return zero
	}
	// The counter wraps at 2^32; the rotation then skips a little, harmlessly.
	i := m.next.Add(1) - 1
	return m.shards[i%uint32(len(m.shards))]
}

// Submit queues fn in the next shard with that shard's default ordering (its
// Push). It returns smartpool.ErrNilTask for a nil fn, smartpool.ErrNoQueues
// if the Multi has no shards, smartpool.ErrFull when the pool's in-flight
// limit is reached, and otherwise what the shard's Push returns
// (smartpool.ErrClosed once the pool's Close started). It does not block
// unless opts say so: smartpool.WithContext waits for a unit of the limit
// and cancels fn if ctx ends while it is queued. smartpool.WithDeadline and
// smartpool.WithPriority order fn in the shard, which refuses them with
// smartpool.ErrOption unless it orders by that key (a Multi of Deadline or
// Priority shards).
func (m *Multi[C]) Submit(fn func(ctx context.Context), opts ...smartpool.Option) error {
	if fn == nil {
		return smartpool.ErrNilTask
	}
	b := m.bits.Load()
	if len(opts) > 0 {
		if len(m.shards) == 0 {
			return smartpool.ErrNoQueues
		}
		if b == nil {
			return smartpool.ErrClosed // no pool serves it
		}
		return b.Submit(smartpool.Func(fn), smartpool.Order{}, opts, nil)
	}
	if b == nil {
		return m.Push(smartpool.Func(fn), smartpool.Order{})
	}
	if err := b.Admit(1); err != nil {
		return err
	}
	err := m.Push(b.Stamp(smartpool.Func(fn)), smartpool.Order{})
	if err != nil {
		b.Refund(1)
	}
	return err
}

// Push queues t in the next shard, through the shard's Push; it is the by-key
// submit of smartpool.Pool.Submit. Errors are as for Submit.
//
// Called by the pool; not for users (Pool.Submit is the by-key submit).
func (m *Multi[C]) Push(t smartpool.Task, o smartpool.Order) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	if len(m.shards) == 0 {
		return smartpool.ErrNoQueues
	}
	return m.Next().Push(t, o)
}

// Requeue queues a yielded task re-entering the pool in the next shard,
// through the shard's Requeue; see smartpool.Channel.
//
// Called by the pool; not for users.
func (m *Multi[C]) Requeue(t smartpool.Task) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	if len(m.shards) == 0 {
		return smartpool.ErrNoQueues
	}
	return m.Next().Requeue(t)
}

// Poll polls the shard that owns queue i, with the shard's own queue number;
// it returns nil if that queue is empty or i is out of range.
//
// Called by the pool; not for users.
func (m *Multi[C]) Poll(i int) smartpool.Task {
	s, ok := m.shardOf(i)
	if !ok {
		return nil
	}
	return m.shards[s].Poll(i - m.first[s])
}

// PollOrder is Poll that also returns the task's key when the shard orders
// by one (see smartpool.OrderedPoller), so that a task that yields keeps its
// place in a Multi of Priority or Deadline shards; the pool calls it.
func (m *Multi[C]) PollOrder(i int) (smartpool.Task, smartpool.Order) {
	s, ok := m.shardOf(i)
	if !ok {
		return nil, smartpool.Order{}
	}
	if op, ok := any(m.shards[s]).(smartpool.OrderedPoller); ok {
		return op.PollOrder(i - m.first[s])
	}
	return m.shards[s].Poll(i - m.first[s]), smartpool.Order{}
}

// PollBatch polls queue i by the owning shard's PollBatch if the shard has
// one (see smartpool.BatchPoller), so that a Multi of FIFOs batches as a
// FIFO does, and otherwise by one PollOrder; it stores the tasks' keys in
// keys, if not nil (zero keys for a shard that orders by none).
//
// Called by the pool; not for users.
func (m *Multi[C]) PollBatch(i int, ts []smartpool.Task, keys []smartpool.Order, share int) int {
	s, ok := m.shardOf(i)
	if !ok || len(ts) == 0 {
		return 0
	}
	shard := any(m.shards[s])
	_, ordered := shard.(smartpool.OrderedPoller)
	if bp, ok := shard.(smartpool.BatchPoller); ok {
		var shardKeys []smartpool.Order
		if ordered {
			shardKeys = keys
		}
		n := bp.PollBatch(i-m.first[s], ts, shardKeys, share)
		if keys != nil && !ordered {
			clear(keys[:n])
		}
		return n
	}
	t, o := m.PollOrder(i)
	if t == nil {
		return 0
	}
	ts[0] = t
	if keys != nil {
		keys[0] = o
	}
	return 1
}

// shardOf returns the shard that owns queue i, false if i is out of range.
func (m *Multi[C]) shardOf(i int) (int, bool) {
	if i < 0 || i >= m.queues {
		return 0, false
	}
	if m.single {
		return i, true
	}
	// The shard whose first queue is the last one at most i. first is
	// strictly increasing: queues > 0 means no shard is empty.
	s, found := slices.BinarySearch(m.first, i)
	if !found {
		s--
	}
	return s, true
}

// Len returns the sum of the shards' Len, each read at a different instant
// (see Multi).
func (m *Multi[C]) Len() int {
	n := 0
	for _, s := range m.shards {
		n += s.Len()
	}
	return n
}

// Queues returns the sum of the shards' queue counts, or 0 if the Multi has
// no shards or a shard has no queues.
//
// Called by the pool; not for users.
func (m *Multi[C]) Queues() int { return m.queues }

// Attach binds the Multi to a pool; it is called by smartpool.New. Each shard
// gets the slice of b that covers its own queues. It returns
// smartpool.ErrAttached if the Multi already belongs to a pool, an error if b
// does not cover exactly Queues() queues, and a shard's Attach error
// (wrapped, naming the shard) if a shard refuses, for instance because
// newShard returned the same channel twice or one already attached.
//
// Called by the pool; not for users.
func (m *Multi[C]) Attach(b smartpool.Bits) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.bits.Load(); old != nil && old.Attached() {
		return smartpool.ErrAttached // Bits of a failed New are not: see smartpool.Channel
	}
	if b.Attached() && b.Len() != m.queues {
		return fmt.Errorf("channels: Multi has %d queues, Attach got bits for %d", m.queues, b.Len())
	}
	for s, c := range m.shards {
		var sub smartpool.Bits // unattached b: shards stay unattached too
		if b.Attached() {
			sub = b.Slice(m.first[s], m.first[s+1]-m.first[s])
		}
		if err := c.Attach(sub); err != nil {
			return fmt.Errorf("channels: Multi shard %d: %w", s, err)
		}
	}
	if b.Attached() {
		m.bits.Store(&b)
	}
	return nil
}

// Close closes every shard with the same drop and returns the tasks they
// dropped, shard after shard, each shard's in its own order; it is called by
// the pool's Close.
//
// Called by the pool; not for users.
func (m *Multi[C]) Close(drop bool) []smartpool.Task {
	var out []smartpool.Task
	for _, s := range m.shards {
		out = append(out, s.Close(drop)...)
	}
	return out
}
