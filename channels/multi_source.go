package channels

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/source"
)

// multiSource is a Multi's side the pool talks to (source.Source): it
// routes each call to the Source of the shard that owns the queue, or of
// the next shard in the rotation.
type multiSource[C smartpool.Channel] struct {
	shards []C                         // read-only after NewMulti
	srcs   []source.Source             // srcs[s]: shards[s]'s Source; read-only after NewMulti
	first  []int                       // first[s]: the Multi's queue number of shard s's queue 0; read-only
	single bool                        // every shard has one queue, so queue i is shard i; read-only
	queues int                         // read-only; 0 if any shard has no queues
	next   atomic.Uint32               // pushes and Next calls so far: the rotation
	bits   atomic.Pointer[source.Bits] // set by Attach under mu; Submit admits through it

	mu sync.Mutex // serialises Attach
}

// nextShard returns the index of the next shard in the rotation; the Multi
// has shards.
func (m *multiSource[C]) nextShard() int {
	// The counter wraps at 2^32; the rotation then skips a little, harmlessly.
	i := m.next.Add(1) - 1
	return int(i % uint32(len(m.shards)))
}

// Push queues t in the next shard, through the shard's Push, with o: the
// by-key submit of smartpool.Pool.Submit, and the Multi's submits given
// options. It returns smartpool.ErrNoQueues if the Multi has no shards.
func (m *multiSource[C]) Push(t smartpool.Task, o smartpool.Order) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	if len(m.shards) == 0 {
		return smartpool.ErrNoQueues
	}
	return m.srcs[m.nextShard()].Push(t, o)
}

// Requeue queues a yielded task re-entering the pool in the next shard,
// through the shard's Requeue; see source.Source.
func (m *multiSource[C]) Requeue(t smartpool.Task) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	if len(m.shards) == 0 {
		return smartpool.ErrNoQueues
	}
	return m.srcs[m.nextShard()].Requeue(t)
}

// Poll polls the shard that owns queue i, with the shard's own queue number;
// it returns nil if that queue is empty or i is out of range.
func (m *multiSource[C]) Poll(i int) smartpool.Task {
	s, ok := m.shardOf(i)
	if !ok {
		return nil
	}
	return m.srcs[s].Poll(i - m.first[s])
}

// PollOrder is Poll that also returns the task's key when the shard orders
// by one (see source.OrderedPoller), so that a task that yields keeps its
// place in a Multi of Priority or Deadline shards; the pool calls it.
func (m *multiSource[C]) PollOrder(i int) (smartpool.Task, smartpool.Order) {
	s, ok := m.shardOf(i)
	if !ok {
		return nil, smartpool.Order{}
	}
	if op, ok := m.srcs[s].(source.OrderedPoller); ok {
		return op.PollOrder(i - m.first[s])
	}
	return m.srcs[s].Poll(i - m.first[s]), smartpool.Order{}
}

// PollBatch polls queue i by the owning shard's PollBatch if the shard has
// one (see source.BatchPoller), so that a Multi of FIFOs batches as a
// FIFO does, and otherwise by one PollOrder; it stores the tasks' keys in
// keys, if not nil (zero keys for a shard that orders by none).
func (m *multiSource[C]) PollBatch(i int, ts []smartpool.Task, keys []smartpool.Order, share int) int {
	s, ok := m.shardOf(i)
	if !ok || len(ts) == 0 {
		return 0
	}
	shard := m.srcs[s]
	_, ordered := shard.(source.OrderedPoller)
	if bp, ok := shard.(source.BatchPoller); ok {
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
func (m *multiSource[C]) shardOf(i int) (int, bool) {
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

// Queues returns the sum of the shards' queue counts, or 0 if the Multi has
// no shards or a shard has no queues.
func (m *multiSource[C]) Queues() int { return m.queues }

// Attach binds the Multi to a pool; it is called by smartpool.New. Each shard
// gets the slice of b that covers its own queues. It returns
// smartpool.ErrAttached if the Multi already belongs to a pool, an error if b
// does not cover exactly Queues() queues, and a shard's Attach error
// (wrapped, naming the shard) if a shard refuses, for instance because
// newShard returned the same channel twice or one already attached.
func (m *multiSource[C]) Attach(b source.Bits) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.bits.Load(); old != nil && old.Attached() {
		return smartpool.ErrAttached // Bits of a failed New are not: see source.Source
	}
	if b.Attached() && b.Len() != m.queues {
		return fmt.Errorf("channels: Multi has %d queues, Attach got bits for %d", m.queues, b.Len())
	}
	for s, c := range m.srcs {
		var sub source.Bits // unattached b: shards stay unattached too
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
func (m *multiSource[C]) Close(drop bool) []smartpool.Task {
	var out []smartpool.Task
	for _, s := range m.srcs {
		out = append(out, s.Close(drop)...)
	}
	return out
}
