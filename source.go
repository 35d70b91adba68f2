package smartpool

// Source is the side of a channel the pool talks to: everything a channel
// author implements beyond the channel's own submit methods. A channel is a
// user-facing type (its constructor, its submit methods, Len) that embeds a
// Plug made by NewPlug from its Source, usually an unexported value inside
// it, so that users of the channel see none of these methods:
//
//	type plug = smartpool.Plug // unexported: no Plug in the channel's godoc
//
//	type Stack struct {
//		plug
//		src stackSource // Queues, Attach, Push, Requeue, Poll, Close
//	}
//
//	func NewStack() *Stack {
//		s := new(Stack)
//		s.plug = smartpool.NewPlug(&s.src)
//		return s
//	}
//
//	func (s *Stack) Submit(fn func(context.Context), opts ...smartpool.Option) error { ... }
//	func (s *Stack) Len() int { ... }
//
// The optional interfaces (BatchPoller, OrderedPoller, Reorderer) are
// implemented by the Source too.
//
// # Contract
//
// New calls Queues, then Attach, once each, before any worker starts. A
// channel has Queues() independent queues, numbered from 0; each has one
// availability bit, reached through the Bits given to Attach. Attach may
// start goroutines that fill the channel (a fetcher from a remote queue):
// what they queue before New returns runs once the pool starts, and their
// Bits.AdmitWait waits for the start.
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
// The bit rule: a queue's bit may be set spuriously for a moment, but once the
// channel's lock is released it is never clear while the queue holds a task
// the pool may run. The simple way to keep it: call Bits.Set when the queue
// goes from empty to non-empty and Bits.Clear when it goes back to empty, both
// with the channel's lock held; then, after unlocking, call Bits.Wake with the
// number of tasks added. A channel that never calls Wake with a lock held
// that its Poll takes says so in Attach with Bits.WakesOutsideLock: its
// wake-ups then give an idle worker its first task at once.
//
// Poll is called by workers, concurrently, for a queue whose bit they saw set
// (and, in a pool with channels that declare Bits.WakesOutsideLock, by their
// Wake on behalf of an idle worker); it returns nil when the queue is empty.
// A channel may also implement BatchPoller, to give a worker several tasks
// per call, and OrderedPoller.
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
// Admission: every submit method and Push (not Requeue) must return
// ErrClosed, with the channel's lock held, once Bits.Closed reports true.
// The pool reports Closed before it calls Close, so that a producer that saw ErrClosed from one
// channel gets it from every channel afterwards.
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
// Drops: a channel that throws away a queued task the pool never ran (a late
// deadline, a displaced oldest task) passes it through Bits.Discard, once,
// after releasing its lock, with why. Discard ends the task as dropped as
// Close does (unit released, counted in the pool's Stats, Future or Group
// resolved with ErrDropped, ChannelParams.OnEnd called with why) and
// reports whether it did, so that the channel counts its own drops alike. A
// task must never leave a channel any other way than through Poll, Close or
// Discard.
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
// Timing: a channel's own submit methods pass each task they queue through
// Bits.Stamp and queue what it returns, so that the pool can time its queue
// wait (a channel that does not is still correct; its waits go untimed).
// Push and Requeue receive tasks ready to queue as they are.
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
type Source interface {
	Queues() int
	Attach(b Bits) error
	Push(t Task, o Order) error
	Requeue(t Task) error
	Poll(queue int) Task
	Close(drop bool) []Task
}

// Reorderer is implemented by a Source that can move a queued task to a new
// key in place (channels.Priority, channels.Deadline, and channels.Multi by
// its shards'), for Handle's Reprioritize and SetDeadline.
//
// PushIndexed is Push, with the same contract, for a task submitted with
// WithHandle: the Source also keeps an index from t to its entry, so that
// Reorder finds it without a search, until t leaves the queue (Poll, Close,
// Discard) and the entry is forgotten. Only such tasks are indexed, so the
// tasks queued by Push cost nothing more. The pool calls it with tasks that
// are pointers, comparable with ==.
//
// Reorder gives the queued task t the key o, with the channel's lock held,
// and moves it to the place that key gives (among tasks of equal key, it
// keeps its place of submission). It returns Unordered(o) for a key the
// channel does not order by, before anything else, as Push does; then
// ErrNotQueued if t is not an indexed task the Source still holds (nil
// included: the pool asks so when the task has started, to learn only
// whether o's key is the channel's); nil once t is moved. It must not block
// for long; it calls no Bits method, as the queue goes neither empty nor
// non-empty.
type Reorderer interface {
	PushIndexed(t Task, o Order) error
	Reorder(t Task, o Order) error
}

// Bits is a channel's handle on the availability bits of its queues. The zero
// Bits belongs to no pool: Closed reports true, so a channel refuses tasks
// until New attaches it, and Set, Clear and Wake do nothing. Bits is a small
// value; copy it freely.
type Bits struct {
	e    *engine
	base int // global number of the channel's queue 0
	n    int
	att  *attachment // the channel's attachment in a pool with Config.Spare (reshape.go); nil otherwise
}

// Attached reports whether b binds its channel to a pool: false for the zero
// Bits and for the Bits of a New that failed (the channel may then be
// attached again).
func (b Bits) Attached() bool {
	return b.e != nil && !b.e.failed.Load() && (b.att == nil || b.att.state.Load() != attDetached)
}

// Len returns the number of queues b covers.
func (b Bits) Len() int { return b.n }

// Slice returns the Bits of queues [i, i+n) of b, for composite channels that
// hand parts of their queues to inner channels.
func (b Bits) Slice(i, n int) Bits {
	if i < 0 || n < 0 || i+n > b.n {
		panic("smartpool: Bits.Slice out of range")
	}
	return Bits{e: b.e, base: b.base + i, n: n, att: b.att}
}

// Set marks queue i as holding work. Call it with the channel's lock held.
func (b Bits) Set(i int) {
	if b.e != nil && b.att.attached() { // a removed channel's queues may serve another now
		b.e.field.Set(b.index(i))
	}
}

// Clear marks queue i as empty. Call it with the channel's lock held.
func (b Bits) Clear(i int) {
	if b.e != nil && b.att.attached() && b.e.field.Clear(b.index(i)) {
		b.e.wake() // a repair republished work: see the availability-bit protocol
	}
}

// Has reports whether queue i's bit is set, for channels that keep the bit
// rule without one lock over both submits and polls (see channels.FIFO).
func (b Bits) Has(i int) bool {
	return b.e != nil && b.e.field.Has(b.index(i))
}

// Closed reports whether no running pool serves the channel: it was never
// attached, its New failed, or the pool's Close started. Channels check it
// under their lock on every submit and refuse with ErrClosed while it
// reports true; it is one atomic load.
//
// In a pool with Config.Spare, it reports true too once RemoveChannel
// started removing the channel, and before AddChannel finished adding it.
func (b Bits) Closed() bool {
	return b.e == nil || b.e.stopped.Load() || b.att != nil && b.att.state.Load() != attLive
}

// Closing reports whether the channel's Close may act: the pool it is
// attached to is closing (its Close started and has not finished). A
// channel's Close does nothing while Closing reports false, so a user's call
// cannot remove tasks that a running pool would run, nor close a channel
// that no pool holds, or that a failed New left free for another.
//
// A channel being removed (Pool.RemoveChannel) is closing too, until its
// removal ends; a removed channel never again.
func (b Bits) Closing() bool {
	if b.att != nil {
		switch b.att.state.Load() {
		case attRemoving:
			return true
		case attDetached:
			return false
		}
	}
	// live counts the closer's share from start until the close ends.
	return b.e != nil && (b.e.standalone || b.e.stopped.Load() && b.e.live.Load() > 0)
}

// Wake tells the pool that n tasks were added, so that idle workers start.
// Call it after releasing the channel's lock. It costs one atomic load when
// no worker is idle.
func (b Bits) Wake(n int) {
	if b.e != nil && n > 0 && b.att.attached() {
		b.e.wakeFrom(b.base)
	}
}

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
func (b Bits) WakesOutsideLock() {
	if b.e == nil {
		return
	}
	if b.att.declaring() { // AddChannel's Attach
		b.att.wakesOutside.Store(true)
		return
	}
	if !b.e.attaching() {
		return
	}
	for i := range b.n {
		b.e.queues[b.base+i].wakeHands = true
	}
}

func (b Bits) index(i int) int {
	if uint(i) >= uint(b.n) {
		panic("smartpool: queue index out of range")
	}
	return b.base + i
}
