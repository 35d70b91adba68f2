package channels

import (
	"cmp"
	"slices"
	"sync"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/source"
)

// prioritySource is a Priority's side the pool talks to (source.Source).
type prioritySource struct {
	mu      sync.Mutex
	heap    []prioItem  // a binary heap under prioItem.before; guarded by mu
	seq     uint64      // submissions so far, the tie-breaker; guarded by mu
	closed  bool        // Close was called; guarded by mu
	dropped bool        // Close(true) emptied it: Requeue refuses too; guarded by mu
	bits    source.Bits // set by Attach before the pool starts; guarded by mu
	// pos is the heap index of each indexed task (PushIndexed: a task
	// submitted with smartpool.WithHandle), for Reorder; nil until the
	// first. Only items whose seq has the indexed bit are in it, so the
	// heap's moves of other items cost one bit test. Guarded by mu.
	pos map[smartpool.Task]int
}

type prioItem struct {
	prio int
	seq  uint64 // the submission number, shifted left once; the low bit is indexed
	task smartpool.Task
}

// indexed is the low bit of prioItem.seq: the item's task is in pos. The
// submission number above it keeps the order of submission.
const indexed = 1

// before reports whether a runs before b: higher priority, then older.
func (a *prioItem) before(b *prioItem) bool {
	if a.prio != b.prio {
		return a.prio > b.prio
	}
	return a.seq < b.seq
}

// Requeue queues a yielded task re-entering the pool; see source.Source.
// It keeps the priority the task was first queued with if that came from a
// Priority (see source.OrderedPoller), and gets priority 0 otherwise.
func (p *prioritySource) Requeue(t smartpool.Task) error { return p.push(0, t, requeued) }

func (p *prioritySource) push(prio int, t smartpool.Task, how entry) error {
	return p.pushAt(prio, t, how, 0)
}

// pushAt is push, with the indexed bit in mark (0 or indexed).
func (p *prioritySource) pushAt(prio int, t smartpool.Task, how entry, mark uint64) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	p.mu.Lock()
	if err := how.admitLocked(p.bits, p.dropped, p.closed); err != nil {
		p.mu.Unlock()
		return err
	}
	if how == requeued {
		if o, ok := p.bits.OrderOf(t); ok && o.HasPriority {
			prio = o.Priority // a yielded task keeps its place
		}
	}
	p.seq++
	if mark != 0 && p.pos == nil {
		p.pos = make(map[smartpool.Task]int)
	}
	p.heap = append(p.heap, prioItem{prio: prio, seq: p.seq<<1 | mark, task: how.stamp(p.bits, t)})
	p.upLocked(len(p.heap) - 1)
	if len(p.heap) == 1 {
		p.bits.Set(0)
	}
	b := p.bits // read under mu: Attach may run concurrently
	p.mu.Unlock()
	b.Wake(1)
	return nil
}

// Push queues t with o's priority, or priority 0 for an Order without one
// (the by-key submit of smartpool.Pool.Submit without WithPriority): such a
// task runs after queued tasks of positive priority and before those of
// negative priority.
func (p *prioritySource) Push(t smartpool.Task, o smartpool.Order) error {
	if o.HasDeadline {
		return source.Unordered(o)
	}
	return p.push(o.Priority, t, pushed) // 0 for the zero Order
}

// PushIndexed is Push for a task submitted with smartpool.WithHandle: it is
// indexed for Reorder (see source.Reorderer).
func (p *prioritySource) PushIndexed(t smartpool.Task, o smartpool.Order) error {
	if o.HasDeadline {
		return source.Unordered(o)
	}
	return p.pushAt(o.Priority, t, pushed, indexed)
}

// Reorder gives the indexed task t priority o.Priority (0 for the zero
// Order, as Push), keeping its submission number, and restores the heap
// around it; see source.Reorderer.
func (p *prioritySource) Reorder(t smartpool.Task, o smartpool.Order) error {
	if o.HasDeadline {
		return source.Unordered(o)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	i, ok := p.pos[t]
	if !ok {
		return smartpool.ErrNotQueued
	}
	old := p.heap[i].prio
	p.heap[i].prio = o.Priority
	if o.Priority > old {
		p.upLocked(i)
	} else {
		p.downLocked(i)
	}
	return nil
}

// placed records, for Reorder, that the item now at heap index i is there,
// if its task is indexed.
func (p *prioritySource) placed(i int) {
	if it := &p.heap[i]; it.seq&indexed != 0 {
		p.pos[it.task] = i
	}
}

// Poll removes and returns the task with the highest priority, or nil if the
// Priority is empty.
func (p *prioritySource) Poll(int) smartpool.Task {
	t, _ := p.PollOrder(0)
	return t
}

// PollOrder is Poll that also returns the task's priority; the pool calls
// it (see source.OrderedPoller) so that a task that yields keeps its
// priority when it re-enters.
func (p *prioritySource) PollOrder(int) (smartpool.Task, smartpool.Order) {
	p.mu.Lock()
	n := len(p.heap) - 1
	if n < 0 {
		p.mu.Unlock()
		return nil, smartpool.Order{}
	}
	t, prio := p.heap[0].task, p.heap[0].prio
	if p.heap[0].seq&indexed != 0 {
		delete(p.pos, t)
	}
	p.heap[0] = p.heap[n]
	p.heap[n] = prioItem{} // do not retain the task after it left
	p.heap = p.heap[:n]
	if n > 0 {
		p.downLocked(0)
	} else {
		p.bits.Clear(0)
	}
	p.mu.Unlock()
	return t, smartpool.Order{Priority: prio, HasPriority: true}
}

func (p *prioritySource) upLocked(i int) {
	h := p.heap
	it := h[i]
	for i > 0 {
		parent := (i - 1) / 2
		if !it.before(&h[parent]) {
			break
		}
		h[i] = h[parent]
		p.placed(i)
		i = parent
	}
	h[i] = it
	p.placed(i)
}

func (p *prioritySource) downLocked(i int) {
	h := p.heap
	n := len(h)
	it := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].before(&h[c]) {
			c = r
		}
		if !h[c].before(&it) {
			break
		}
		h[i] = h[c]
		p.placed(i)
		i = c
	}
	h[i] = it
	p.placed(i)
}

// Queues returns 1: a Priority is one queue.
func (p *prioritySource) Queues() int { return 1 }

// Attach binds the Priority to a pool; it is called by smartpool.New. It
// returns smartpool.ErrAttached if the Priority already belongs to a pool.
func (p *prioritySource) Attach(b source.Bits) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bits.Attached() {
		return smartpool.ErrAttached
	}
	p.bits = b
	b.AdmitsOwnSubmits() // Submit and SubmitTask take their units (entry.go)
	b.WakesOutsideLock() // Wake comes after the lock is released
	if len(p.heap) > 0 {
		p.bits.Set(0)
	}
	return nil
}

// Close stops admission and, if drop is set, empties the Priority and
// returns its tasks in the order Poll would have returned them; it is called
// by the pool's Close.
func (p *prioritySource) Close(drop bool) []smartpool.Task {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.bits.Closing() {
		return nil // a mistaken call while a pool serves it, or before one does: see source.Source
	}
	p.closed = true
	p.dropped = p.dropped || drop
	if !drop || len(p.heap) == 0 {
		return nil
	}
	slices.SortFunc(p.heap, func(a, b prioItem) int {
		if c := cmp.Compare(b.prio, a.prio); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	out := make([]smartpool.Task, len(p.heap))
	for i := range p.heap {
		out[i] = p.heap[i].task
	}
	clear(p.heap)
	p.heap = p.heap[:0]
	clear(p.pos)
	p.bits.Clear(0)
	return out
}

// len is Priority.Len.
func (p *prioritySource) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.heap)
}

// bitsNow returns the Priority's Bits, read under mu: Attach may run
// concurrently.
func (p *prioritySource) bitsNow() source.Bits {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bits
}
