package channels_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// H4 FuzzMultiChannel: a Multi of FIFO shards, driven by one goroutine
// through a byte-coded sequence of operations, against k reference queues
// that deal pushes out with the same round-robin cursor. Checked after
// every operation: the error each call returns (nil, ErrNilTask, ErrClosed,
// ErrNoQueues), Len, and the exact task each Poll returns, per queue; at
// Close(true), the dropped tasks in queue order, each queue's own order kept;
// at the end, that every accepted task left the Multi exactly once.
//
// Availability bits are not checked: the Multi is served by the standalone
// harness (internal/standalone), whose bits nothing outside the root package
// can read (see lin_test.go, I5). The
// bit rule is exercised where a pool attaches the Multi (TestPoolMultiOrder,
// B1's multi-channel, the soak's): a bit left clear strands a task there.
// What is left here is the queue semantics.
//
// The input: byte 0 is the shape, c&7 shards (0: a Multi with no shards,
// which must refuse everything with ErrNoQueues), nested when c&0x20 is set,
// each shard then a Multi of 1+(c>>3)&3 FIFOs (so Poll takes its
// queue-to-shard search instead of the one-queue-per-shard shortcut). Every
// further byte is one operation, op%10:
//
//	0, 1  Push(idTask)
//	2     Submit(fn)
//	3     Requeue(idTask)
//	4     Next()'s Push(idTask): a typed submit through the rotation
//	5, 6  Poll(q), q from the next byte, -1 to Queues() inclusive
//	7     Push(nil), Submit(nil), Requeue(nil): ErrNilTask, rotation untouched
//	8     Close(false): admission stops, Requeue still accepted, queues drain
//	9     Close(true): every queued task returned, Requeue refused too
//
// The pool calls Close once; a second close byte is skipped. Inputs of more
// than multiFuzzMaxOps operations are skipped.
func FuzzMultiChannel(f *testing.F) {
	// shape byte: shards | 0x20 nested | inner-1<<3
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0, 5, 0, 5, 1, 5, 2, 5, 0, 5, 0, 5, 0})   // flat 3: two rounds, polled per queue
	f.Add([]byte{2 | 0x20 | 1<<3, 0, 2, 3, 4, 0, 2, 5, 0, 5, 1, 5, 2, 5, 3}) // nested 2x2, every push kind
	f.Add([]byte{0x20 | 3<<3 | 1, 0, 0, 0, 0, 0, 6, 2, 6, 3, 6, 4, 6, 0})    // nested 1x4: one shard of four queues
	f.Add([]byte{4, 0, 1, 2, 3, 4, 5, 1, 9, 0, 3, 4, 2, 5, 1})               // Close(true) midway: all refused after
	f.Add([]byte{3, 0, 0, 3, 0, 8, 0, 2, 4, 3, 3, 5, 0, 5, 1, 5, 2, 5, 0})   // Close(false): requeues accepted, queues drain
	f.Add([]byte{2, 7, 0, 7, 0, 7, 5, 0, 5, 1, 5, 255, 5, 3})                // nil tasks leave the rotation alone; out-of-range polls
	f.Add([]byte{0, 0, 2, 3, 4, 5, 0, 7, 8, 9})                              // no shards: ErrNoQueues everywhere
	f.Add([]byte{1, 0, 3, 0, 3, 5, 0, 5, 0, 5, 0, 5, 0, 9})                  // one shard: a plain FIFO
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		shape, ops := data[0], data[1:]
		if len(ops) > multiFuzzMaxOps {
			return
		}
		h := newMultiHarness(int(shape&7), shape&0x20 != 0, 1+int(shape>>3&3))
		h.run(t, ops)
	})
}

// multiFuzzMaxOps bounds an input. Why: when an input finds new coverage,
// the fuzzer minimizes it for up to -fuzzminimizetime (60 s by default),
// and its minimizer tries removing every run of bytes, about n*n/2 runs of
// an input of n operations each costing an execution linear in n. Fuzzed
// for 30 s on 2 cores with up to 2,048 operations, the workers stood in
// minimization for 18 and 27 s of two runs (0 execs/s shown; 341,000 and
// 7,000 execs); with 256, 627,000 execs and no stall. 256 is still room for
// several rotations over 32 queues.
const multiFuzzMaxOps = 256

// multiHarness is one Multi under test with its reference: queues[q] holds
// the IDs queue q must return, oldest first, and route advances the
// reference rotation exactly as one call of Multi.Next advances the real one.
type multiHarness struct {
	name   string
	m      smartpool.Channel
	submit func(func(context.Context)) error
	// next calls the Multi's Next and returns the shard, or nil if Next
	// returned the zero shard (a Multi with no shards).
	next   func() smartpool.Channel
	shards func() int // len(m.Shards())
	k      int        // shards built

	queues   [][]int
	route    func() int
	nextID   int
	accepted int    // pushes that returned nil
	left     []bool // left[ID]: it left the Multi (polled or dropped)
	closed   bool
	dropped  bool // Close(true)
	rec      recorder
}

// newMultiHarness builds a Multi of k FIFO shards, or, nested, of k shards
// that are each a Multi of inner FIFOs; k == 0 gives a Multi with no shards.
func newMultiHarness(k int, nested bool, inner int) *multiHarness {
	h := &multiHarness{k: k}
	if !nested {
		inner = 1
	}
	if k > 0 {
		h.queues = make([][]int, k*inner)
	}
	// The reference rotation: the outer cursor picks the shard; a nested
	// shard's own cursor picks its queue among inner.
	outer := 0
	innerNext := make([]int, k)
	h.route = func() int {
		s := outer % k
		outer++
		q := s*inner + innerNext[s]%inner
		innerNext[s]++
		return q
	}
	if nested {
		h.name = fmt.Sprintf("Multi %dx%d", k, inner)
		m := served(channels.NewMulti(k, func() *channels.Multi[*channels.FIFO] { return channels.NewMulti(inner, channels.NewFIFO) }))
		h.m, h.submit, h.shards = m, func(fn func(context.Context)) error { return m.Submit(fn) }, func() int { return len(m.Shards()) }
		h.next = func() smartpool.Channel {
			if s := m.Next(); s != nil {
				return s
			}
			return nil
		}
		return h
	}
	h.name = fmt.Sprintf("Multi %d", k)
	m := served(channels.NewMulti(k, channels.NewFIFO))
	h.m, h.submit, h.shards = m, func(fn func(context.Context)) error { return m.Submit(fn) }, func() int { return len(m.Shards()) }
	h.next = func() smartpool.Channel {
		if s := m.Next(); s != nil {
			return s
		}
		return nil
	}
	return h
}

// newID returns the next task ID.
func (h *multiHarness) newID() int {
	h.left = append(h.left, false)
	h.nextID++
	return h.nextID - 1
}

// leave records that task id left the Multi, failing on an unknown ID or
// one that left before.
func (h *multiHarness) leave(t *testing.T, id int) {
	t.Helper()
	switch {
	case id < 0 || id >= len(h.left):
		t.Fatalf("%s: the Multi returned task %d, never pushed", h.name, id)
	case h.left[id]:
		t.Fatalf("%s: task %d left the Multi twice", h.name, id)
	}
	h.left[id] = true
}

// total returns the number of tasks the reference holds.
func (h *multiHarness) total() int {
	n := 0
	for _, q := range h.queues {
		n += len(q)
	}
	return n
}

// wantErr returns the error a push of a non-nil task must return now;
// requeue selects Requeue's admission rule (accepted after Close(false)).
func (h *multiHarness) wantErr(requeue bool) error {
	switch {
	case len(h.queues) == 0:
		return smartpool.ErrNoQueues
	case h.dropped, h.closed && !requeue:
		return smartpool.ErrClosed
	}
	return nil
}

// pushed checks a push's error against want and, for a Multi with shards,
// advances the reference rotation (Multi.Push takes the next shard before
// the shard decides, so a refused push moves the rotation too) and queues
// the ID where the rotation put it if the push was accepted.
func (h *multiHarness) pushed(t *testing.T, step int, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) || (err == nil) != (want == nil) {
		t.Fatalf("%s step %d: %s = %v, want %v", h.name, step, what, err, want)
	}
	id := h.newID()
	if len(h.queues) == 0 {
		return
	}
	q := h.route()
	if err == nil {
		h.queues[q] = append(h.queues[q], id)
		h.accepted++
	}
}

func (h *multiHarness) run(t *testing.T, ops []byte) {
	if got, want := src(h.m).Queues(), len(h.queues); got != want {
		t.Fatalf("%s: Queues = %d, want %d", h.name, got, want)
	}
	if got, want := h.shards(), h.k; got != want {
		t.Fatalf("%s: %d shards, want %d", h.name, got, want)
	}
	for step := 0; step < len(ops); step++ {
		op := ops[step]
		switch op % 10 {
		case 0, 1:
			h.pushed(t, step, "Push", src(h.m).Push(idTask(h.nextID), smartpool.Order{}), h.wantErr(false))
		case 2:
			h.pushed(t, step, "Submit", h.submit(h.rec.fn(h.nextID)), h.wantErr(false))
		case 3:
			h.pushed(t, step, "Requeue", src(h.m).Requeue(idTask(h.nextID)), h.wantErr(true))
		case 4:
			s := h.next()
			if len(h.queues) == 0 {
				if s != nil {
					t.Fatalf("%s step %d: Next on a Multi with no shards = %v, want the zero shard", h.name, step, s)
				}
				continue
			}
			if s == nil {
				t.Fatalf("%s step %d: Next returned no shard", h.name, step)
			}
			// Next advanced the rotation; the shard's own Push is what
			// a typed submit would call (FIFO: ErrClosed after any Close).
			id := h.newID()
			q := h.route()
			err := src(s).Push(idTask(id), smartpool.Order{})
			want := h.wantErr(false)
			if !errors.Is(err, want) || (err == nil) != (want == nil) {
				t.Fatalf("%s step %d: Next().Push = %v, want %v", h.name, step, err, want)
			}
			if err == nil {
				h.queues[q] = append(h.queues[q], id)
				h.accepted++
			}
		case 5, 6:
			q := 0
			if step+1 < len(ops) {
				step++
				q = int(ops[step])%(len(h.queues)+2) - 1 // -1 and Queues() poll nothing
			}
			h.poll(t, step, q)
		case 7:
			for i, err := range []error{src(h.m).Push(nil, smartpool.Order{}), h.submit(nil), src(h.m).Requeue(nil)} {
				if !errors.Is(err, smartpool.ErrNilTask) {
					t.Fatalf("%s step %d: %s(nil) = %v, want ErrNilTask", h.name, step, []string{"Push", "Submit", "Requeue"}[i], err)
				}
			}
		case 8, 9:
			if h.closed {
				continue // the pool calls Close once
			}
			h.close(t, step, op%10 == 9)
		}
		if got, want := h.m.Len(), h.total(); got != want {
			t.Fatalf("%s step %d (op %d): Len = %d, want %d", h.name, step, op%10, got, want)
		}
	}
	h.finish(t)
}

// poll polls queue q and checks the task against the reference's head.
func (h *multiHarness) poll(t *testing.T, step, q int) {
	t.Helper()
	want := -1
	if q >= 0 && q < len(h.queues) && len(h.queues[q]) > 0 {
		want, h.queues[q] = h.queues[q][0], h.queues[q][1:]
	}
	got := h.rec.id(t, src(h.m).Poll(q))
	if got != want {
		t.Fatalf("%s step %d: Poll(%d) = %d, want %d (queues %v)", h.name, step, q, got, want, h.queues)
	}
	if got >= 0 {
		h.leave(t, got)
	}
}

// close calls Close(drop): with drop, it must return every queued task,
// queue after queue, each queue oldest first; without, nothing.
func (h *multiHarness) close(t *testing.T, step int, drop bool) {
	t.Helper()
	h.closed, h.dropped = true, drop
	var got []int
	for _, task := range src(h.m).Close(drop) {
		id := h.rec.id(t, task)
		got = append(got, id)
		h.leave(t, id)
	}
	var want []int
	if drop {
		for q := range h.queues {
			want = append(want, h.queues[q]...)
			h.queues[q] = nil
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s step %d: Close(%v) = %v, want %v", h.name, step, drop, got, want)
	}
}

// finish empties the Multi (Close(true) if it is still open, else a drain
// of every queue) and checks that each accepted ID left it exactly once.
func (h *multiHarness) finish(t *testing.T) {
	t.Helper()
	if !h.closed {
		h.close(t, -1, true)
	}
	for q := range h.queues {
		for len(h.queues[q]) > 0 {
			h.poll(t, -1, q)
		}
		h.poll(t, -1, q) // and then it is empty
	}
	if n := h.m.Len(); n != 0 {
		t.Fatalf("%s: Len = %d after the drain", h.name, n)
	}
	n := 0
	for _, left := range h.left {
		if left {
			n++
		}
	}
	if n != h.accepted {
		t.Fatalf("%s: %d tasks accepted, %d left the Multi", h.name, h.accepted, n)
	}
}
