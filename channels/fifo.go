package channels

import (
	"context"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/source"
)

// FIFO is an unbounded first-in, first-out channel. Tasks are kept in
// segments of 128 that are reused once drained, so growing never copies the
// queue and a warm FIFO allocates almost nothing per task (see
// internal/queue).
//
// Submits and polls take different locks (a two-lock queue), so producers
// never wait for workers, nor workers for producers.
//
// Use NewFIFO: smartpool.New refuses a zero FIFO. A FIFO must not be copied.
//
// A FIFO takes tasks only while a running pool serves it: its submit
// methods return smartpool.ErrNotServed before New attached it (or after a
// New that failed), and smartpool.ErrClosed from the pool's Close on.
type FIFO struct {
	plug
	src fifoSource
}

// NewFIFO returns an empty FIFO.
func NewFIFO() *FIFO {
	f := new(FIFO)
	f.plug = source.NewPlug(&f.src)
	return f
}

// Submit queues fn. It returns smartpool.ErrNilTask for a nil fn,
// smartpool.ErrClosed once the pool's Close started, and smartpool.ErrFull
// when the pool's in-flight limit is reached. It does not block unless opts
// say so: smartpool.WithContext waits for a unit of the in-flight limit and
// cancels fn if ctx ends while it is queued; a FIFO has no order key, so
// WithDeadline and WithPriority are refused with smartpool.ErrOption.
func (f *FIFO) Submit(fn func(ctx context.Context), opts ...smartpool.Option) error {
	if fn == nil {
		return smartpool.ErrNilTask
	}
	if len(opts) == 0 {
		return f.src.push(smartpool.Func(fn), submitted)
	}
	return f.src.bitsNow().Submit(smartpool.Func(fn), smartpool.Order{}, opts, nil)
}

// SubmitBatch queues every function in fns, in order, under one lock, and
// wakes at most as many workers as it queued. A nil function fails the whole
// batch with smartpool.ErrNilTask before anything is queued.
func (f *FIFO) SubmitBatch(fns ...func(ctx context.Context)) error {
	return f.src.submitBatch(fns)
}

// Len returns the number of queued tasks. It takes the polling side's lock,
// so that the count is exact at one instant.
func (f *FIFO) Len() int { return f.src.len() }
