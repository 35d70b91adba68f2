package channels

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/internal/queue"
	"github.com/smartpool-go/smartpool/source"
)

// keyedSource is a Keyed's side the pool talks to (source.Source).
type keyedSource[G comparable] struct {
	mu sync.Mutex
	// Invariants, each holding whenever mu is free:
	//  - groups holds exactly the groups with queued > 0 or running > 0;
	//  - ready holds exactly the groups with queued > 0 and running < limit,
	//    as a min-heap on their head task's seq, each at its own index;
	//  - bitSet == (requeued.Len() > 0 || len(ready) > 0), and the pool's bit
	//    was last Set or Cleared to match it (see updateBitLocked).
	groups   map[G]*keyedGroup[G]        // guarded by mu
	ready    []*keyedGroup[G]            // guarded by mu
	requeued queue.Queue[smartpool.Task] // re-entries, served first; guarded by mu
	queued   int                         // submitted tasks waiting, over all groups; guarded by mu
	running  int                         // tasks handed out whose Run has not ended; guarded by mu
	limit    int                         // in-progress tasks allowed per group; 0 for the zero Keyed; guarded by mu
	seq      uint64                      // submissions so far: the age order; guarded by mu
	bitSet   bool                        // what the availability bit was last set to; guarded by mu
	closed   bool                        // Close was called; guarded by mu
	dropped  bool                        // Close(true) emptied it: Requeue refuses too; guarded by mu
	bits     source.Bits                 // set by Attach before the pool starts; guarded by mu
}

// keyedGroup is the state of one active group. Every field is guarded by
// its Keyed's mu.
type keyedGroup[G comparable] struct {
	key        G
	head, tail *keyedTask[G] // queued tasks, oldest first, linked by next
	queued     int
	running    int // tasks of the group handed out whose Run has not ended
	index      int // position in the Keyed's ready heap, or -1
}

// keyedTask wraps a submitted task: it links the task into its group's list
// and gives the group's slot back when Run ends.
type keyedTask[G comparable] struct {
	k    *keyedSource[G]
	g    *keyedGroup[G] // set at submit; valid until Run ends, as the group stays active
	t    smartpool.Task // read-only
	seq  uint64         // read-only
	next *keyedTask[G]  // guarded by k.mu
}

// Run runs the submitted task, then gives back its group's slot, even if the
// task panics or calls runtime.Goexit.
func (kt *keyedTask[G]) Run(ctx context.Context) {
	defer kt.k.release(kt.g)
	kt.t.Run(ctx)
}

// Unwrap returns the task as it was submitted.
func (kt *keyedTask[G]) Unwrap() smartpool.Task { return kt.t }

// Push queues t under the zero value of G: the by-key submit of
// smartpool.Pool.Submit. Every task submitted that way shares that one group
// and its limit.
func (k *keyedSource[G]) Push(t smartpool.Task, o smartpool.Order) error {
	if o.HasDeadline || o.HasPriority {
		return source.Unordered(o)
	}
	var zero G
	return k.push(zero, t, pushed)
}

func (k *keyedSource[G]) push(group G, t smartpool.Task, how entry) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	kt := &keyedTask[G]{k: k, t: t} // allocated before locking
	k.mu.Lock()
	if err := how.admitLocked(k.bits, k.dropped, k.closed); err != nil {
		k.mu.Unlock()
		return err
	}
	kt.t = how.stamp(k.bits, t)
	g := k.groups[group]
	if g == nil {
		if k.groups == nil {
			k.groups = make(map[G]*keyedGroup[G])
		}
		g = &keyedGroup[G]{key: group, index: -1}
		k.groups[group] = g
	}
	k.seq++
	kt.g, kt.seq = g, k.seq
	if g.tail == nil {
		g.head = kt
	} else {
		g.tail.next = kt
	}
	g.tail = kt
	g.queued++
	k.queued++
	// A group not in ready but under its limit had nothing queued: kt is its
	// head, and it may run now.
	if g.index < 0 && g.running < k.limit {
		k.pushReadyLocked(g)
	}
	eligible := g.index >= 0
	k.updateBitLocked()
	b := k.bits // read under mu: Attach may run concurrently
	k.mu.Unlock()
	if eligible {
		b.Wake(1)
	}
	return nil
}

// Requeue queues a yielded task re-entering the pool, outside every group
// and ahead of the submitted tasks (see Keyed); see source.Source. It
// returns smartpool.ErrClosed only once Close(true) emptied the channel.
func (k *keyedSource[G]) Requeue(t smartpool.Task) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	k.mu.Lock()
	if err := requeued.admitLocked(k.bits, k.dropped, k.closed); err != nil {
		k.mu.Unlock()
		return err
	}
	k.requeued.Push(t)
	k.updateBitLocked()
	b := k.bits
	k.mu.Unlock()
	b.Wake(1)
	return nil
}

// Poll removes and returns the oldest re-entry, or else the oldest submitted
// task whose group is under its limit, wrapped (see Keyed); it returns nil if
// there is neither. From then until the returned task's Run ends, the task
// holds one of its group's slots.
func (k *keyedSource[G]) Poll(int) smartpool.Task {
	k.mu.Lock()
	defer k.mu.Unlock()
	if t, ok := k.requeued.Pop(); ok {
		k.updateBitLocked()
		return t
	}
	if len(k.ready) == 0 {
		return nil
	}
	g := k.ready[0]
	kt := g.head
	g.head, kt.next = kt.next, nil
	if g.head == nil {
		g.tail = nil
	}
	g.queued--
	g.running++
	k.queued--
	k.running++
	if g.queued == 0 || g.running >= k.limit {
		k.removeTopLocked()
	} else {
		k.downLocked(0) // the group's head is younger now
	}
	k.updateBitLocked()
	return kt
}

// release gives back a slot of g when a task's Run ends. It may make g
// eligible again: then it sets the bit, if no group was eligible, and wakes
// a worker after unlocking, so that a waiting task never sits queued while
// every worker sleeps.
func (k *keyedSource[G]) release(g *keyedGroup[G]) {
	k.mu.Lock()
	g.running--
	k.running--
	eligible := false
	switch {
	case g.queued > 0 && g.index < 0 && g.running < k.limit:
		k.pushReadyLocked(g)
		k.updateBitLocked()
		eligible = true
	case g.queued == 0 && g.running == 0:
		delete(k.groups, g.key)
	}
	b := k.bits
	k.mu.Unlock()
	if eligible {
		b.Wake(1)
	}
}

// Queues returns 1, or 0 for a Keyed without a limit: a zero Keyed, which
// holds no Source anyway.
func (k *keyedSource[G]) Queues() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.limit == 0 {
		return 0
	}
	return 1
}

// Attach binds the Keyed to a pool; it is called by smartpool.New. It
// returns smartpool.ErrAttached if the Keyed already belongs to a pool.
func (k *keyedSource[G]) Attach(b source.Bits) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.bits.Attached() {
		return smartpool.ErrAttached
	}
	k.bits = b
	b.AdmitsOwnSubmits() // Submit and SubmitTask take their units (entry.go)
	b.WakesOutsideLock() // Wake comes after the lock is released
	if k.bitSet {
		k.bits.Set(0)
	}
	return nil
}

// Close stops admission and, if drop is set, empties the Keyed and returns
// its tasks: re-entries first, as they are, then the submitted tasks, oldest
// first, as they were submitted (not wrapped). It is called by the pool's
// Close. Tasks in progress keep their slots until their Run ends.
func (k *keyedSource[G]) Close(drop bool) []smartpool.Task {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.bits.Closing() {
		return nil // a mistaken call while a pool serves it, or before one does: see source.Source
	}
	k.closed = true
	k.dropped = k.dropped || drop
	if !drop || k.queued+k.requeued.Len() == 0 {
		return nil
	}
	out := k.requeued.Drain()
	waiting := make([]*keyedTask[G], 0, k.queued)
	for key, g := range k.groups {
		for kt := g.head; kt != nil; kt = kt.next {
			waiting = append(waiting, kt)
		}
		g.head, g.tail, g.queued, g.index = nil, nil, 0, -1
		if g.running == 0 {
			delete(k.groups, key)
		}
	}
	slices.SortFunc(waiting, func(a, b *keyedTask[G]) int { return cmp.Compare(a.seq, b.seq) })
	for _, kt := range waiting {
		out = append(out, kt.t)
	}
	k.queued = 0
	clear(k.ready)
	k.ready = k.ready[:0]
	k.updateBitLocked()
	return out
}

// updateBitLocked keeps the bit rule of source.Source: the bit is set
// while a re-entry is queued or a group may run, and clear otherwise. Every
// method that changes either calls it before unlocking.
func (k *keyedSource[G]) updateBitLocked() {
	avail := k.requeued.Len() > 0 || len(k.ready) > 0
	if avail == k.bitSet {
		return
	}
	k.bitSet = avail
	if avail {
		k.bits.Set(0)
	} else {
		k.bits.Clear(0)
	}
}

// The ready heap: a binary min-heap of groups on their head task's seq, each
// group keeping its index.
func (k *keyedSource[G]) pushReadyLocked(g *keyedGroup[G]) {
	g.index = len(k.ready)
	k.ready = append(k.ready, g)
	k.upLocked(g.index)
}

func (k *keyedSource[G]) removeTopLocked() {
	h := k.ready
	n := len(h) - 1
	top := h[0]
	h[0] = h[n]
	h[n] = nil // do not retain the group after it left
	k.ready = h[:n]
	top.index = -1
	if n > 0 {
		k.downLocked(0)
	}
}

func (k *keyedSource[G]) upLocked(i int) {
	h := k.ready
	g := h[i]
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].head.seq <= g.head.seq {
			break
		}
		h[i] = h[parent]
		h[i].index = i
		i = parent
	}
	h[i] = g
	g.index = i
}

func (k *keyedSource[G]) downLocked(i int) {
	h := k.ready
	n := len(h)
	g := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].head.seq < h[c].head.seq {
			c = r
		}
		if g.head.seq <= h[c].head.seq {
			break
		}
		h[i] = h[c]
		h[i].index = i
		i = c
	}
	h[i] = g
	g.index = i
}

// bitsNow returns the Keyed's Bits, read under mu: Attach may run
// concurrently.
func (k *keyedSource[G]) bitsNow() source.Bits {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.bits
}

// setLimit is Keyed.SetLimit.
func (k *keyedSource[G]) setLimit(n int) error {
	if n < 1 {
		return fmt.Errorf("channels: Keyed.SetLimit(%d): %w", n, smartpool.ErrBadLimit)
	}
	k.mu.Lock()
	k.limit = n
	before := len(k.ready)
	clear(k.ready)
	k.ready = k.ready[:0]
	for _, g := range k.groups {
		g.index = -1
		if g.queued > 0 && g.running < n {
			g.index = len(k.ready)
			k.ready = append(k.ready, g)
		}
	}
	for i := len(k.ready)/2 - 1; i >= 0; i-- {
		k.downLocked(i)
	}
	added := len(k.ready) - before
	k.updateBitLocked()
	b := k.bits
	k.mu.Unlock()
	b.Wake(added)
	return nil
}

// limitNow is Keyed.Limit.
func (k *keyedSource[G]) limitNow() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.limit
}

// len is Keyed.Len.
func (k *keyedSource[G]) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.queued + k.requeued.Len()
}

// runningOf is Keyed.Running.
func (k *keyedSource[G]) runningOf(group G) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if g := k.groups[group]; g != nil {
		return g.running
	}
	return 0
}

// stats is Keyed.Stats.
func (k *keyedSource[G]) stats() KeyedStats {
	k.mu.Lock()
	defer k.mu.Unlock()
	return KeyedStats{
		Queued:  k.queued + k.requeued.Len(),
		Running: k.running,
		Groups:  len(k.groups),
		Ready:   len(k.ready),
		Limit:   k.limit,
	}
}
