package channels

import (
	"context"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/internal/nilcheck"
	"github.com/smartpool-go/smartpool/source"
)

// Bounded is a first-in, first-out channel with a capacity: its submit
// methods never take it over that many queued tasks (yielded tasks
// re-entering may, and a lowered capacity may leave it over; see below). It
// is one queue. A full Bounded pushes back on its producers; what a submit
// does on a full channel depends on whether it was given a context, as for
// every submit of the pool (smartpool.WithContext), and on the overflow
// policy chosen at NewBounded:
//
//	                                default   DropOldest        CallerRuns
//	Submit, SubmitTask, Pool.Submit ErrFull   drop the oldest   run in the caller
//	  with WithContext(ctx)         wait      drop the oldest   run in the caller
//	re-entries (a yielded task)     always accepted
//
// So a submit never blocks a caller who did not pass a context.
//
// The capacity counts queued tasks, not running ones: when the pool has an
// idle worker, a submit's wake-up hands it a task at once (see
// source.Bits.WakesOutsideLock), so on an idle one-worker pool a
// NewBounded(1) takes one task that runs and one that waits, as pond's
// queue size does. With k idle workers (k up to GOMAXPROCS), each of the
// first k submits of a burst hands its task to one of them: a
// NewBounded(n) that is the pool's only channel then takes n + k at once.
//
// In a pool with an in-flight limit (smartpool.Config.Limit), a submit
// first takes a unit of the limit (waiting for one only with a context) and
// then room. A task CallerRuns runs in the caller gives its unit back, and
// so does one DropOldest displaces.
//
// # Waiting: hand-off admission
//
// A submit with a context that finds no room joins a list of waiters,
// oldest first, and blocks, holding no lock, on its own ready channel. Room
// is handed over rather than announced: the call that frees a slot (a
// worker's poll, or SetCapacity raising the capacity) queues the oldest
// waiter's task itself, under the channel's lock, and only then closes that
// waiter's ready channel. So a freed slot can never be taken by a later
// submit while a waiter still waits, waiters are admitted in the order they
// arrived, a wake-up cannot be lost (the task is queued before its waiter
// is told) and nobody polls. While anyone waits the channel is full: no
// submit jumps the line.
//
// The first of three events settles a waiter: its task is queued (the
// submit returns nil); the pool's Close starts (it returns
// smartpool.ErrClosed and the task was never queued; Close releases every
// waiter, and a poll after the pool stopped admission releases them too); or
// its ctx ends (it removes the waiter and returns ctx.Err(); the task was
// never queued). If ctx ends at the moment the task is handed its slot, the
// hand-off wins and the submit returns nil. So a submit that waited returns
// nil exactly when it queued the task. Waiting starts no goroutine; from a
// task of another pool it yields that task's worker (smartpool.Yield).
//
// # Submitting from a task
//
// A task of the pool that serves the Bounded never waits in a submit with a
// context: where it would wait for room or for a unit of the in-flight
// limit, it runs the task itself, at once, in its own place, and the submit
// returns nil once the task ended. Tasks that submit tasks (a crawler, a
// divide-and-conquer) so never deadlock on a full Bounded, even when every
// worker runs a task waiting to submit: the fork-join "help while you wait"
// rule, which smartpool.Group.Go follows too. Such a run is counted in the
// pool's Stats like a worker's, not in BoundedStats.
//
// # Re-entries
//
// A task that yielded re-enters the channel (see smartpool.Yield). It
// already held admission when it was first queued, and refusing it would
// drop a running task, so it is accepted even when the channel is full,
// until the pool's Close dropped what the channel held. Queued re-entries
// count towards Len: a Bounded may therefore hold more than its capacity
// for a while, and then admits nothing new until workers bring Len below
// the capacity. DropOldest never drops a re-entry.
//
// # Capacity
//
// SetCapacity changes the capacity at run time: raising it admits waiters at
// once; lowering it never drops a queued task, it only refuses (or, with an
// overflow policy, displaces) new ones until Len falls below it.
//
// Use NewBounded: smartpool.New refuses a zero Bounded, and one made with a
// capacity below 1 with smartpool.ErrNoQueues. Neither is ever served, so
// their submit methods return smartpool.ErrNotServed. A Bounded must not be
// copied. All methods are safe for concurrent use; only a submit given a
// context blocks, and only as described above.
//
// A Bounded takes tasks only while a running pool serves it: its submit
// methods return smartpool.ErrNotServed before New attached it (or after a
// New that failed), and smartpool.ErrClosed from the pool's Close on.
type Bounded struct {
	plug
	src boundedSource
}

// BoundedOption configures a Bounded built by NewBounded.
type BoundedOption struct {
	apply func(b *boundedSource)
}

// DropOldest makes a full Bounded accept every new task and drop the oldest
// queued task that was submitted (never a re-entry; see Bounded) to make up
// for it, so that submits never wait and never fail for lack of room. If the
// only tasks queued before it are re-entries, the new task is the oldest one
// that may be dropped, and it is. Each submit on a full channel drops exactly
// one task, so after the capacity was lowered Len stays put until workers
// bring it below the capacity.
//
// A displaced task ends as dropped (source.Bits.Discard), on the
// submitting goroutine, after the channel's lock was released: it is
// counted in BoundedStats.Dropped and in the pool's Stats as Dropped, its
// Future or Group resolves with smartpool.ErrDropped, and the channel's
// smartpool.ChannelParams.OnEnd receives it with smartpool.DroppedDisplaced.
// It is held (source.Bits.Hold) from its displacement, so a removal of
// the channel (smartpool.Pool.RemoveChannel) reports it in its final stats.
//
// DropOldest and CallerRuns exclude each other: the last one given wins.
func DropOldest() BoundedOption {
	return BoundedOption{apply: func(b *boundedSource) { b.dropOldest, b.callerRuns = true, false }}
}

// CallerRuns makes a submit on a full Bounded (Submit, SubmitTask,
// smartpool.Pool.Submit, with or without a context) run the task at once
// in the calling goroutine, and return nil, instead of returning
// smartpool.ErrFull or waiting: a producer that outpaces the pool is slowed
// down by doing the work itself.
//
// The task runs on the calling goroutine through source.Bits.RunHere,
// with context.Background(), since the pool's task context belongs to a
// worker. So smartpool.Yield inside it just calls its wait function, and
// Close does not wait for it nor cancel it; called from a task of the pool,
// it runs in that task's place instead (source.Bits.RunInTask), with its
// context, so its waits yield. The pool counts it in its Stats like a
// worker's run (Ran, Panicked or Goexited), and a panic in it is recovered
// and goes to the pool's panic handler (and the task's Future or Group), not
// to the caller. Each is also counted in BoundedStats.CallerRan, and held
// (source.Bits.Hold) until it ended, so a removal of the channel
// (smartpool.Pool.RemoveChannel) reports it in its final stats. After the
// pool's Close started, or a removal of the channel, the submits return
// smartpool.ErrClosed and run nothing.
//
// DropOldest and CallerRuns exclude each other: the last one given wins.
func CallerRuns() BoundedOption {
	return BoundedOption{apply: func(b *boundedSource) {
		b.callerRuns, b.dropOldest = true, false
	}}
}

// NewBounded returns an empty Bounded that queues at most capacity submitted
// tasks, configured by opts. For capacity < 1 it returns a Bounded with no
// queues, which smartpool.New refuses with smartpool.ErrNoQueues: a zero
// capacity is far more often a missing setting than a wish to admit
// nothing.
func NewBounded(capacity int, opts ...BoundedOption) *Bounded {
	b := new(Bounded)
	if capacity >= 1 {
		b.src.queues, b.src.capacity = 1, capacity
	}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&b.src)
		}
	}
	b.plug = source.NewPlug(&b.src)
	return b
}

// Submit queues fn if there is room; it is SubmitTask for a function, with
// the same errors and options (and smartpool.ErrNilTask for a nil fn).
func (b *Bounded) Submit(fn func(ctx context.Context), opts ...smartpool.Option) error {
	if fn == nil {
		return smartpool.ErrNilTask
	}
	return b.SubmitTask(smartpool.Func(fn), opts...)
}

// SubmitTask queues t if there is room. Without smartpool.WithContext it
// never waits: on a full Bounded it returns smartpool.ErrFull, or applies
// the overflow policy (DropOldest, CallerRuns); it returns
// smartpool.ErrFull too when the pool's in-flight limit is reached. With
// WithContext(ctx) it waits, until ctx ends, for a unit of the limit and
// then, under the default policy, for room (see "Waiting"); called from a
// task of the pool where it would wait, it runs t in that task's place
// instead (see "Submitting from a task"); and t is cancelled if ctx ends
// while it is queued. A Bounded has no order key: smartpool.WithDeadline
// and smartpool.WithPriority are refused with smartpool.ErrOption. It
// returns nil when it queued or ran t; otherwise smartpool.ErrNilTask for a
// nil t, ctx.Err() if ctx ended before t was queued (already on entry, even if there is room),
// or smartpool.ErrClosed once the pool's Close started, including for a
// submit that was waiting.
func (b *Bounded) SubmitTask(t smartpool.Task, opts ...smartpool.Option) error {
	if nilcheck.Nil(t) { // a Func(nil) would panic on the worker
		return smartpool.ErrNilTask
	}
	if len(opts) == 0 {
		return b.src.offer(t, submitted)
	}
	// The pool admits t, then queues it by Push and, if that finds the
	// channel full, by PushWait.
	return b.src.bitsNow().Submit(t, smartpool.Order{}, opts, nil)
}

// Len returns the number of queued tasks, re-entries included; it may exceed
// Cap (see Bounded).
func (b *Bounded) Len() int { return b.src.len() }

// Cap returns the capacity: 0 for a Bounded without queues.
func (b *Bounded) Cap() int { return b.src.capNow() }

// Waiting returns the number of submits blocked for room (given
// smartpool.WithContext).
func (b *Bounded) Waiting() int { return b.src.waitingNow() }

// SetCapacity sets the capacity to n, or to 1 if n < 1, effective for the
// next submit. Raising it hands the new room to waiting submitters at once;
// lowering it drops nothing (see Bounded). It has no effect on a Bounded
// without queues.
func (b *Bounded) SetCapacity(n int) { b.src.setCapacity(n) }

// BoundedStats counts what a Bounded's overflow policy did.
type BoundedStats struct {
	// Dropped counts tasks DropOldest dropped.
	Dropped uint64
	// CallerRan counts tasks CallerRuns handed to a submitting goroutine to
	// run. A task submitted with a context (smartpool.WithContext, a
	// Group's) whose context had ended by then is counted here and skipped
	// there: the pool counts it as Cancelled, not Ran.
	CallerRan uint64
}

// Stats returns the overflow counters; each is read atomically, not all at
// one instant.
func (b *Bounded) Stats() BoundedStats {
	return BoundedStats{
		Dropped:   b.src.droppedOldest.Load(),
		CallerRan: b.src.callerRan.Load(),
	}
}
