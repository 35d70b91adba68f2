package channels

import (
	"context"
	"sync"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/internal/queue"
)

// FIFO is an unbounded first-in, first-out channel. Tasks are kept in
// segments of 128 that are reused once drained, so growing never copies the
// queue and a warm FIFO allocates nothing per task (see internal/queue).
//
// The zero FIFO is ready to use. A FIFO must not be copied after first use.
type FIFO struct {
	mu      sync.Mutex
	q       queue.Queue[smartpool.Task] // guarded by mu
	closed  bool                        // Close was called; guarded by mu
	dropped bool                        // Close(true) emptied it: Requeue refuses too; guarded by mu
	bits    smartpool.Bits              // set by Attach before the pool starts
}

// NewFIFO returns an empty FIFO.
func NewFIFO() *FIFO { return new(FIFO) }

// Submit queues fn. It returns smartpool.ErrNilTask for a nil fn,
// smartpool.ErrClosed once the pool's Close started, and smartpool.ErrFull
// when the pool's in-flight limit is reached. It does not block.
func (f *FIFO) Submit(fn func(ctx context.Context)) error {
	if fn == nil {
		return smartpool.ErrNilTask
	}
	return f.push(smartpool.Func(fn), submitted)
}

// Push queues t; it is the by-key submit of smartpool.Pool.Submit.
func (f *FIFO) Push(t smartpool.Task) error { return f.push(t, pushed) }

// Requeue queues a yielded task re-entering the pool; see smartpool.Channel.
func (f *FIFO) Requeue(t smartpool.Task) error { return f.push(t, requeued) }

func (f *FIFO) push(t smartpool.Task, how entry) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	f.mu.Lock()
	if err := how.admitLocked(f.bits, f.dropped, f.closed); err != nil {
		f.mu.Unlock()
		return err
	}
	f.pushLocked(t)
	b := f.bits // read under mu: Attach may run concurrently
	f.mu.Unlock()
	b.Wake(1)
	return nil
}

// SubmitBatch queues every function in fns, in order, under one lock, and
// wakes at most as many workers as it queued. A nil function fails the whole
// batch with smartpool.ErrNilTask before anything is queued.
func (f *FIFO) SubmitBatch(fns ...func(ctx context.Context)) error {
	for _, fn := range fns {
		if fn == nil {
			return smartpool.ErrNilTask
		}
	}
	f.mu.Lock()
	if f.closed || f.bits.Closed() {
		f.mu.Unlock()
		return smartpool.ErrClosed
	}
	if err := f.bits.Admit(len(fns)); err != nil {
		f.mu.Unlock()
		return err
	}
	for _, fn := range fns {
		f.pushLocked(smartpool.Func(fn))
	}
	b := f.bits
	f.mu.Unlock()
	b.Wake(len(fns))
	return nil
}

func (f *FIFO) pushLocked(t smartpool.Task) {
	f.q.Push(t)
	if f.q.Len() == 1 {
		f.bits.Set(0)
	}
}

// Poll removes and returns the oldest task, or nil if the FIFO is empty.
func (f *FIFO) Poll(int) smartpool.Task {
	f.mu.Lock()
	t, ok := f.q.Pop()
	if ok && f.q.Len() == 0 {
		f.bits.Clear(0)
	}
	f.mu.Unlock()
	return t
}

// Len returns the number of queued tasks.
func (f *FIFO) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.q.Len()
}

// Queues returns 1: a FIFO is one queue.
func (f *FIFO) Queues() int { return 1 }

// Attach binds the FIFO to a pool; it is called by smartpool.New. It returns
// smartpool.ErrAttached if the FIFO already belongs to a pool.
func (f *FIFO) Attach(b smartpool.Bits) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bits.Attached() {
		return smartpool.ErrAttached
	}
	f.bits = b
	if f.q.Len() > 0 {
		f.bits.Set(0)
	}
	return nil
}

// Close stops admission and, if drop is set, empties the FIFO and returns
// its tasks oldest first; it is called by the pool's Close.
func (f *FIFO) Close(drop bool) []smartpool.Task {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	f.dropped = f.dropped || drop
	if !drop || f.q.Len() == 0 {
		return nil
	}
	f.bits.Clear(0)
	return f.q.Drain()
}
