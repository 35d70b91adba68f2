package source

import (
	"context"

	"github.com/smartpool-go/smartpool/internal/engine"
	"github.com/smartpool-go/smartpool/task"
)

// Bits is a channel's handle on the availability bits of its queues, and on
// the pool that serves them: admission, drops, holds, runs in the caller and
// timing. The zero Bits belongs to no pool: Closed reports true, so a
// channel refuses tasks until New attaches it, and Set, Clear and Wake do
// nothing. Bits is a small value; copy it freely. Its methods are safe for
// concurrent use.
type Bits struct{ b engine.Bits }

// Admit takes n units of the pool's in-flight limit, all or none, for tasks
// about to be queued by one of the channel's own submit methods (Push and
// Requeue get tasks the pool admitted). It returns ErrFull when fewer are
// free, and nil at once if the pool has no limit or b belongs to no pool. A
// channel that then does not queue a task after all calls Refund.
func (b Bits) Admit(n int) error { return b.b.Admit(n) }

// AdmitWait is Admit for blocking submit methods: it waits for a unit until
// ctx ends (returning ctx.Err()) or the pool's Close starts (ErrClosed).
// Called by a goroutine the channel started in Attach, before New returned,
// it first waits for the pool to start (ErrClosed if New fails); called
// from Attach itself, which New waits for, it returns an error wrapping
// ErrConfig at once. A pool without a limit has no unit to wait for, but
// the rest holds as well: AdmitWait returns nil once the pool runs, so that
// a channel never queues work that no pool will run. It returns nil at
// once if b belongs to no pool.
func (b Bits) AdmitWait(ctx context.Context) error { return b.b.AdmitWait(ctx) }

// Refund gives back n units that Admit or AdmitWait took (or that the pool
// took for Push) for tasks the channel did not queue after all, such as a
// task it ran on the caller's goroutine instead.
func (b Bits) Refund(n int) { b.b.Refund(n) }

// Discard is called by a channel that throws away a queued task the pool
// never ran, outside the channel's lock, with why it did: DroppedLate (a
// late deadline) or DroppedDisplaced (a displaced oldest task). The pool
// ends the task as dropped, as Close ends the tasks it drops: it releases
// the task's unit of the in-flight limit, counts it in ChannelStats.Dropped,
// resolves its Future or Group with ErrDropped and passes it to
// ChannelParams.OnEnd with why. A task its submitter cancelled was reported
// already, and a yielded task re-entering ends itself as dropped: Discard
// reports false for them, and true when it ended t as dropped now (so a
// channel counts its own drops alike). Discard each task once. Called
// outside Poll, it comes between Hold, with the lock held as the task left
// the queue, and Unhold (see Source, "Held tasks").
func (b Bits) Discard(t task.Task, why task.Outcome) bool { return b.b.Discard(t, why) }

// Attached reports whether b binds its channel to a pool: false for the zero
// Bits and for the Bits of a New that failed (the channel may then be
// attached again).
func (b Bits) Attached() bool { return b.b.Attached() }

// Len returns the number of queues b covers.
func (b Bits) Len() int { return b.b.Len() }

// Slice returns the Bits of queues [i, i+n) of b, for composite channels that
// hand parts of their queues to inner channels.
func (b Bits) Slice(i, n int) Bits { return Bits{b.b.Slice(i, n)} }

// Set marks queue i as holding work. Call it with the channel's lock held.
func (b Bits) Set(i int) { b.b.Set(i) }

// Clear marks queue i as empty. Call it with the channel's lock held.
func (b Bits) Clear(i int) { b.b.Clear(i) }

// Has reports whether queue i's bit is set, for channels that keep the bit
// rule without one lock over both submits and polls (see channels.FIFO).
func (b Bits) Has(i int) bool { return b.b.Has(i) }

// Closed reports whether no running pool serves the channel: it was never
// attached, its New failed, or the pool's Close started. Channels check it
// under their lock on every submit and refuse with ErrClosed while it
// reports true; it is one atomic load.
//
// In a pool with Config.Spare, it reports true too once RemoveChannel
// started removing the channel, and before AddChannel finished adding it.
func (b Bits) Closed() bool { return b.b.Closed() }

// Refusal returns the error a channel's submit methods return while Closed
// reports true: ErrNotServed while no pool serves the channel yet (never
// attached, its New failed, or AddChannel is adding it), ErrClosed once its
// pool's Close, or its removal, started.
func (b Bits) Refusal() error { return b.b.Refusal() }

// Closing reports whether the channel's Close may act: the pool it is
// attached to is closing (its Close started and has not finished). A
// channel's Close does nothing while Closing reports false, so a user's call
// cannot remove tasks that a running pool would run, nor close a channel
// that no pool holds, or that a failed New left free for another.
//
// A channel being removed (Pool.RemoveChannel) is closing too, until its
// removal ends; a removed channel never again.
func (b Bits) Closing() bool { return b.b.Closing() }

// Wake tells the pool that n tasks were added, so that idle workers start.
// Call it after releasing the channel's lock. It costs one atomic load when
// no worker is idle.
func (b Bits) Wake(n int) { b.b.Wake(n) }

// WakesOutsideLock declares, from the channel's Attach, that the channel
// calls Wake only after releasing every lock its Poll takes. Wake then hands
// the idle worker it wakes its first task: it polls, on the calling
// goroutine, the task the scheduler would choose (from this channel or
// another), so that on an idle pool a submitted task has started by the time
// its submit returns (a bounded channel has room again, and Close does not
// drop it). Without the declaration Wake only wakes the worker, which is
// safe for a channel that calls Wake under its lock (the search would call
// its Poll). The channels package's channels all declare it. Calls after
// New returned have no effect.
func (b Bits) WakesOutsideLock() { b.b.WakesOutsideLock() }

// AdmitsOwnSubmits declares, from the channel's Attach, that every task the
// channel queues through its own submit methods took a unit of the pool's
// in-flight limit with Admit or AdmitWait (see Source). Channels that do not
// declare it are accounted by the pool, at the cost of one atomic operation
// per task taken from them: tasks they queue without a unit are charged one
// when a worker takes them. Calls after New returned have no effect.
func (b Bits) AdmitsOwnSubmits() { b.b.AdmitsOwnSubmits() }

// InTask reports whether the calling goroutine runs a task of b's pool
// (holding a worker, or inside a Yield's wait), whatever context it holds.
// A channel's blocking submit asks it before it waits for room: a task that
// waits for room that only tasks can free may wait for ever, so such a
// task runs the task it submits itself (RunInTask). It costs a lookup, so
// ask it only when there is no room.
func (b Bits) InTask() bool { return b.b.InTask() }

// RunInTask runs t on the calling goroutine, in the place of the pool task
// that goroutine runs, for a channel's blocking submit called from a task
// that found no room (see InTask): the "help while you wait" rule of
// Group.Go. t needs no unit of Config.Limit: it runs in its parent's place
// (a channel that took one for it gives it back with Refund). It is counted in
// the channel's Stats like a worker's run (Ran, Panicked or Goexited). Its
// context is the calling task's, so its waits yield that task's worker. A
// panic is recovered and goes to the task's Future or Group, or to the
// pool's panic handler, not to the caller; runtime.Goexit ends t and then
// the calling task, whose goroutine it unwinds.
//
// Call Hold(1) with the channel's lock held, in the hold in which the
// submit saw Closed report false, and Unhold(1) after RunInTask (or
// RunHere) returned: Close, and a removal of the channel, then report only
// once t ended (see Hold).
//
// It reports whether it ran t: false, running nothing, if the calling
// goroutine runs no task of b's pool, if the channel has a cap
// (ChannelParams.MaxRunning, MaxInFlight) with no slot free, or if b
// belongs to no pool.
func (b Bits) RunInTask(t task.Task) bool { return b.b.RunInTask(t) }

// Hold counts n tasks that the channel holds outside its queues, so that
// the pool's Close does not report (nor return) before they ended, and a
// removal of the channel (Pool.RemoveChannel) waits for them before it
// reports the channel's final stats: a task it takes out of its queues to
// pass to Discard after releasing its lock (a displaced oldest task), or a
// task its submit runs on the caller (RunInTask, RunHere) instead of
// queueing it. Call it in every pool, with the channel's lock held, in the
// same hold in which the submit saw Closed report false, before the task
// leaves the queue; and call Unhold(n) once Discard or the run returned,
// deferred so that a runtime.Goexit in the task cannot skip it. A Close
// that starts later takes that lock to close the channel, so it sees the
// Hold and waits for the Unhold. It does nothing if b belongs to no pool.
func (b Bits) Hold(n int) { b.b.Hold(n) }

// Unhold ends the count Hold(n) began, once the tasks ended.
func (b Bits) Unhold(n int) { b.b.Unhold(n) }

// Submit is a channel's own submit method given options (see Option): it
// queues t in the channel through the pool, which admits it, ties it to
// the context of WithContext and queues it with push, or with the channel's
// Push if push is nil, ordered by order merged with the options' ordering
// (a key set both ways is an error wrapping ErrOption). push receives a
// task the pool admitted, perhaps wrapped, and must queue it as Push would
// (channels.Keyed passes one that queues under the submit's group). A
// channel calls Submit only when its caller passed options, and queues as
// usual otherwise, so that submits without options cost nothing more. It
// returns ErrClosed when no running pool serves the channel.
func (b Bits) Submit(t task.Task, order task.Order, opts []Option, push func(task.Task, task.Order) error) error {
	return b.b.Submit(t, order, opts, push)
}

// OrderOf returns the key a yielded task re-entering through Requeue was
// first ordered by (see OrderedPoller), and false for any other task or if
// the channel that gave it out orders by no key.
func (b Bits) OrderOf(t task.Task) (task.Order, bool) { return b.b.OrderOf(t) }

// RunHere runs t on the calling goroutine, for a channel that runs a task
// instead of queueing it (channels.CallerRuns), and counts its outcome in the
// channel's Stats as a worker's run would be: Ran, Panicked or Goexited. A
// panic is recovered and sent to the pool's panic handler (and to the
// task's Future or Group); runtime.Goexit is counted and then ends the calling
// goroutine, as it would without the pool. The task's context is ctx, which
// is context.Background() if nil. Its waits are plain waits, except on the
// goroutine of a pool task, whose worker they give back (see Yield).
//
// The channel must have given back the task's unit of Config.Limit first
// (Bits.Refund), since the task never enters the pool; it holds the task
// (Bits.Hold) under its lock, as for RunInTask, so that Close waits for
// the run; Close called from the task or its OnEnd returns
// ErrCloseFromTask. Without a pool (zero Bits) RunHere just runs t and lets a
// panic through.
func (b Bits) RunHere(ctx context.Context, t task.Task) { b.b.RunHere(ctx, t) }

// Stamp returns t, or, when timing picks it (Config.TimingEvery), t wrapped
// with the time now so that the pool records its queue wait when it starts.
// A channel's own submit methods call it on each task they queue, with the
// channel's lock held or not; Push and Requeue receive tasks the pool
// stamped already. The wrapper implements Unwrapper, so Discard returns the
// task as submitted. The zero Bits returns t.
func (b Bits) Stamp(t task.Task) task.Task { return b.b.Stamp(t) }

// Unstamp tells the pool that t, which Stamp returned, was not queued
// after all and its submit returns err: a pool with Config.Observe ends
// the task's observer there. A channel that stamps only tasks it then
// queues for sure never calls it. The zero Bits does nothing.
func (b Bits) Unstamp(t task.Task, err error) { b.b.Unstamp(t, err) }
