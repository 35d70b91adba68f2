package channels

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/source"
)

// deadlineSource is a Deadline's side the pool talks to (source.Source).
type deadlineSource struct {
	mu       sync.Mutex
	tree     *btree.BTreeG[deadlineItem] // nil until the first submit; guarded by mu
	seq      uint64                      // submissions so far, the tie-breaker; guarded by mu
	closed   bool                        // Close was called; guarded by mu
	dropped  bool                        // Close(true) emptied it: Requeue refuses too; guarded by mu
	bits     source.Bits                 // set by Attach before the pool starts; guarded by mu
	dropLate bool                        // set by NewDeadline, read-only after
	// keys holds the key of each indexed task (PushIndexed: a task
	// submitted with smartpool.WithHandle), for Reorder; nil until the
	// first. Only items marked indexed are in it. Guarded by mu.
	keys map[smartpool.Task]deadlineKey

	late        atomic.Uint64 // written under mu
	droppedLate atomic.Uint64
}

// deadlineItem is one queued task and its key (at, seq).
type deadlineItem struct {
	at   time.Time // monotonic reading stripped
	seq  uint64
	task smartpool.Task
	keep bool // pushed by the pool or re-entering: never dropped as late
	// indexed: the task is in deadlineSource.keys (in the item's padding:
	// an item is no larger for it)
	indexed bool
}

// deadlineKey is an indexed item's place in the tree.
type deadlineKey struct {
	at  time.Time
	seq uint64
}

func deadlineLess(a, b deadlineItem) bool {
	if c := a.at.Compare(b.at); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

// deadlineDegree is the B-tree's degree: nodes hold up to 63 items of 48
// bytes, a few kilobytes, which keeps the tree shallow and the cache warm.
const deadlineDegree = 32

// dropBatch is how many late tasks Poll removes under one lock hold before it
// unlocks to discard them (source.Bits.Discard runs outside the lock).
const dropBatch = 16

// Requeue queues a yielded task re-entering the pool; see source.Source.
// It keeps the deadline the task was first queued with if that came from a
// Deadline (see source.OrderedPoller), and gets the deadline time.Now()
// otherwise. It is never dropped as late.
func (d *deadlineSource) Requeue(t smartpool.Task) error {
	return d.push(time.Now(), t, requeued, true)
}

func (d *deadlineSource) push(deadline time.Time, t smartpool.Task, how entry, keep bool) error {
	return d.pushAt(deadline, t, how, keep, false)
}

// pushAt is push, indexing the task for Reorder if index.
func (d *deadlineSource) pushAt(deadline time.Time, t smartpool.Task, how entry, keep, index bool) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	at := deadline.Round(0) // drop the monotonic reading: see Deadline
	d.mu.Lock()
	if err := how.admitLocked(d.bits, d.dropped, d.closed); err != nil {
		d.mu.Unlock()
		return err
	}
	if how == requeued {
		if o, ok := d.bits.OrderOf(t); ok && o.HasDeadline {
			at = o.Deadline // a yielded task keeps its place
		}
	}
	if d.tree == nil {
		d.tree = btree.NewG(deadlineDegree, deadlineLess)
	}
	d.seq++
	it := deadlineItem{at: at, seq: d.seq, task: how.stamp(d.bits, t), keep: keep, indexed: index}
	if index {
		if d.keys == nil {
			d.keys = make(map[smartpool.Task]deadlineKey)
		}
		d.keys[it.task] = deadlineKey{at: at, seq: it.seq}
	}
	d.tree.ReplaceOrInsert(it)
	if d.tree.Len() == 1 {
		d.bits.Set(0)
	}
	b := d.bits // read under mu: Attach may run concurrently
	d.mu.Unlock()
	b.Wake(1)
	return nil
}

// Push queues t by o's deadline, or, for an Order without one, with the
// deadline time.Now(): the by-key submit of smartpool.Pool.Submit (and of
// Go, Group.Go and timers) without WithDeadline. Such a task runs after
// every queued task whose deadline has already passed and before every task
// due later. It is late as soon as the clock moves on, so it is counted in
// DeadlineStats.Late when it runs, but DropLate never drops it: it had no
// deadline of its own to miss.
func (d *deadlineSource) Push(t smartpool.Task, o smartpool.Order) error {
	return d.pushOrder(t, o, false)
}

// PushIndexed is Push for a task submitted with smartpool.WithHandle: it is
// indexed for Reorder (see source.Reorderer).
func (d *deadlineSource) PushIndexed(t smartpool.Task, o smartpool.Order) error {
	return d.pushOrder(t, o, true)
}

// pushOrder is Push, indexing the task for Reorder if index.
func (d *deadlineSource) pushOrder(t smartpool.Task, o smartpool.Order, index bool) error {
	switch {
	case o.HasPriority:
		return source.Unordered(o)
	case t == nil:
		return smartpool.ErrNilTask
	case o.HasDeadline:
		return d.pushAt(o.Deadline, t, pushed, false, index)
	}
	return d.pushAt(time.Now(), t, pushed, true, index)
}

// Reorder gives the indexed task t deadline o.Deadline, keeping its
// submission number: from then on it has a deadline of its own, which
// DropLate may find late. For the zero Order it is due now and never
// dropped, as for Push. See source.Reorderer.
func (d *deadlineSource) Reorder(t smartpool.Task, o smartpool.Order) error {
	if o.HasPriority {
		return source.Unordered(o)
	}
	at, keep := o.Deadline.Round(0), false
	if !o.HasDeadline {
		at, keep = time.Now().Round(0), true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	k, ok := d.keys[t]
	if !ok {
		return smartpool.ErrNotQueued
	}
	it, _ := d.tree.Delete(deadlineItem{at: k.at, seq: k.seq})
	it.at, it.keep = at, keep
	d.tree.ReplaceOrInsert(it)
	d.keys[t] = deadlineKey{at: at, seq: k.seq}
	return nil
}

// Poll removes and returns the task with the earliest deadline, or nil if the
// Deadline is empty. It reads the clock once, to tell late tasks; with
// DropLate it drops those (see Deadline) and returns the first task that is
// not late, or nil.
func (d *deadlineSource) Poll(int) smartpool.Task {
	t, _ := d.PollOrder(0)
	return t
}

// PollOrder is Poll that also returns the task's deadline; the pool calls it
// (see source.OrderedPoller) so that a task that yields keeps its
// deadline when it re-enters.
func (d *deadlineSource) PollOrder(int) (smartpool.Task, smartpool.Order) {
	now := time.Now()
	for {
		var dropped [dropBatch]smartpool.Task
		n := 0
		var t smartpool.Task
		var at time.Time
		d.mu.Lock()
		for d.tree != nil && d.tree.Len() > 0 {
			it, _ := d.tree.DeleteMin()
			if it.indexed {
				delete(d.keys, it.task)
			}
			if !it.at.Before(now) {
				t, at = it.task, it.at
				break
			}
			if !d.dropLate || it.keep {
				d.late.Add(1)
				t, at = it.task, it.at
				break
			}
			dropped[n] = it.task
			n++
			if n == len(dropped) {
				break
			}
		}
		if (t != nil || n > 0) && d.tree.Len() == 0 {
			d.bits.Clear(0)
		}
		b := d.bits
		d.mu.Unlock()
		for i := range n {
			// Discard releases the task's unit of the pool's in-flight
			// limit; a task its submitter cancelled was reported already.
			if b.Discard(dropped[i], smartpool.DroppedLate) {
				d.droppedLate.Add(1)
			}
		}
		switch {
		case t != nil:
			return t, smartpool.Order{Deadline: at, HasDeadline: true}
		case n < len(dropped):
			return nil, smartpool.Order{}
		}
		// A full batch of late tasks: there may be more.
	}
}

// Queues returns 1: a Deadline is one queue.
func (d *deadlineSource) Queues() int { return 1 }

// Attach binds the Deadline to a pool; it is called by smartpool.New. It
// returns smartpool.ErrAttached if the Deadline already belongs to a pool.
func (d *deadlineSource) Attach(b source.Bits) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bits.Attached() {
		return smartpool.ErrAttached
	}
	d.bits = b
	b.AdmitsOwnSubmits() // Submit and SubmitTask take their units (entry.go)
	b.WakesOutsideLock() // Wake comes after the lock is released
	if d.tree != nil && d.tree.Len() > 0 {
		d.bits.Set(0)
	}
	return nil
}

// Close stops admission and, if drop is set, empties the Deadline and
// returns its tasks earliest deadline first; it is called by the pool's
// Close. Tasks removed this way are not counted in DeadlineStats (the pool
// reports them as dropped on close).
func (d *deadlineSource) Close(drop bool) []smartpool.Task {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.bits.Closing() {
		return nil // a mistaken call while a pool serves it, or before one does: see source.Source
	}
	d.closed = true
	d.dropped = d.dropped || drop
	if !drop || d.tree == nil || d.tree.Len() == 0 {
		return nil
	}
	out := make([]smartpool.Task, 0, d.tree.Len())
	d.tree.Ascend(func(it deadlineItem) bool {
		out = append(out, it.task)
		return true
	})
	d.tree.Clear(true) // nodes kept for reuse are zeroed, the rest are let go
	clear(d.keys)
	d.bits.Clear(0)
	return out
}

// len is Deadline.Len.
func (d *deadlineSource) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tree == nil {
		return 0
	}
	return d.tree.Len()
}

// bitsNow returns the Deadline's Bits, read under mu: Attach may run
// concurrently.
func (d *deadlineSource) bitsNow() source.Bits {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.bits
}
