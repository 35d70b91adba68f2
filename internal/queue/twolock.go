package queue

import "sync/atomic"

// TwoLock is an unbounded FIFO for one side that pushes and one side that
// pops at the same time, in the manner of Michael and Scott's two-lock
// queue: pushes hold the caller's tail lock, pops the caller's head lock, so
// producers never wait for consumers. Values are kept in segments of
// segSize; popped slots are zeroed.
//
// Publication: a push writes its slot (and, at a segment boundary, links the
// new segment first), then stores pushed; a pop loads pushed and reads only
// slots below it. The atomic store and load order the plain writes before
// the reads, so segments need no atomics of their own. Up to twoLockSpares
// drained segments are kept for reuse (spare), handed from the popping side
// to the pushing side through atomic pointers.
//
// The zero TwoLock is empty and ready to use.
type TwoLock[T any] struct {
	// Pushing side: guarded by the caller's tail lock.
	tail    *segment[T]
	end     int          // index after the newest value in tail
	written int64        // values written so far, published or not
	pushed  atomic.Int64 // values published so far; stored only by the pushing side
	_       [64]byte     // keep the sides on separate cache lines

	// Popping side: guarded by the caller's head lock. head is written once by
	// the first push, before it publishes anything.
	head   *segment[T]
	first  int          // index of the oldest value in head
	popped atomic.Int64 // values popped so far; stored only by the popping side
	seen   int64        // pushed as of the popping side's last look: values below it pop without a look
	_      [64]byte

	spare [twoLockSpares]atomic.Pointer[segment[T]] // drained segments, or nil
}

// Len returns the number of queued values. Any goroutine may call it; the
// count is exact at one instant only for a caller that holds the head lock
// (otherwise pops and pushes between its two loads may skew it, never below
// zero).
func (q *TwoLock[T]) Len() int {
	popped := q.popped.Load() // first: pushed only grows, so the difference is never negative
	return int(q.pushed.Load() - popped)
}

// Push appends v and publishes it. The caller holds the tail lock.
func (q *TwoLock[T]) Push(v T) {
	q.Write(v)
	q.Publish()
}

// Write appends v without publishing it: pops and Len see it only after
// Publish, so that several writes appear at once. The caller holds the tail
// lock.
func (q *TwoLock[T]) Write(v T) {
	switch {
	case q.tail == nil:
		q.tail = q.newSegment()
		q.head = q.tail
	case q.end == segSize:
		s := q.newSegment()
		q.tail.next = s
		q.tail, q.end = s, 0
	}
	q.tail.vals[q.end] = v
	q.end++
	q.written++
}

// Publish makes every value written so far visible to pops. The caller holds
// the tail lock.
func (q *TwoLock[T]) Publish() { q.pushed.Store(q.written) }

// Pop removes and returns the oldest value; ok is false if q is empty. left
// is how many values remained as of Pop's last look at the pushing side (more
// may have been pushed since); it is 0 only if that look was this Pop's.
// The caller holds the head lock.
//
// The popping side looks at pushed (a line the pushing side writes on every
// push) only when the values it saw last time have run out: with a backlog,
// pops then run on lines of their own, and pushes find pushed's line still
// theirs.
func (q *TwoLock[T]) Pop() (v T, ok bool, left int) {
	n := q.popped.Load()
	if n == q.seen {
		if q.seen = q.pushed.Load(); n == q.seen {
			return v, false, 0
		}
	}
	if q.first == segSize {
		old := q.head
		q.head, q.first = old.next, 0
		old.next = nil
		for i := range q.spare { // slots were zeroed as they were popped
			if q.spare[i].CompareAndSwap(nil, old) {
				break
			}
		}
	}
	var zero T
	v, q.head.vals[q.first] = q.head.vals[q.first], zero
	q.first++
	q.popped.Store(n + 1)
	if n+1 == q.seen {
		q.seen = q.pushed.Load() // the last value seen: look again, so that left is 0 only if nothing is left
	}
	return v, true, int(q.seen - n - 1)
}

// Ready returns how many values pops can take without looking at the
// pushing side: those seen at the last look, or, if they ran out, those the
// look it takes now sees. It is a lower bound of Len that, like Pop, leaves
// the line the pushing side writes alone while a backlog lasts. The caller
// holds the head lock.
func (q *TwoLock[T]) Ready() int {
	n := q.popped.Load()
	if n == q.seen {
		q.seen = q.pushed.Load()
	}
	return int(q.seen - n)
}

// twoLockSpares is how many drained segments a TwoLock keeps for reuse: a
// few, so that a pushing side that runs a segment or two ahead of the
// popping side, back and forth, still finds one instead of allocating.
const twoLockSpares = 8

// Drain removes every value, oldest first, and returns them. The caller holds
// both locks.
func (q *TwoLock[T]) Drain() []T {
	out := make([]T, 0, q.Len())
	for {
		v, ok, _ := q.Pop()
		if !ok {
			return out
		}
		out = append(out, v)
	}
}

func (q *TwoLock[T]) newSegment() *segment[T] {
	for i := range q.spare {
		if s := q.spare[i].Swap(nil); s != nil {
			return s
		}
	}
	return new(segment[T])
}
