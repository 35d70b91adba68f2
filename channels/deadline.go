package channels

import (
	"context"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/internal/nilcheck"
	"github.com/smartpool-go/smartpool/source"
)

// Deadline is an unbounded earliest-deadline-first channel: a worker takes
// the queued task whose deadline is earliest, and among equal deadlines the
// one submitted first. It is one queue.
//
// # Late tasks
//
// A task is late when its deadline is before the time a worker reads as it
// takes a task. By default a late task still runs: its deadline is the
// earliest, so it is naturally the next one taken, and it is counted in
// DeadlineStats.Late. With the DropLate option, the worker instead removes
// late tasks without running them, counts them in DeadlineStats.DroppedLate, and
// goes on to the next task. Such a task ends as dropped
// (source.Bits.Discard): it is counted in the pool's Stats as Dropped,
// its Future or Group resolves with smartpool.ErrDropped, and the channel's
// smartpool.ChannelParams.OnEnd receives it with smartpool.DroppedLate.
//
// Only tasks given a deadline (Submit, SubmitTask, smartpool.WithDeadline)
// are ever dropped as late. A task submitted without one (Pool.Submit by
// key) is due when it is queued, and a yielded task re-entering keeps its
// deadline: both run even when late.
//
// Deadlines are compared by their wall-clock reading only: the monotonic
// clock reading that time.Now carries is dropped on submit, so that the order
// is the same total order for every pair of deadlines, whatever clock they
// came from; lateness is judged by the wall clock too. Any time.Time is
// accepted, including the zero Time (always late) and far-future times
// (never late).
//
// Tasks live in a B-tree whose emptied nodes are kept for reuse, so a warm
// Deadline usually allocates nothing per task.
//
// Use NewDeadline: smartpool.New refuses a zero Deadline. A Deadline must
// not be copied. All methods are safe for concurrent use and none blocks
// beyond a short critical section, unless a submit's options say so.
//
// A Deadline takes tasks only while a running pool serves it: its submit
// methods return smartpool.ErrNotServed before New attached it (or after a
// New that failed), and smartpool.ErrClosed from the pool's Close on.
type Deadline struct {
	plug
	src deadlineSource
}

// DeadlineOption configures a Deadline built by NewDeadline.
type DeadlineOption struct {
	apply func(d *deadlineSource)
}

// DropLate makes the Deadline drop late tasks instead of running them (see
// Deadline). The pool reports each to the channel's
// smartpool.ChannelParams.OnEnd, with smartpool.DroppedLate, on the polling
// worker.
func DropLate() DeadlineOption {
	return DeadlineOption{apply: func(d *deadlineSource) { d.dropLate = true }}
}

// NewDeadline returns an empty Deadline configured by opts; without
// DropLate it keeps late tasks.
func NewDeadline(opts ...DeadlineOption) *Deadline {
	d := new(Deadline)
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&d.src)
		}
	}
	d.plug = source.NewPlug(&d.src)
	return d
}

// Submit queues fn to run by deadline; it is SubmitTask for a function,
// with the same errors and options (and smartpool.ErrNilTask for a nil fn).
func (d *Deadline) Submit(deadline time.Time, fn func(ctx context.Context), opts ...smartpool.Option) error {
	if fn == nil {
		return smartpool.ErrNilTask
	}
	return d.SubmitTask(deadline, smartpool.Func(fn), opts...)
}

// SubmitTask queues t to run by deadline. It returns smartpool.ErrNilTask for
// a nil t and smartpool.ErrClosed once the pool's Close started. It does not
// block unless opts say so: smartpool.WithContext waits for a unit of the
// pool's in-flight limit and cancels t if ctx ends while it is queued.
// smartpool.WithDeadline is refused with smartpool.ErrOption (deadline is
// the task's deadline already), and so is smartpool.WithPriority.
func (d *Deadline) SubmitTask(deadline time.Time, t smartpool.Task, opts ...smartpool.Option) error {
	if nilcheck.Nil(t) { // a Func(nil) would panic on the worker
		return smartpool.ErrNilTask
	}
	if len(opts) == 0 {
		return d.src.push(deadline, t, submitted, false)
	}
	return d.src.bitsNow().Submit(t, smartpool.Order{Deadline: deadline, HasDeadline: true}, opts, nil)
}

// Len returns the number of queued tasks, late ones included.
func (d *Deadline) Len() int { return d.src.len() }

// DeadlineStats counts a Deadline's late tasks. Counts only grow.
type DeadlineStats struct {
	// Late counts late tasks taken to run (without DropLate).
	Late uint64
	// DroppedLate counts late tasks dropped (with DropLate).
	DroppedLate uint64
}

// Stats returns the Deadline's counters. Each is exact at some instant, not
// all at the same one. It does not take the channel's lock.
func (d *Deadline) Stats() DeadlineStats {
	return DeadlineStats{
		Late:        d.src.late.Load(),
		DroppedLate: d.src.droppedLate.Load(),
	}
}
