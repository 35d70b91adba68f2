package channels

import (
	"context"

	"github.com/smartpool-go/smartpool"
)

// A Bounded's waiters: submits given a context that found it full, waiting
// for room (see "Waiting: hand-off admission" in Bounded).

// boundedWaiter is a submit blocked on a full Bounded. Every field but ready
// is guarded by the Bounded's mu; ready is closed, under mu, once settled.
type boundedWaiter struct {
	t          smartpool.Task // nil once settled
	ready      chan struct{}
	err        error // the outcome: nil (queued) or smartpool.ErrClosed
	settled    bool
	prev, next *boundedWaiter
}

// waitLocked queues t as a waiter for room and waits until it is settled or
// ctx ends; it releases the lock.
func (b *boundedSource) waitLocked(ctx context.Context, t smartpool.Task) error {
	w := &boundedWaiter{t: t, ready: make(chan struct{})}
	b.appendWaiterLocked(w)
	b.mu.Unlock()
	var err error
	smartpool.Yield(ctx, func() { err = b.await(ctx, w) })
	return err
}

// await waits until w is settled or ctx ends, and returns the submit's
// result.
func (b *boundedSource) await(ctx context.Context, w *boundedWaiter) error {
	select {
	case <-w.ready:
		return w.err // written before ready was closed
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.settled { // settled as ctx ended: that outcome stands
		return w.err
	}
	b.removeWaiterLocked(w)
	w.t = nil
	return ctx.Err()
}

// admitLocked hands free slots to waiters, oldest first, and returns how many
// tasks it queued; once admission stopped it releases every waiter with
// smartpool.ErrClosed instead. See "Waiting: hand-off admission".
func (b *boundedSource) admitLocked() int {
	if b.refusingLocked() {
		b.releaseLocked(b.bits.Refusal())
		return 0
	}
	n := 0
	for b.head != nil && b.lenLocked() < b.capacity {
		w := b.head
		b.removeWaiterLocked(w)
		b.pushLocked(boundedItem{t: w.t})
		settleLocked(w, nil)
		n++
	}
	return n
}

// releaseLocked settles every waiter with err.
func (b *boundedSource) releaseLocked(err error) {
	for b.head != nil {
		w := b.head
		b.removeWaiterLocked(w)
		settleLocked(w, err)
	}
}

func settleLocked(w *boundedWaiter, err error) {
	w.t, w.err, w.settled = nil, err, true
	close(w.ready)
}

func (b *boundedSource) appendWaiterLocked(w *boundedWaiter) {
	w.prev = b.tail
	if b.tail == nil {
		b.head = w
	} else {
		b.tail.next = w
	}
	b.tail = w
	b.waiting++
}

func (b *boundedSource) removeWaiterLocked(w *boundedWaiter) {
	if w.prev == nil {
		b.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		b.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
	b.waiting--
}
