package channels

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/internal/queue"
	"github.com/smartpool-go/smartpool/source"
)

// fifoSource is a FIFO's side the pool talks to (source.Source).
type fifoSource struct {
	// tail guards the submitting side: admission (closed, dropped,
	// Bits.Closed) and pushes. Close and Attach take it, then head.
	tail    sync.Mutex
	closed  bool // Close was called; guarded by tail
	dropped bool // Close(true) emptied it: Requeue refuses too; guarded by tail and head
	_       cacheLine

	// head guards the polling side. The two sides' locks are on separate
	// cache lines, or workers polling would slow producers down anyway.
	head sync.Mutex
	_    cacheLine

	q      queue.TwoLock[smartpool.Task] // pushes under tail, pops under head
	bitSet atomic.Bool                   // the availability bit is set, or about to be (see Poll)
	bits   source.Bits                   // set by Attach under both locks
}

// bitsNow returns the FIFO's Bits, read under the lock: Attach may run
// concurrently.
func (f *fifoSource) bitsNow() source.Bits {
	f.tail.Lock()
	defer f.tail.Unlock()
	return f.bits
}

// Push queues t, which the pool admitted (source.Source).
func (f *fifoSource) Push(t smartpool.Task, o smartpool.Order) error {
	if o.HasDeadline || o.HasPriority {
		return source.Unordered(o)
	}
	return f.push(t, pushed)
}

// Requeue queues a yielded task re-entering the pool (source.Source).
func (f *fifoSource) Requeue(t smartpool.Task) error { return f.push(t, requeued) }

func (f *fifoSource) push(t smartpool.Task, how entry) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	f.tail.Lock()
	if err := how.admitLocked(f.bits, f.dropped, f.closed); err != nil {
		f.tail.Unlock()
		return err
	}
	f.q.Push(how.stamp(f.bits, t))
	f.setBitLocked()
	b := f.bits // read under the lock: Attach may run concurrently
	f.tail.Unlock()
	b.Wake(1)
	return nil
}

// submitBatch is FIFO.SubmitBatch.
func (f *fifoSource) submitBatch(fns []func(ctx context.Context)) error {
	for _, fn := range fns {
		if fn == nil {
			return smartpool.ErrNilTask
		}
	}
	f.tail.Lock()
	if f.closed || f.bits.Closed() {
		f.tail.Unlock()
		return f.bits.Refusal()
	}
	if err := f.bits.Admit(len(fns)); err != nil {
		f.tail.Unlock()
		return err
	}
	for _, fn := range fns {
		f.q.Write(f.bits.Stamp(smartpool.Func(fn)))
	}
	f.q.Publish() // the batch appears at once
	f.setBitLocked()
	b := f.bits
	f.tail.Unlock()
	b.Wake(len(fns))
	return nil
}

// setBitLocked sets the availability bit after a push, unless it is set. The
// caller holds tail.
func (f *fifoSource) setBitLocked() {
	if !f.bitSet.Load() {
		f.bitSet.Store(true)
		f.bits.Set(0)
	}
}

// Poll removes and returns the oldest task, or nil if the FIFO is empty.
func (f *fifoSource) Poll(int) smartpool.Task {
	f.head.Lock()
	t, _, left := f.q.Pop()
	f.unlockHead(left)
	return t
}

// PollBatch removes the oldest tasks into ts, as many as successive Polls
// would return up to len(ts) and ⌈n/share⌉ of the n it holds (see
// source.BatchPoller), under one hold of the polling side's lock, and
// returns how many. A FIFO has no keys: keys is ignored.
func (f *fifoSource) PollBatch(_ int, ts []smartpool.Task, _ []smartpool.Order, share int) int {
	if len(ts) == 0 {
		return 0
	}
	f.head.Lock()
	want := min(len(ts), max((f.q.Ready()+share-1)/max(share, 1), 1))
	n, left := 0, 0
	for n < want {
		t, ok, l := f.q.Pop()
		if !ok {
			break
		}
		ts[n], left = t, l
		n++
	}
	f.unlockHead(left)
	return n
}

// unlockHead ends a poll whose last Pop reported left tasks, by unlocking
// head; first, if the FIFO looks empty, it clears the availability bit.
//
// The bit rule (source.Source) without a lock common to both sides: a
// pusher publishes its task, then sets the bit unless bitSet reads true. The
// poll that leaves (or finds) the FIFO empty clears the bit if bitSet reads
// true or the bit itself reads set (a pusher may have stored bitSet true and
// not yet set the bit when an earlier poll stored false: its Set lands
// later, on an empty FIFO), in this order: store bitSet false, clear, look
// again, and set both back, then wake a worker, if the FIFO is not empty or
// bitSet reads true (a pusher stored true after our store and its Set may
// have come before our Clear). internal/model/park.pml checks this protocol,
// with the three orderings that lose a task or leave a stale bit as
// mutants.
func (f *fifoSource) unlockHead(left int) {
	if left != 0 || !f.bitSet.Load() && !f.bits.Has(0) {
		f.head.Unlock()
		return
	}
	f.bitSet.Store(false)
	f.bits.Clear(0)
	back := f.q.Len() > 0 || f.bitSet.Load()
	if back {
		f.bitSet.Store(true)
		f.bits.Set(0)
	}
	b := f.bits
	f.head.Unlock()
	if back {
		b.Wake(1) // while the bit read clear, a worker may have parked
	}
}

// len is FIFO.Len: exact at one instant, under the polling side's lock.
func (f *fifoSource) len() int {
	f.head.Lock()
	defer f.head.Unlock()
	return f.q.Len()
}

// Queues returns 1: a FIFO is one queue.
func (f *fifoSource) Queues() int { return 1 }

// Attach binds the FIFO to a pool; it is called by smartpool.New. It returns
// smartpool.ErrAttached if the FIFO already belongs to a pool.
func (f *fifoSource) Attach(b source.Bits) error {
	f.tail.Lock()
	defer f.tail.Unlock()
	f.head.Lock()
	defer f.head.Unlock()
	if f.bits.Attached() {
		return smartpool.ErrAttached
	}
	f.bits = b
	b.AdmitsOwnSubmits() // Submit and SubmitBatch take their units (entry.go)
	b.WakesOutsideLock() // Wake comes after the lock is released
	if f.q.Len() > 0 {
		f.bitSet.Store(true)
		f.bits.Set(0)
	}
	return nil
}

// Close stops admission and, if drop is set, empties the FIFO and returns
// its tasks oldest first; it is called by the pool's Close.
func (f *fifoSource) Close(drop bool) []smartpool.Task {
	f.tail.Lock()
	defer f.tail.Unlock()
	f.head.Lock()
	defer f.head.Unlock()
	if !f.bits.Closing() {
		return nil // a mistaken call while a pool serves it, or before one does: see source.Source
	}
	f.closed = true
	f.dropped = f.dropped || drop
	if !drop || f.q.Len() == 0 {
		return nil
	}
	f.bitSet.Store(false)
	f.bits.Clear(0)
	return f.q.Drain()
}
