package channels

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/internal/nilcheck"
)

// Deadline is an unbounded earliest-deadline-first channel: Poll returns the
// queued task whose deadline is earliest, and among equal deadlines the one
// submitted first. It is one queue.
//
// # Late tasks
//
// A task is late when its deadline is before the time Poll reads (once per
// call). By default a late task still runs: its deadline is the earliest, so
// it is naturally the next one Poll returns, and it is counted in
// DeadlineStats.Late. With the DropLate option, Poll instead removes late
// tasks without running them, counts them in DeadlineStats.DroppedLate, and
// goes on to the next task. Such a task ends as dropped
// (smartpool.Bits.Discard): it is counted in the pool's Stats as Dropped,
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
// The zero Deadline is ready to use and keeps late tasks. A Deadline must not
// be copied after first use. All methods are safe for concurrent use and none
// blocks beyond a short critical section.
//
// A Deadline takes tasks only while a running pool serves it: before New attached
// it, after a New that failed, and from the pool's Close on, its submit
// methods return smartpool.ErrClosed (see smartpool.Channel). Its Queues,
// Attach, Push, Requeue, Poll and Close are called by the pool, not by users.
type Deadline struct {
	mu       sync.Mutex
	tree     *btree.BTreeG[deadlineItem] // nil until the first submit; guarded by mu
	seq      uint64                      // submissions so far, the tie-breaker; guarded by mu
	closed   bool                        // Close was called; guarded by mu
	dropped  bool                        // Close(true) emptied it: Requeue refuses too; guarded by mu
	bits     smartpool.Bits              // set by Attach before the pool starts; guarded by mu
	dropLate bool                        // set by NewDeadline, read-only after

	late        atomic.Uint64 // written under mu
	droppedLate atomic.Uint64
}

// deadlineItem is one queued task and its key (at, seq).
type deadlineItem struct {
	at   time.Time // monotonic reading stripped
	seq  uint64
	task smartpool.Task
	keep bool // pushed by the pool or re-entering: never dropped as late
}

func deadlineLess(a, b deadlineItem) bool {
	if c := a.at.Compare(b.at); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

// deadlineDegree is the B-tree's degree: nodes hold up to 63 items of 48
// bytes, a few kilobytes, which keeps the tree shallow and the cache warm.
const deadlineDegree = 32

// dropBatch is how many late tasks Poll removes under one lock hold before it
// unlocks to discard them (smartpool.Bits.Discard runs outside the lock).
const dropBatch = 16

// DeadlineOption configures a Deadline built by NewDeadline.
type DeadlineOption struct {
	apply func(d *Deadline)
}

// DropLate makes Poll drop late tasks instead of returning them (see
// Deadline). The pool reports each to the channel's
// smartpool.ChannelParams.OnEnd, with smartpool.DroppedLate, on the polling
// worker.
func DropLate() DeadlineOption {
	return DeadlineOption{apply: func(d *Deadline) { d.dropLate = true }}
}

// NewDeadline returns an empty Deadline configured by opts.
func NewDeadline(opts ...DeadlineOption) *Deadline {
	d := new(Deadline)
	for _, o := range opts {
		if o.apply != nil {
			o.apply(d)
		}
	}
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
		return d.push(deadline, t, submitted, false)
	}
	d.mu.Lock()
	b := d.bits // read under mu: Attach may run concurrently
	d.mu.Unlock()
	return b.Submit(t, smartpool.Order{Deadline: deadline, HasDeadline: true}, opts, nil)
}

// Requeue queues a yielded task re-entering the pool; see smartpool.Channel.
// It keeps the deadline the task was first queued with if that came from a
// Deadline (see smartpool.OrderedPoller), and gets the deadline time.Now()
// otherwise. It is never dropped as late.
//
// Called by the pool; not for users.
func (d *Deadline) Requeue(t smartpool.Task) error { return d.push(time.Now(), t, requeued, true) }

func (d *Deadline) push(deadline time.Time, t smartpool.Task, how entry, keep bool) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	at := deadline.Round(0) // drop the monotonic reading: see Deadline
	d.mu.Lock()
	if err := how.admitLocked(d.bits, d.dropped, d.closed); err != nil {
		d.mu.Unlock()
		return err
	}
	if how == requeued {
		if o, ok := d.bits.OrderOf(t); ok && o.HasDeadline {
			at = o.Deadline // a yielded task keeps its place
		}
	}
	if d.tree == nil {
		d.tree = btree.NewG(deadlineDegree, deadlineLess)
	}
	d.seq++
	d.tree.ReplaceOrInsert(deadlineItem{at: at, seq: d.seq, task: how.stamp(d.bits, t), keep: keep})
	if d.tree.Len() == 1 {
		d.bits.Set(0)
	}
	b := d.bits // read under mu: Attach may run concurrently
	d.mu.Unlock()
	b.Wake(1)
	return nil
}

// Push queues t with the deadline time.Now(); it is the by-key submit of
// smartpool.Pool.Submit (and of Go, Group.Go and timers). Such a task runs
// after every queued task whose deadline has already passed and before every
// task due later. It is late as soon as the clock moves on, so it is counted
// in DeadlineStats.Late when it runs, but DropLate never drops it: it had no
// deadline of its own to miss. Submit through Submit or SubmitTask to give a
// task a deadline that late-dropping applies to.
//
// Called by the pool; not for users (Pool.Submit is the by-key submit).
func (d *Deadline) Push(t smartpool.Task, o smartpool.Order) error {
	switch {
	case o.HasPriority:
		return smartpool.Unordered(o)
	case t == nil:
		return smartpool.ErrNilTask
	case o.HasDeadline:
		return d.push(o.Deadline, t, pushed, false)
	}
	return d.push(time.Now(), t, pushed, true)
}

// Poll removes and returns the task with the earliest deadline, or nil if the
// Deadline is empty. It reads the clock once, to tell late tasks; with
// DropLate it drops those (see Deadline) and returns the first task that is
// not late, or nil.
//
// Called by the pool; not for users.
func (d *Deadline) Poll(int) smartpool.Task {
	t, _ := d.PollOrder(0)
	return t
}

// PollOrder is Poll that also returns the task's deadline; the pool calls it
// (see smartpool.OrderedPoller) so that a task that yields keeps its
// deadline when it re-enters.
func (d *Deadline) PollOrder(int) (smartpool.Task, smartpool.Order) {
	now := time.Now()
	for {
		var dropped [dropBatch]smartpool.Task
		n := 0
		var t smartpool.Task
		var at time.Time
		d.mu.Lock()
		for d.tree != nil && d.tree.Len() > 0 {
			it, _ := d.tree.DeleteMin()
			if !it.at.Before(now) {
				t, at = it.task, it.at
				break
			}
			if !d.dropLate || it.keep {
				d.late.Add(1)
				t, at = it.task, it.at
				break
			}
			dropped[n] = it.task
			n++
			if n == len(dropped) {
				break
			}
		}
		if (t != nil || n > 0) && d.tree.Len() == 0 {
			d.bits.Clear(0)
		}
		b := d.bits
		d.mu.Unlock()
		for i := range n {
			// Discard releases the task's unit of the pool's in-flight
			// limit; a task its submitter cancelled was reported already.
			if b.Discard(dropped[i], smartpool.DroppedLate) {
				d.droppedLate.Add(1)
			}
		}
		switch {
		case t != nil:
			return t, smartpool.Order{Deadline: at, HasDeadline: true}
		case n < len(dropped):
			return nil, smartpool.Order{}
		}
		// A full batch of late tasks: there may be more.
	}
}

// Len returns the number of queued tasks, late ones included.
func (d *Deadline) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.tree == nil {
		return 0
	}
	return d.tree.Len()
}

// Queues returns 1: a Deadline is one queue.
//
// Called by the pool; not for users.
func (d *Deadline) Queues() int { return 1 }

// Attach binds the Deadline to a pool; it is called by smartpool.New. It
// returns smartpool.ErrAttached if the Deadline already belongs to a pool.
//
// Called by the pool; not for users.
func (d *Deadline) Attach(b smartpool.Bits) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bits.Attached() {
		return smartpool.ErrAttached
	}
	d.bits = b
	b.AdmitsOwnSubmits() // Submit and SubmitTask take their units (entry.go)
	b.WakesOutsideLock() // Wake comes after the lock is released
	if d.tree != nil && d.tree.Len() > 0 {
		d.bits.Set(0)
	}
	return nil
}

// Close stops admission and, if drop is set, empties the Deadline and
// returns its tasks earliest deadline first; it is called by the pool's
// Close. Tasks removed this way are not counted in DeadlineStats (the pool
// reports them as dropped on close).
//
// Called by the pool; not for users.
func (d *Deadline) Close(drop bool) []smartpool.Task {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.bits.Closing() {
		return nil // a user's call while a pool serves it, or before one does: see smartpool.Channel
	}
	d.closed = true
	d.dropped = d.dropped || drop
	if !drop || d.tree == nil || d.tree.Len() == 0 {
		return nil
	}
	out := make([]smartpool.Task, 0, d.tree.Len())
	d.tree.Ascend(func(it deadlineItem) bool {
		out = append(out, it.task)
		return true
	})
	d.tree.Clear(true) // nodes kept for reuse are zeroed, the rest are let go
	d.bits.Clear(0)
	return out
}

// DeadlineStats counts a Deadline's late tasks. Counts only grow.
type DeadlineStats struct {
	// Late counts late tasks Poll returned to run (without DropLate).
	Late uint64
	// DroppedLate counts late tasks Poll dropped (with DropLate).
	DroppedLate uint64
}

// Stats returns the Deadline's counters. Each is exact at some instant, not
// all at the same one. It does not take the channel's lock.
func (d *Deadline) Stats() DeadlineStats {
	return DeadlineStats{
		Late:        d.late.Load(),
		DroppedLate: d.droppedLate.Load(),
	}
}
