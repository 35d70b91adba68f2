package channels

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/internal/queue"
	"github.com/smartpool-go/smartpool/source"
)

// boundedSource is a Bounded's side the pool talks to (source.Source).
type boundedSource struct {
	mu         sync.Mutex
	q          queue.Queue[boundedItem] // guarded by mu
	front      queue.Queue[boundedItem] // re-entries DropOldest stepped over: all older than q's; guarded by mu
	capacity   int                      // guarded by mu
	head, tail *boundedWaiter           // blocked submitters, oldest first; guarded by mu
	waiting    int                      // length of the waiter list; guarded by mu
	closed     bool                     // Close was called; guarded by mu
	dropped    bool                     // Close(true) emptied it: Requeue refuses too; guarded by mu
	bits       source.Bits              // set by Attach before the pool starts; guarded by mu

	queues     int  // 1, or 0 for a Bounded made with capacity < 1; read-only
	dropOldest bool // set by NewBounded, read-only after
	callerRuns bool // set by NewBounded, read-only after

	droppedOldest atomic.Uint64
	callerRan     atomic.Uint64
}

// boundedItem is one queued task.
type boundedItem struct {
	t       smartpool.Task
	requeue bool // a yielded task re-entering: never dropped by DropOldest
}

// Push is SubmitTask without options for a task the pool admitted; it is
// the by-key submit of smartpool.Pool.Submit, which therefore returns
// smartpool.ErrFull for a full Bounded under the default policy.
func (b *boundedSource) Push(t smartpool.Task, o smartpool.Order) error {
	if o.HasDeadline || o.HasPriority {
		return source.Unordered(o)
	}
	return b.offer(t, pushed)
}

// PushWait is Push for the pool's waiting submits (a submit given
// smartpool.WithContext, smartpool.Group.Go), which call it when Push
// returned smartpool.ErrFull: it waits for room (see "Waiting"). Like Push,
// it receives a task that holds its unit of the pool's in-flight limit
// already. It returns nil exactly when it queued t, ctx.Err() if ctx ended
// first, or smartpool.ErrClosed. The pool calls it; users call Submit.
func (b *boundedSource) PushWait(ctx context.Context, t smartpool.Task) error {
	switch {
	case t == nil:
		return smartpool.ErrNilTask
	case ctx.Err() != nil:
		return ctx.Err()
	}
	b.mu.Lock()
	if done, err := b.queueOrHoldLocked(t); done {
		return err
	}
	return b.waitLocked(ctx, t)
}

// offer is the non-blocking submit, with the overflow policy. A submitted
// task takes its unit of the pool's in-flight limit here, and gives it back
// if it is not queued.
func (b *boundedSource) offer(t smartpool.Task, how entry) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	b.mu.Lock()
	bits := b.bits
	if b.refusingLocked() {
		b.mu.Unlock()
		return bits.Refusal()
	}
	if how == submitted {
		if err := bits.Admit(1); err != nil {
			b.mu.Unlock()
			return err
		}
	}
	err := b.offerLocked(how.stamp(bits, t), bits)
	if err != nil && how == submitted {
		bits.Refund(1)
	}
	return err
}

// offerLocked queues t if there is room, or applies the overflow policy; it
// releases the lock.
func (b *boundedSource) offerLocked(t smartpool.Task, bits source.Bits) error {
	if done, err := b.queueOrHoldLocked(t); done {
		return err
	}
	switch {
	case b.dropOldest:
		// Before the eviction: the victim leaves the queue held, so that
		// Close and a removal wait until it ended (source.Bits.Hold).
		bits.Hold(1)
		b.pushLocked(boundedItem{t: t})
		victim := b.evictLocked()
		b.mu.Unlock()
		bits.Wake(1)
		b.drop(victim, bits)
		return nil
	case b.callerRuns:
		bits.Hold(1) // accepted, never queued: a removal waits for its run (source.Bits.Hold)
		b.mu.Unlock()
		defer bits.Unhold(1) // deferred: runtime.Goexit in t unwinds through here
		bits.Refund(1)       // it runs here, outside the pool's count of units
		b.callerRan.Add(1)
		if !bits.RunInTask(t) { // in a task's place, or else on a plain goroutine
			bits.RunHere(context.Background(), t) // counted in the pool's Stats
		}
		return nil
	}
	b.mu.Unlock()
	return errBoundedFull
}

// errBoundedFull is smartpool.ErrFull from a full Bounded: it says how to
// wait for room instead. It is built once, so a producer that retries on it
// allocates nothing.
var errBoundedFull = fmt.Errorf("%w: the Bounded is at its capacity; submit WithContext(ctx) to wait for room", smartpool.ErrFull)

// tryQueueLocked refuses t with smartpool.ErrClosed once admission stopped,
// or queues it if there is room; queued reports the latter.
func (b *boundedSource) tryQueueLocked(t smartpool.Task) (queued bool, err error) {
	if b.refusingLocked() {
		return false, b.bits.Refusal()
	}
	if !b.roomLocked() {
		return false, nil
	}
	b.pushLocked(boundedItem{t: t})
	return true, nil
}

// queueOrHoldLocked settles t if it can at once: it queues t if there is
// room, or refuses it once admission stopped, and then releases the lock
// (done). Otherwise it keeps the lock held for the caller's overflow path.
func (b *boundedSource) queueOrHoldLocked(t smartpool.Task) (done bool, err error) {
	queued, err := b.tryQueueLocked(t)
	switch {
	case queued:
		b.unlockAndWake()
	case err != nil:
		b.mu.Unlock()
	default:
		return false, nil
	}
	return true, err
}

// unlockAndWake releases the lock and wakes a worker for the task just
// queued (the bits are read under the lock: Attach may run concurrently).
func (b *boundedSource) unlockAndWake() {
	bits := b.bits
	b.mu.Unlock()
	bits.Wake(1)
}

// Requeue queues a yielded task re-entering the pool, whatever the room (see
// Bounded); see source.Source. It returns smartpool.ErrClosed only once
// Close(true) emptied the channel, or while no pool holds it.
func (b *boundedSource) Requeue(t smartpool.Task) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	b.mu.Lock()
	if b.dropped || !b.bits.Attached() {
		b.mu.Unlock()
		return b.bits.Refusal()
	}
	b.pushLocked(boundedItem{t: t, requeue: true})
	bits := b.bits
	b.mu.Unlock()
	bits.Wake(1)
	return nil
}

// Poll removes and returns the oldest task, or nil if the Bounded is empty.
// The slot it frees goes to the oldest waiting submit, if any (see Bounded).
func (b *boundedSource) Poll(int) smartpool.Task {
	b.mu.Lock()
	it, ok := b.front.Pop()
	if !ok {
		it, ok = b.q.Pop()
	}
	if !ok {
		b.mu.Unlock()
		return nil
	}
	admitted := 0
	if b.head != nil {
		admitted = b.admitLocked()
	}
	if b.lenLocked() == 0 {
		b.bits.Clear(0)
	}
	bits := b.bits
	b.mu.Unlock()
	bits.Wake(admitted)
	return it.t
}

// Queues returns 1, or 0 for a Bounded made with capacity < 1 (see Bounded).
func (b *boundedSource) Queues() int { return b.queues }

// Attach binds the Bounded to a pool; it is called by smartpool.New. It
// returns smartpool.ErrAttached if the Bounded already belongs to a pool.
func (b *boundedSource) Attach(bits source.Bits) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bits.Attached() {
		return smartpool.ErrAttached
	}
	b.bits = bits
	bits.AdmitsOwnSubmits() // its submit methods take their units
	bits.WakesOutsideLock() // Wake comes after the lock is released
	if b.lenLocked() > 0 {
		b.bits.Set(0)
	}
	return nil
}

// Close stops admission, releases every waiting submit with
// smartpool.ErrClosed and, if drop is set, empties the Bounded and returns its
// tasks oldest first; it is called by the pool's Close.
func (b *boundedSource) Close(drop bool) []smartpool.Task {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.bits.Closing() {
		return nil // a mistaken call while a pool serves it, or before one does: see source.Source
	}
	b.closed = true
	b.dropped = b.dropped || drop
	b.releaseLocked(smartpool.ErrClosed)
	n := b.lenLocked()
	if !drop || n == 0 {
		return nil
	}
	b.bits.Clear(0)
	out := make([]smartpool.Task, 0, n)
	for _, q := range []*queue.Queue[boundedItem]{&b.front, &b.q} {
		for it, ok := q.Pop(); ok; it, ok = q.Pop() {
			out = append(out, it.t)
		}
	}
	return out
}

func (b *boundedSource) lenLocked() int { return b.front.Len() + b.q.Len() }

// roomLocked reports whether a submit may queue its task now. No one may jump
// the waiters' line; while anyone waits the channel is full anyway.
func (b *boundedSource) roomLocked() bool { return b.head == nil && b.lenLocked() < b.capacity }

// refusingLocked reports whether admission stopped: every submit method must
// see it under the lock (see source.Source).
func (b *boundedSource) refusingLocked() bool { return b.closed || b.bits.Closed() }

// pushLocked queues it, keeping the bit rule of source.Source.
func (b *boundedSource) pushLocked(it boundedItem) {
	b.q.Push(it)
	if b.lenLocked() == 1 {
		b.bits.Set(0)
	}
}

// evictLocked removes and returns the oldest submitted task. The re-entries
// queued before it move to front, which Poll serves first, so the order of
// everything else is kept. q holds at least one submitted task (the one just
// pushed), and the Bounded stays non-empty: it was full before that push.
func (b *boundedSource) evictLocked() smartpool.Task {
	for {
		it, _ := b.q.Pop()
		if !it.requeue {
			return it.t
		}
		b.front.Push(it)
	}
}

// drop reports a task DropOldest displaced, releasing its unit of the
// pool's in-flight limit, and ends the Hold its displacement took. It runs
// without the lock.
func (b *boundedSource) drop(t smartpool.Task, bits source.Bits) {
	defer bits.Unhold(1) // after Discard ended it, OnEnd included
	// Discard reports false for a task its submitter cancelled, reported already.
	if bits.Discard(t, smartpool.DroppedDisplaced) {
		b.droppedOldest.Add(1)
	}
}

// len is Bounded.Len.
func (b *boundedSource) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lenLocked()
}

// capNow is Bounded.Cap.
func (b *boundedSource) capNow() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.capacity
}

// waitingNow is Bounded.Waiting.
func (b *boundedSource) waitingNow() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting
}

// setCapacity is Bounded.SetCapacity.
func (b *boundedSource) setCapacity(n int) {
	if b.queues == 0 {
		return
	}
	b.mu.Lock()
	b.capacity = max(n, 1)
	admitted := 0
	if b.head != nil {
		admitted = b.admitLocked()
	}
	bits := b.bits
	b.mu.Unlock()
	bits.Wake(admitted)
}

// bitsNow returns the Bounded's Bits, read under mu: Attach may run
// concurrently.
func (b *boundedSource) bitsNow() source.Bits {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bits
}
