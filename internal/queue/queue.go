// Package queue is an unbounded FIFO of values kept in fixed-size segments:
// growing never copies what is queued; up to maxSpare drained segments are
// kept for reuse, so a warm queue allocates nothing for bursts of up to
// (maxSpare+1)·segSize values and one segment per segSize values beyond,
// and memory returns after a bigger burst drains. Popped slots are zeroed,
// so the queue retains nothing it handed out. It is not safe for concurrent
// use.
package queue

const (
	segSize  = 128 // values per segment: 2 KiB for 16-byte values (an interface)
	maxSpare = 8   // drained segments kept for reuse
)

type segment[T any] struct {
	vals [segSize]T
	next *segment[T]
}

// Queue is a FIFO. The zero Queue is empty and ready to use.
type Queue[T any] struct {
	head, tail *segment[T] // nil when nothing was ever pushed
	first      int         // index of the oldest value in head
	end        int         // index after the newest value in tail
	n          int
	spare      *segment[T] // drained segments kept for reuse, linked by next
	spares     int
}

// Len returns the number of queued values.
func (q *Queue[T]) Len() int { return q.n }

// Push appends v.
func (q *Queue[T]) Push(v T) {
	if q.tail == nil {
		q.head = q.newSegment()
		q.tail = q.head
	} else if q.end == segSize {
		s := q.newSegment()
		q.tail.next = s
		q.tail, q.end = s, 0
	}
	q.tail.vals[q.end] = v
	q.end++
	q.n++
}

// Pop removes and returns the oldest value; ok is false if q is empty.
func (q *Queue[T]) Pop() (v T, ok bool) {
	if q.n == 0 {
		return v, false
	}
	var zero T
	v, q.head.vals[q.first] = q.head.vals[q.first], zero
	q.first++
	q.n--
	switch {
	case q.n == 0: // rewind: the one segment left is reused from its start
		q.first, q.end = 0, 0
		if q.head != q.tail {
			q.recycle(q.head)
			q.head = q.tail
		}
	case q.first == segSize:
		old := q.head
		q.head, q.first = old.next, 0
		q.recycle(old)
	}
	return v, true
}

// Drain removes every value, oldest first, and returns them.
func (q *Queue[T]) Drain() []T {
	out := make([]T, 0, q.n)
	for {
		v, ok := q.Pop()
		if !ok {
			return out
		}
		out = append(out, v)
	}
}

func (q *Queue[T]) newSegment() *segment[T] {
	s := q.spare
	if s == nil {
		return new(segment[T])
	}
	q.spare, s.next = s.next, nil
	q.spares--
	return s
}

func (q *Queue[T]) recycle(s *segment[T]) {
	if q.spares == maxSpare {
		s.next = nil
		return
	}
	s.next = q.spare
	q.spare = s
	q.spares++
}
