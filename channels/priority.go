package channels

import (
	"context"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/internal/nilcheck"
	"github.com/smartpool-go/smartpool/source"
)

// Priority is an unbounded channel ordered by a scalar priority: a worker
// takes the queued task with the highest priority, and among equal priorities the
// one submitted first. Every int is a valid priority. It is one queue.
//
// Tasks live in a binary heap held in a slice that grows by doubling and
// never shrinks below its high-water mark, so a warm Priority allocates
// nothing per task. A task keeps the priority it was submitted with (unless
// a smartpool.Handle moves it): a task waiting behind a steady stream of
// higher priorities waits for as long as that stream lasts.
//
// Use NewPriority: smartpool.New refuses a zero Priority. A Priority must
// not be copied. All methods are safe for concurrent use and none blocks
// beyond a short critical section, unless a submit's options say so.
//
// A Priority takes tasks only while a running pool serves it: its submit
// methods return smartpool.ErrNotServed before New attached it (or after a
// New that failed), and smartpool.ErrClosed from the pool's Close on.
type Priority struct {
	plug
	src prioritySource
}

// NewPriority returns an empty Priority.
func NewPriority() *Priority {
	p := new(Priority)
	p.plug = source.NewPlug(&p.src)
	return p
}

// Submit queues fn with priority prio (higher runs first); it is SubmitTask
// for a function, with the same errors and options (and
// smartpool.ErrNilTask for a nil fn).
func (p *Priority) Submit(prio int, fn func(ctx context.Context), opts ...smartpool.Option) error {
	if fn == nil {
		return smartpool.ErrNilTask
	}
	return p.SubmitTask(prio, smartpool.Func(fn), opts...)
}

// SubmitTask queues t with priority prio (higher runs first). It returns
// smartpool.ErrNilTask for a nil t and smartpool.ErrClosed once the pool's
// Close started. It does not block unless opts say so:
// smartpool.WithContext waits for a unit of the pool's in-flight limit and
// cancels t if ctx ends while it is queued. smartpool.WithPriority is
// refused with smartpool.ErrOption (prio is the task's priority already),
// and so is smartpool.WithDeadline.
func (p *Priority) SubmitTask(prio int, t smartpool.Task, opts ...smartpool.Option) error {
	if nilcheck.Nil(t) { // a Func(nil) would panic on the worker
		return smartpool.ErrNilTask
	}
	if len(opts) == 0 {
		return p.src.push(prio, t, submitted)
	}
	return p.src.bitsNow().Submit(t, smartpool.Order{Priority: prio, HasPriority: true}, opts, nil)
}

// Len returns the number of queued tasks.
func (p *Priority) Len() int { return p.src.len() }
