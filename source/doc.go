// Package source is the contract between a smartpool pool and its channels:
// what a channel author implements (Source, and optionally BatchPoller,
// OrderedPoller and Reorderer) and what the pool gives a channel in return
// (Bits). Programs that only use channels never import it; the channels
// package and the JetStream channel are written against it, and so is any
// channel of your own. It never imports the smartpool package, as
// database/sql/driver never imports database/sql.
//
// A channel is a user-facing type (its constructor, its submit methods, Len)
// that embeds a Plug made by NewPlug from its Source, usually an unexported
// value inside it, so that users of the channel see none of these methods:
//
//	type plug = source.Plug // unexported: no Plug in the channel's godoc
//
//	type Stack struct {
//		plug
//		src stackSource // Queues, Attach, Push, Requeue, Poll, Close
//	}
//
//	func NewStack() *Stack {
//		s := new(Stack)
//		s.plug = source.NewPlug(&s.src)
//		return s
//	}
//
//	func (s *Stack) Submit(fn func(context.Context), opts ...smartpool.Option) error { ... }
//	func (s *Stack) Len() int { ... }
//
// The optional interfaces (BatchPoller, OrderedPoller, Reorderer) are
// implemented by the Source too.
//
// # Attaching
//
// New calls Queues, then Attach, once each, before any worker starts. A
// channel has Queues() independent queues, numbered from 0; each has one
// availability bit, reached through the Bits given to Attach. Attach may
// start goroutines that fill the channel (a fetcher from a remote queue):
// what they queue before New returns runs once the pool starts, and their
// Bits.AdmitWait waits for the start.
//
// # Serving
//
// Serving: a channel accepts tasks only while a running pool serves it.
// Until New attached it, after a New that failed, and once the pool's Close
// started, Bits.Closed reports true and every submit method and Push returns
// ErrClosed; so a channel left out of the configuration's Levels, or one
// whose pool failed to start, can never take a task that would never run.
// (So nothing is queued before New.) A failed New leaves its channels
// refusing, and free to be attached by another New: Bits.Attached reports
// false for them. Attach must accept Bits whose Attached is false as a
// no-op, and refuse with ErrAttached once it holds Bits whose Attached is
// true.
//
// # The bit rule
//
// The bit rule: a queue's bit may be set spuriously for a moment, but once the
// channel's lock is released it is never clear while the queue holds a task
// the pool may run. The simple way to keep it: call Bits.Set when the queue
// goes from empty to non-empty and Bits.Clear when it goes back to empty, both
// with the channel's lock held; then, after unlocking, call Bits.Wake with the
// number of tasks added. A channel that never calls Wake with a lock held
// that its Poll takes says so in Attach with Bits.WakesOutsideLock: its
// wake-ups then give an idle worker its first task at once.
//
// # Polling
//
// Poll is called by workers, concurrently, for a queue whose bit they saw set
// (and, in a pool with channels that declare Bits.WakesOutsideLock, by their
// Wake on behalf of an idle worker); it returns nil when the queue is empty.
// A channel may also implement BatchPoller, to give a worker several tasks
// per call, and OrderedPoller.
//
// # Push and Requeue
//
// Push is the by-key submit (Pool.Submit), and the way a channel's own
// submit given options (Bits.Submit) queues: it enqueues a task ordered by
// o, the key WithDeadline or WithPriority gave, or with the channel's
// default ordering for the zero Order. A channel that does not order by a
// key o has returns Unordered(o), before anything else.
//
// Requeue enqueues a task that already ran and yielded, re-entering through
// this channel as its followup (see Yield), with the default ordering too; it
// must accept the task even after Bits.Closed turned true, and refuse it with
// ErrClosed only once Close(true) emptied the channel, or while Bits.Attached
// reports false. A channel that orders by a key (a priority, a deadline)
// should implement OrderedPoller, and in Requeue give the task back the key
// Bits.OrderOf returns when it is of its own kind, so that a task that
// yields keeps its place.
//
// # Admission
//
// Admission: every submit method and Push (not Requeue) must return
// ErrClosed, with the channel's lock held, once Bits.Closed reports true.
// The pool reports Closed before it calls Close, so that a producer that saw ErrClosed from one
// channel gets it from every channel afterwards.
//
// # The in-flight limit
//
// In-flight limit (Config.Limit): Push and Requeue receive tasks that hold a
// unit of the limit already. A channel's own submit methods take one per task
// with Bits.Admit (or Bits.AdmitWait if they block), and give it back with
// Bits.Refund if they do not queue the task after all. The pool releases
// every other unit when the task ends. Without a limit all of these cost one
// branch. A channel whose own submits all keep this rule says so in Attach
// with Bits.AdmitsOwnSubmits; the pool keeps the limit itself for channels
// that do not, so a forgotten Admit costs a little time, never the limit.
//
// # Drops
//
// Drops: a channel that throws away a queued task the pool never ran (a late
// deadline, a displaced oldest task) passes it through Bits.Discard, once,
// after releasing its lock, with why. Discard ends the task as dropped as
// Close does (unit released, counted in the pool's Stats, Future or Group
// resolved with ErrDropped, ChannelParams.OnEnd called with why) and
// reports whether it did, so that the channel counts its own drops alike. A
// task must never leave a channel any other way than through Poll, Close or
// Discard.
//
// # Held tasks
//
// Held tasks: Close reports once no share of what it waits for is left, and
// a removal (Pool.RemoveChannel) reports the channel once its Len reads 0
// and then no task of it is held; so a task the channel takes out of its
// queues under its lock and ends after releasing it (Discard outside Poll),
// or accepts and runs on the caller (RunInTask, RunHere) instead of
// queueing it, must be announced with Bits.Hold under the lock, in the
// hold in which the submit saw Closed report false, before the task leaves
// the queue, and released with Bits.Unhold once Discard or the run
// returned, in every pool. A Discard called from Poll needs no Hold: the
// worker that polls holds the poll.
//
// # Timing
//
// Timing: a channel's own submit methods pass each task they queue through
// Bits.Stamp and queue what it returns, so that the pool can time its queue
// wait (a channel that does not is still correct; its waits go untimed).
// Push and Requeue receive tasks ready to queue as they are.
//
// # Close
//
// Close is called once, by OwnedPool.Close, after Bits.Closed turned true;
// if drop is true the channel removes every queued task, clears its bits and
// returns the tasks, which the pool reports as dropped. Taking the lock in
// Close also waits out any submit still in progress. Close must do nothing
// and return nil unless Bits.Closing reports true: code that reaches the
// Source (SourceOf) and calls it by mistake cannot empty a channel a running
// pool serves, nor remove tasks that would then be reported nowhere.
//
// The Channel's Len counts the tasks the Source holds; it may be called at
// any time, from any goroutine. No method may block for long: they run on
// workers and submitters.
package source
