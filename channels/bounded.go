package channels

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/internal/nilcheck"
	"github.com/smartpool-go/smartpool/internal/queue"
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
// smartpool.Bits.WakesOutsideLock), so on an idle one-worker pool a
// NewBounded(1) takes one task that runs and one that waits, as pond's
// queue size does.
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
// A task that yielded re-enters through Requeue (see smartpool.Yield). It
// already held admission when it was first queued, and refusing it would
// drop a running task, so Requeue accepts it even when the channel is full,
// until Close(true) emptied the channel. Queued re-entries count towards Len:
// a Bounded may therefore hold more than its capacity for a while, and then
// admits nothing new until Poll brings Len below the capacity. DropOldest
// never drops a re-entry.
//
// # Capacity
//
// SetCapacity changes the capacity at run time: raising it admits waiters at
// once; lowering it never drops a queued task, it only refuses (or, with an
// overflow policy, displaces) new ones until Len falls below it.
//
// The zero Bounded, like one made by NewBounded with a capacity below 1, has
// no queues: Queues returns 0, so smartpool.New refuses it with
// smartpool.ErrNoQueues, and its submit methods and Requeue return
// smartpool.ErrNoQueues. Use NewBounded. A Bounded must not be copied after
// first use. All methods are safe for concurrent use; only a submit given a
// context blocks, and only as described above.
//
// A Bounded takes tasks only while a running pool serves it: before New attached
// it, after a New that failed, and from the pool's Close on, its submit
// methods return smartpool.ErrClosed (see smartpool.Channel). Its Queues,
// Attach, Push, Requeue, Poll and Close are called by the pool, not by users.
type Bounded struct {
	mu         sync.Mutex
	q          queue.Queue[boundedItem] // guarded by mu
	front      queue.Queue[boundedItem] // re-entries DropOldest stepped over: all older than q's; guarded by mu
	capacity   int                      // guarded by mu
	head, tail *boundedWaiter           // blocked submitters, oldest first; guarded by mu
	waiting    int                      // length of the waiter list; guarded by mu
	closed     bool                     // Close was called; guarded by mu
	dropped    bool                     // Close(true) emptied it: Requeue refuses too; guarded by mu
	bits       smartpool.Bits           // set by Attach before the pool starts; guarded by mu

	queues     int  // 1, or 0 for a Bounded made with capacity < 1; read-only
	dropOldest bool // set by NewBounded, read-only after
	callerRuns bool // set by NewBounded, read-only after

	droppedOldest atomic.Uint64
	callerRan     atomic.Uint64
}

// boundedItem is one queued task.
type boundedItem struct {
	t       smartpool.Task
	requeue bool // a yielded task re-entering: never dropped by DropOldest
}

// boundedWaiter is a submit blocked on a full Bounded. Every field but ready
// is guarded by the Bounded's mu; ready is closed, under mu, once settled.
type boundedWaiter struct {
	t          smartpool.Task // nil once settled
	ready      chan struct{}
	err        error // the outcome: nil (queued) or smartpool.ErrClosed
	settled    bool
	prev, next *boundedWaiter
}

// BoundedOption configures a Bounded built by NewBounded.
type BoundedOption struct {
	apply func(b *Bounded)
}

// DropOldest makes a full Bounded accept every new task and drop the oldest
// queued task that was submitted (never a re-entry; see Bounded) to make up
// for it, so that submits never wait and never fail for lack of room. If the
// only tasks queued before it are re-entries, the new task is the oldest one
// that may be dropped, and it is. Each submit on a full channel drops exactly
// one task, so after the capacity was lowered Len stays put until Poll
// brings it below the capacity.
//
// A displaced task ends as dropped (smartpool.Bits.Discard), on the
// submitting goroutine, after the channel's lock was released: it is
// counted in BoundedStats.Dropped and in the pool's Stats as Dropped, its
// Future or Group resolves with smartpool.ErrDropped, and the channel's
// smartpool.ChannelParams.OnEnd receives it with smartpool.DroppedDisplaced.
//
// DropOldest and CallerRuns exclude each other: the last one given wins.
func DropOldest() BoundedOption {
	return BoundedOption{apply: func(b *Bounded) { b.dropOldest, b.callerRuns = true, false }}
}

// CallerRuns makes a submit on a full Bounded (Submit, SubmitTask,
// smartpool.Pool.Submit, with or without a context) run the task at once
// in the calling goroutine, and return nil, instead of returning
// smartpool.ErrFull or waiting: a producer that outpaces the pool is slowed
// down by doing the work itself.
//
// The task runs on the calling goroutine through smartpool.Bits.RunHere,
// with context.Background(), since the pool's task context belongs to a
// worker. So smartpool.Yield inside it just calls its wait function, and
// Close does not wait for it nor cancel it; called from a task of the pool,
// it runs in that task's place instead (smartpool.Bits.RunInTask), with its
// context, so its waits yield. The pool counts it in its Stats like a
// worker's run (Ran, Panicked or Goexited), and a panic in it is recovered
// and goes to the pool's panic handler (or the task's Future or Group), not
// to the caller. Each is also counted in BoundedStats.CallerRan. After the
// pool's Close started, the submits return smartpool.ErrClosed and run
// nothing.
//
// DropOldest and CallerRuns exclude each other: the last one given wins.
func CallerRuns() BoundedOption {
	return BoundedOption{apply: func(b *Bounded) {
		b.callerRuns, b.dropOldest = true, false
	}}
}

// NewBounded returns an empty Bounded that queues at most capacity submitted
// tasks, configured by opts. For capacity < 1 it returns a Bounded with no
// queues (see Bounded), which smartpool.New refuses with smartpool.ErrNoQueues:
// a zero capacity is far more often a missing setting than a wish to admit
// nothing.
func NewBounded(capacity int, opts ...BoundedOption) *Bounded {
	b := new(Bounded)
	if capacity >= 1 {
		b.queues, b.capacity = 1, capacity
	}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(b)
		}
	}
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
// nil t, smartpool.ErrNoQueues for a Bounded without queues, ctx.Err() if
// ctx ended before t was queued (already on entry, even if there is room),
// or smartpool.ErrClosed once the pool's Close started, including for a
// submit that was waiting.
func (b *Bounded) SubmitTask(t smartpool.Task, opts ...smartpool.Option) error {
	if nilcheck.Nil(t) { // a Func(nil) would panic on the worker
		return smartpool.ErrNilTask
	}
	if len(opts) == 0 {
		return b.offer(t, submitted)
	}
	if b.queues == 0 {
		return smartpool.ErrNoQueues
	}
	b.mu.Lock()
	bits := b.bits // read under mu: Attach may run concurrently
	b.mu.Unlock()
	// The pool admits t, then queues it by Push and, if that finds the
	// channel full, by PushWait.
	return bits.Submit(t, smartpool.Order{}, opts, nil)
}

// waitLocked queues t as a waiter for room and waits until it is settled or
// ctx ends; it releases the lock.
func (b *Bounded) waitLocked(ctx context.Context, t smartpool.Task) error {
	w := &boundedWaiter{t: t, ready: make(chan struct{})}
	b.appendWaiterLocked(w)
	b.mu.Unlock()
	var err error
	smartpool.Yield(ctx, func() { err = b.await(ctx, w) })
	return err
}

// await waits until w is settled or ctx ends, and returns the submit's
// result.
func (b *Bounded) await(ctx context.Context, w *boundedWaiter) error {
	select {
	case <-w.ready:
		return w.err // written before ready was closed
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.settled { // settled as ctx ended: that outcome stands
		return w.err
	}
	b.removeWaiterLocked(w)
	w.t = nil
	return ctx.Err()
}

// Push is SubmitTask without options for a task the pool admitted; it is
// the by-key submit of smartpool.Pool.Submit, which therefore returns
// smartpool.ErrFull for a full Bounded under the default policy.
//
// Called by the pool; not for users (Pool.Submit is the by-key submit).
func (b *Bounded) Push(t smartpool.Task, o smartpool.Order) error {
	if o.HasDeadline || o.HasPriority {
		return smartpool.Unordered(o)
	}
	return b.offer(t, pushed)
}

// PushWait is Push for the pool's waiting submits (a submit given
// smartpool.WithContext, smartpool.Group.Go), which call it when Push
// returned smartpool.ErrFull: it waits for room (see "Waiting"). Like Push,
// it receives a task that holds its unit of the pool's in-flight limit
// already. It returns nil exactly when it queued t, ctx.Err() if ctx ended
// first, or smartpool.ErrClosed. The pool calls it; users call Submit.
func (b *Bounded) PushWait(ctx context.Context, t smartpool.Task) error {
	switch {
	case t == nil:
		return smartpool.ErrNilTask
	case b.queues == 0:
		return smartpool.ErrNoQueues
	case ctx.Err() != nil:
		return ctx.Err()
	}
	b.mu.Lock()
	if done, err := b.queueOrHoldLocked(t); done {
		return err
	}
	return b.waitLocked(ctx, t)
}

// offer is the non-blocking submit, with the overflow policy. A submitted
// task takes its unit of the pool's in-flight limit here, and gives it back
// if it is not queued.
func (b *Bounded) offer(t smartpool.Task, how entry) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	if b.queues == 0 {
		return smartpool.ErrNoQueues
	}
	b.mu.Lock()
	bits := b.bits
	if b.refusingLocked() {
		b.mu.Unlock()
		return smartpool.ErrClosed
	}
	if how == submitted {
		if err := bits.Admit(1); err != nil {
			b.mu.Unlock()
			return err
		}
	}
	err := b.offerLocked(how.stamp(bits, t), bits)
	if err != nil && how == submitted {
		bits.Refund(1)
	}
	return err
}

// offerLocked queues t if there is room, or applies the overflow policy; it
// releases the lock.
func (b *Bounded) offerLocked(t smartpool.Task, bits smartpool.Bits) error {
	if done, err := b.queueOrHoldLocked(t); done {
		return err
	}
	switch {
	case b.dropOldest:
		b.pushLocked(boundedItem{t: t})
		victim := b.evictLocked()
		b.mu.Unlock()
		bits.Wake(1)
		b.drop(victim, bits)
		return nil
	case b.callerRuns:
		b.mu.Unlock()
		bits.Refund(1) // it runs here, outside the pool's count of units
		b.callerRan.Add(1)
		if !bits.RunInTask(t) { // in a task's place, or else on a plain goroutine
			bits.RunHere(context.Background(), t) // counted in the pool's Stats
		}
		return nil
	}
	b.mu.Unlock()
	return smartpool.ErrFull
}

// tryQueueLocked refuses t with smartpool.ErrClosed once admission stopped,
// or queues it if there is room; queued reports the latter.
func (b *Bounded) tryQueueLocked(t smartpool.Task) (queued bool, err error) {
	if b.refusingLocked() {
		return false, smartpool.ErrClosed
	}
	if !b.roomLocked() {
		return false, nil
	}
	b.pushLocked(boundedItem{t: t})
	return true, nil
}

// queueOrHoldLocked settles t if it can at once: it queues t if there is
// room, or refuses it once admission stopped, and then releases the lock
// (done). Otherwise it keeps the lock held for the caller's overflow path.
func (b *Bounded) queueOrHoldLocked(t smartpool.Task) (done bool, err error) {
	queued, err := b.tryQueueLocked(t)
	switch {
	case queued:
		b.unlockAndWake()
	case err != nil:
		b.mu.Unlock()
	default:
		return false, nil
	}
	return true, err
}

// unlockAndWake releases the lock and wakes a worker for the task just
// queued (the bits are read under the lock: Attach may run concurrently).
func (b *Bounded) unlockAndWake() {
	bits := b.bits
	b.mu.Unlock()
	bits.Wake(1)
}

// Requeue queues a yielded task re-entering the pool, whatever the room (see
// Bounded); see smartpool.Channel. It returns smartpool.ErrClosed only once
// Close(true) emptied the channel, or while no pool holds it.
//
// Called by the pool; not for users.
func (b *Bounded) Requeue(t smartpool.Task) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	if b.queues == 0 {
		return smartpool.ErrNoQueues
	}
	b.mu.Lock()
	if b.dropped || !b.bits.Attached() {
		b.mu.Unlock()
		return smartpool.ErrClosed
	}
	b.pushLocked(boundedItem{t: t, requeue: true})
	bits := b.bits
	b.mu.Unlock()
	bits.Wake(1)
	return nil
}

// Poll removes and returns the oldest task, or nil if the Bounded is empty.
// The slot it frees goes to the oldest waiting submit, if any (see Bounded).
//
// Called by the pool; not for users.
func (b *Bounded) Poll(int) smartpool.Task {
	b.mu.Lock()
	it, ok := b.front.Pop()
	if !ok {
		it, ok = b.q.Pop()
	}
	if !ok {
		b.mu.Unlock()
		return nil
	}
	admitted := 0
	if b.head != nil {
		admitted = b.admitLocked()
	}
	if b.lenLocked() == 0 {
		b.bits.Clear(0)
	}
	bits := b.bits
	b.mu.Unlock()
	bits.Wake(admitted)
	return it.t
}

// Len returns the number of queued tasks, re-entries included; it may exceed
// Cap (see Bounded).
func (b *Bounded) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lenLocked()
}

// Cap returns the capacity: 0 for a Bounded without queues.
func (b *Bounded) Cap() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.capacity
}

// Waiting returns the number of submits blocked for room (given
// smartpool.WithContext).
func (b *Bounded) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting
}

// SetCapacity sets the capacity to n, or to 1 if n < 1, effective for the
// next submit. Raising it hands the new room to waiting submitters at once;
// lowering it drops nothing (see Bounded). It has no effect on a Bounded
// without queues.
func (b *Bounded) SetCapacity(n int) {
	if b.queues == 0 {
		return
	}
	b.mu.Lock()
	b.capacity = max(n, 1)
	admitted := 0
	if b.head != nil {
		admitted = b.admitLocked()
	}
	bits := b.bits
	b.mu.Unlock()
	bits.Wake(admitted)
}

// Queues returns 1, or 0 for a Bounded made with capacity < 1 (see Bounded).
//
// Called by the pool; not for users.
func (b *Bounded) Queues() int { return b.queues }

// Attach binds the Bounded to a pool; it is called by smartpool.New. It
// returns smartpool.ErrAttached if the Bounded already belongs to a pool.
//
// Called by the pool; not for users.
func (b *Bounded) Attach(bits smartpool.Bits) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bits.Attached() {
		return smartpool.ErrAttached
	}
	b.bits = bits
	bits.AdmitsOwnSubmits() // its submit methods take their units
	bits.WakesOutsideLock() // Wake comes after the lock is released
	if b.lenLocked() > 0 {
		b.bits.Set(0)
	}
	return nil
}

// Close stops admission, releases every waiting submit with
// smartpool.ErrClosed and, if drop is set, empties the Bounded and returns its
// tasks oldest first; it is called by the pool's Close.
//
// Called by the pool; not for users.
func (b *Bounded) Close(drop bool) []smartpool.Task {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.bits.Closing() {
		return nil // a user's call while a pool serves it, or before one does: see smartpool.Channel
	}
	b.closed = true
	b.dropped = b.dropped || drop
	b.releaseLocked(smartpool.ErrClosed)
	n := b.lenLocked()
	if !drop || n == 0 {
		return nil
	}
	b.bits.Clear(0)
	out := make([]smartpool.Task, 0, n)
	for _, q := range []*queue.Queue[boundedItem]{&b.front, &b.q} {
		for it, ok := q.Pop(); ok; it, ok = q.Pop() {
			out = append(out, it.t)
		}
	}
	return out
}

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
		Dropped:   b.droppedOldest.Load(),
		CallerRan: b.callerRan.Load(),
	}
}

func (b *Bounded) lenLocked() int { return b.front.Len() + b.q.Len() }

// roomLocked reports whether a submit may queue its task now. No one may jump
// the waiters' line; while anyone waits the channel is full anyway.
func (b *Bounded) roomLocked() bool { return b.head == nil && b.lenLocked() < b.capacity }

// refusingLocked reports whether admission stopped: every submit method must
// see it under the lock (see smartpool.Channel).
func (b *Bounded) refusingLocked() bool { return b.closed || b.bits.Closed() }

// pushLocked queues it, keeping the bit rule of smartpool.Channel.
func (b *Bounded) pushLocked(it boundedItem) {
	b.q.Push(it)
	if b.lenLocked() == 1 {
		b.bits.Set(0)
	}
}

// evictLocked removes and returns the oldest submitted task. The re-entries
// queued before it move to front, which Poll serves first, so the order of
// everything else is kept. q holds at least one submitted task (the one just
// pushed), and the Bounded stays non-empty: it was full before that push.
func (b *Bounded) evictLocked() smartpool.Task {
	for {
		it, _ := b.q.Pop()
		if !it.requeue {
			return it.t
		}
		b.front.Push(it)
	}
}

// drop reports a task DropOldest displaced, releasing its unit of the
// pool's in-flight limit. It runs without the lock.
func (b *Bounded) drop(t smartpool.Task, bits smartpool.Bits) {
	if bits.Discard(t, smartpool.DroppedDisplaced) { // false: its submitter cancelled it, reported already
		b.droppedOldest.Add(1)
	}
}

// admitLocked hands free slots to waiters, oldest first, and returns how many
// tasks it queued; once admission stopped it releases every waiter with
// smartpool.ErrClosed instead. See "Waiting: hand-off admission".
func (b *Bounded) admitLocked() int {
	if b.refusingLocked() {
		b.releaseLocked(smartpool.ErrClosed)
		return 0
	}
	n := 0
	for b.head != nil && b.lenLocked() < b.capacity {
		w := b.head
		b.removeWaiterLocked(w)
		b.pushLocked(boundedItem{t: w.t})
		settleLocked(w, nil)
		n++
	}
	return n
}

// releaseLocked settles every waiter with err.
func (b *Bounded) releaseLocked(err error) {
	for b.head != nil {
		w := b.head
		b.removeWaiterLocked(w)
		settleLocked(w, err)
	}
}

func settleLocked(w *boundedWaiter, err error) {
	w.t, w.err, w.settled = nil, err, true
	close(w.ready)
}

func (b *Bounded) appendWaiterLocked(w *boundedWaiter) {
	w.prev = b.tail
	if b.tail == nil {
		b.head = w
	} else {
		b.tail.next = w
	}
	b.tail = w
	b.waiting++
}

func (b *Bounded) removeWaiterLocked(w *boundedWaiter) {
	if w.prev == nil {
		b.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		b.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
	b.waiting--
}
