package engine

// # Sleep and wake-up protocol
//
// Idle workers park on their own one-slot channel (worker.wake); the parked
// ones are on a lock-free stack (internal/idle). Nothing global is locked.
//
// Parking (worker.park):
//
//  1. push yourself on the idle stack;
//  2. re-read the availability summary and the closing flag;
//  3. if either shows something to do, pop one worker from the stack (maybe
//     yourself) and send it a wake-up, with the waking token if it is free;
//  4. receive from your wake channel.
//
// Submitting (Bits.Wake, engine.wake), after the queue's bit is set:
//
//  1. if the idle stack is empty, stop: every worker is awake and will re-read
//     the summary before it parks;
//  2. if another wake-up is already in flight (waking is set), stop: the woken
//     worker will look for work, and pass a wake-up on if it finds more
//     (a channel whose wake-ups hand over tasks goes on: see "Waking with a
//     task, in bursts");
//  3. otherwise set waking, pop a worker and send it a wake-up that makes it
//     the waking worker (or, if the stack emptied meanwhile, clear waking
//     and start over while the summary shows work).
//
// No lost wake-up: sync/atomic is sequentially consistent, so of "set the bit,
// then load the stack" (submitter) and "push on the stack, then load the
// summary" (parker), at least one sees the other's write: either the
// submitter sees the parked worker and wakes someone, or the parker sees the
// bit and wakes someone (step 3), and whoever is woken re-reads the summary.
// The throttle (waking) cannot lose one either: whoever holds the flag clears
// it and then re-reads the summary. The waking worker does so when it found
// work (it then wakes the next worker if the summary is still non-zero, which
// chains wake-ups across a batch: at most one per new task), when it found
// none (it then parks through the steps above, or, closing, looks again
// before it exits), and a waker whose pop found the stack empty does so too.
// A submitter that skipped because the flag was set wrote its bit before
// reading the flag, so that re-read sees it. Tasks in workers' run buffers
// (buffer.go) are work the summary does not show: a worker that makes its
// buffer non-empty counts it in e.buffered and then wakes a worker, as a
// submitter sets a bit and then wakes, and every re-read above reads both
// (hasWork); so a worker never sleeps while a task waits in a buffer behind
// a task that blocks (buffer.pml). A Tidy in the search that
// repaired the summary wakes a worker too. These rules are model-checked in
// internal/model (park.pml, close.pml), each with the mutant that breaks it.
//
// Waking with a task: a wake-up from Bits.Wake, by a channel that queued
// tasks and declared that it calls Wake outside its locks
// (Bits.WakesOutsideLock), searches for a task on behalf of the worker it
// popped (or created) before it wakes it, with the worker's own cursor and
// picker (handOver), and leaves it in worker.next: the waker owns the popped
// worker until the wake-up, which orders its writes before the woken
// goroutine's reads. The woken worker runs that task first, and otherwise
// goes on as if its own search had found it: it passes the waking token on
// the same way. So an idle pool has started a submitted task by the time
// its submit returns: the task has left its queue (a Bounded has room
// again), a Close that starts later does not drop it (one handed while
// Close begins is dropped, as if the worker had polled it: handOver), and
// the end of its WithContext context no longer cancels it. Only
// the scheduler's choice is handed over (the highest level with work, by
// default), not necessarily the submitted task, so priorities hold; and
// nothing is handed to a worker at or above target, nor once Close started.
// Every other wake-up (passing the token on, repairs, Close) wakes without a
// task: a repair may run under a channel's lock (Bits.Clear), where a search
// could take that lock again. (internal/model/park.pml and close.pml,
// HANDOFF.)
//
// Waking with a task, in bursts: a submit of such a channel that finds the
// waking token held does not skip its wake-up while a worker is idle (on
// the stack, or not created yet) and fewer workers are awake than the
// processors (GOMAXPROCS at New): it pops one and hands it a task as
// above, without the token (engine.rouseIdle), as the Go runtime puts a
// readied goroutine in runnext and wakes an idle processor while none
// spins. So the first k submits of a burst to a pool with k idle workers,
// k up to the processors, start k tasks before they return, instead of
// one and a chain of wake-ups. Past the processors a woken worker would
// only wait for one (a wake-up storm: bursts of 64 into 64 idle workers
// on 2 processors cost 2.3 times as much per task without the bound), so
// the chain takes over. The woken worker holds no token, so it passes no
// wake-up on: the holder still does, and no wake-up that the protocol
// above relies on is skipped (a tokenless hand-over only adds one, and the
// bound only decides whether it does). (park.pml, BURST.)
//
// Orphans: a worker whose goroutine left with a yielded task while no work
// was eligible goes through steps 1-3 without a goroutine (worker.carryOn)
// and is marked orphan; whoever pops it starts a goroutine for it instead of
// sending a wake-up (worker.rouse). A parked goroutine that waited
// Config.IdleTimeout in vain turns its worker into an orphan where it lies on
// the stack, by a compare-and-swap that a pop's swap makes fail, and ends
// (park.pml and close.pml, mutants m12 and m9); a worker never created counts
// as one more orphan (workers.go; park.pml, mutant m11). A task re-entering an
// idle pool pops a worker for itself (taskContext.takeIdle): an orphan it
// adopts, carrying it on for good; a worker whose goroutine is parked it
// borrows, and gives back through steps 1-3 when it yields or ends, the
// goroutine still parked meanwhile. So every worker has at most one goroutine, and every pop is
// matched by one push or one wake-up. The state (parked, orphaned) is
// written by whoever pushes the worker and swapped by whoever pops it: the
// stack orders the two.
//
// Close sets the closing flag and then pops every worker off the stack and
// wakes it. A worker that parks after that sees the flag at step 2 and wakes
// one worker, so every push after Close is matched by a pop: unless yielded
// tasks are still due (e.inflight, yield.go), in which case closing workers
// park for real and whoever takes inflight to zero wakes them all.

import "time"

// wake starts one idle worker unless none is idle or a wake-up is in flight.
// If the stack emptied between the check and the pop, it clears waking and
// looks again: a submitter that skipped its wake-up because waking was set
// meanwhile relies on the holder (internal/model/park.pml, mutant asis-wake).
func (e *Engine) wake() { e.wakeFrom(-1) }

// wakeFrom is wake for Bits.Wake of global queue q, which has just been
// given work (or -1 for none): if q's channel declared WakesOutsideLock, the
// worker it wakes is handed a task ("Waking with a task"). The declaration
// is read only once a worker is to be woken, off the busy pool's path.
func (e *Engine) wakeFrom(q int) {
	for !e.Idle.Empty() || e.unborn() {
		if !e.waking.CompareAndSwap(false, true) {
			if e.wakeHands(q) && e.awake() < e.procs {
				e.rouseIdle(false, true) // a burst: each submit starts an idle worker, up to one per processor
			}
			return
		}
		if e.rouseIdle(true, e.wakeHands(q)) {
			return
		}
		e.waking.Store(false)
		if !e.hasWork() || e.live.Load() == 0 { // nothing to do, or the pool has finished: nothing may start
			return
		}
	}
}

// awake returns how many created workers are not idle on the stack (a
// hint: pushes and pops in progress skew it).
func (e *Engine) awake() int32 { return e.born.Load() - int32(e.Idle.Len()) }

// rouseIdle pops an idle worker, or creates one not created yet (idle in
// effect: workers.go), and wakes it with the waking token if token and a
// task if hand; it reports false if no worker was idle. Without the token
// it is the wake-up of a burst's submit that found the token held ("Waking
// with a task, in bursts"): if none is idle, every worker is awake and
// re-reads the summary before it parks.
func (e *Engine) rouseIdle(token, hand bool) bool {
	if i := e.Idle.Pop(); i >= 0 {
		e.wakeups.Add(1)
		e.worker(i).rouse(token, hand)
		return true
	}
	if e.bear(token, hand) {
		e.wakeups.Add(1)
		return true
	}
	return false
}

// hasWork reports whether some task waits for a worker: a queue's bit in the
// summary, or a task in a worker's run buffer (buffer.go). The sleep and
// wake-up protocol reads it wherever it would read the summary alone.
func (e *Engine) hasWork() bool {
	return e.Field.Summary() != 0 || e.buffered.Load() != 0
}

// wakeHands reports whether a wake-up for global queue q hands a task over:
// its channel declared Bits.WakesOutsideLock (none in a standalone engine).
func (e *Engine) wakeHands(q int) bool {
	return q >= 0 && q < len(e.queues) && e.queues[q].wakeHands
}

// wakeAny pops one idle worker, whoever it is, and wakes it; used by a parker
// that saw work after it registered. The wake-up carries the waking token
// when it is free, so that the woken worker passes a wake-up on if it finds
// work: wake-ups skipped while the token was held are not collapsed into one
// (park.pml, mutant asis-parkwake).
func (e *Engine) wakeAny() {
	token := e.waking.CompareAndSwap(false, true)
	if i := e.Idle.Pop(); i >= 0 {
		e.worker(i).rouse(token, false)
		return
	}
	if token {
		e.waking.Store(false)
		if e.hasWork() {
			e.wake()
		}
	}
}

// wakeAll wakes every parked worker; used by Close.
func (e *Engine) wakeAll() {
	for i := e.Idle.Pop(); i >= 0; i = e.Idle.Pop() {
		e.worker(i).rouse(false, false)
	}
}

// States of a worker on the idle stack (worker.idle). Whoever pushes it
// stores parked or orphaned just before the push; whoever pops it swaps in
// claimed and, from the state it took, sends a wake-up or starts a
// goroutine. The one other transition is a parked goroutine's own, parked
// to orphaned, when it gives up waiting (park): a compare-and-swap, so that
// it and a pop cannot both think they own the worker.
const (
	claimed  int32 = iota // not on the stack, or popped and being woken
	Parked                // on the stack, its goroutine waiting on wake
	Orphaned              // on the stack without a goroutine
)

// park blocks w's goroutine until it is woken and reports whether it was
// made the waking worker; or, after Config.IdleTimeout without a wake-up,
// leaves w idle without a goroutine and reports stay false: the goroutine
// must then end without touching w again.
func (w *Worker) park() (waking, stay bool) {
	w.goIdle(Parked)
	d := w.e.idleTimeout
	if d <= 0 {
		return <-w.wake, true
	}
	expired := rearm(&w.timer, d)
	for {
		select {
		case waking := <-w.wake:
			w.timer.Stop()
			return waking, true
		case <-expired:
			if w.Idle.CompareAndSwap(Parked, Orphaned) {
				return false, false
			}
			// Popped meanwhile: its wake-up is on the way, or a re-entering
			// task borrowed the worker and will push it back (yield.go).
			w.timer.Reset(d)
		}
	}
}

// rearm sets *t to fire once after d, creating it on first use, and returns
// its channel: a goroutine that waits idle again and again keeps one timer.
func rearm(t **time.Timer, d time.Duration) <-chan time.Time {
	if *t == nil {
		*t = time.NewTimer(d)
	} else {
		(*t).Reset(d)
	}
	return (*t).C
}

// goIdle pushes w on the idle stack, parked or orphaned, and wakes a worker
// if there is work after all (steps 1-3 of parking).
func (w *Worker) goIdle(state int32) {
	e := w.e
	w.running.Store(0) // not busy (timing.go)
	w.Idle.Store(state)
	e.Idle.Push(w.id)
	if e.hasWork() || (e.closing.Load() && e.inflight.Load() == 0) {
		e.wakeAny()
	}
}

// rouse wakes w, just popped off the idle stack by the caller, with the
// waking token or without, and with a task if hand (handOver): it sends the
// wake-up to w's parked goroutine or, if w has none, starts one.
func (w *Worker) rouse(token, hand bool) {
	if hand {
		w.handOver()
	}
	// Claimed only now, after the search: if w's parked goroutine timed out
	// meanwhile, its swap reads orphaned and w gets a new one (park.pml,
	// mutant m17).
	if w.Idle.Swap(claimed) == Orphaned {
		w.e.carry(w, token) // a spare carrier or a new goroutine (carriers.go)
		return
	}
	w.wake <- token
}

// handOver searches for a task on behalf of w, which the caller has just
// popped off the idle stack (or created) and owns until it wakes w, and
// leaves it in w.next for w to run first. Nothing is handed to a worker
// about to retire, nor once Close started. A task taken before Close
// started has started (the drop rule spares it): stopped is read again after
// the poll, and if it reads true, the task may have been queued when Close
// began, so it stays subject to the drop rule (close.pml, HANDDROP).
func (w *Worker) handOver() {
	e := w.e
	if int32(w.id) >= e.target.Load() || e.stopped.Load() {
		return
	}
	if rs := e.reshape; rs != nil {
		rs.handing.Add(1) // a search on w's behalf: a grace waits for it (reshape.go)
		defer rs.handing.Add(-1)
	}
	w.next, w.nextQ = w.find(-1, false) // one task: w's buffer is its own goroutine's to fill
	w.nextStarted = w.next != nil && !e.stopped.Load() && e.Chans[w.nextQ.ch].removal.Load() != removeDropping
	if c := cancellableOf(w.next); c != nil && w.nextStarted && c.ctx.Err() == nil {
		// Started, as far as its submitter can tell: its context's end no
		// longer cancels it (cancellable.Run runs what this claimed).
		c.claim(claimedStarted, true)
	}
}
