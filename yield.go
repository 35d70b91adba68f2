package smartpool

// # Yield: slot hand-off
//
// Go has no stackless coroutines, so a task that waits keeps its goroutine;
// what it gives back is its worker slot, the way the runtime hands a P on
// while a goroutine sits in a system call. A task always starts on a worker's
// goroutine, with that goroutine's taskContext. On its first Yield:
//
//  1. suspend: the goroutine detaches from the worker. A new goroutine (with
//     a new taskContext) carries on the worker's loop at once, so the pool
//     stays at full strength; the old goroutine keeps the task and its
//     context, which from now on is the task's own handle.
//  2. wait: the task runs wait() holding no slot.
//  3. re-enter: it pushes its context, as a *resumption, into the followup
//     channel of the channel it was last taken from, and blocks on grant.
//  4. resume: a worker that polls the resumption hands its slot over: it
//     sends itself on grant and blocks on release until the task yields again
//     (release: suspended, the worker carries on) or ends (release: the
//     outcome, which the worker counts in its own stats).
//
// A later Yield of the same task repeats steps 1-4, except that step 1 just
// releases the host worker. So at most Workers tasks run user code at any
// time (a task runs only on a worker goroutine or while a worker is blocked
// in resume for it), and tasks that never yield pay one store per task.
//
// Because the suspended state lives in the task's own goroutine and context,
// a wake-up cannot be lost or doubled: the task itself re-enters, once, when
// its wait returns.
//
// # Close accounting of yielded tasks
//
// e.inflight counts (a) tasks from complete-on-close channels from their
// first suspend until they end, and (b) any task between deciding to re-enter
// and finishing its push. (a) is counted before the slot is released, so no
// worker can see the task gone; (b) closes the race between a resumption push
// and a closing worker's last look. A worker reads inflight before it
// searches for work and exits only if the pool is closing, inflight read zero
// and the search found nothing; while inflight is non-zero a closing worker
// parks instead, and whoever takes inflight to zero during a close wakes all
// workers. A task of a dropping channel that re-enters after Close started is
// dropped: it is counted as dropped and its goroutine ends with
// runtime.Goexit, running the task's deferred calls; so is a resumption that
// Close removes from a dropping channel. Close does not wait for such tasks
// while they are suspended: their goroutines wait on their own events.

import (
	"context"
	"runtime"
)

// outcome is how a task's run ended, as reported to the worker hosting it.
type outcome int

const (
	suspended outcome = iota // yielded again: the host carries on
	ran
	panicked
	goexited
	dropped
)

// taskContext is the context a task receives and the handle of the goroutine
// that runs it. Fields are touched only by that goroutine, except where
// noted; grant and release carry the hand-offs between it and a host worker.
type taskContext struct {
	context.Context // the pool's base context
	e               *engine
	w               *worker   // worker whose slot this goroutine holds; nil while suspended
	cur             *queueRef // queue the current task was last taken from (written by a host before grant)
	handedOff       bool      // the current task gave its unit of the in-flight limit away (Handoff)
	skipped         bool      // the current task was cancelled while queued: not run, counted already (cancel.go)

	// Set when the goroutine detaches (the first Yield of its task).
	detached bool
	origin   int          // channel the task was submitted to: its stats and close policy
	counted  bool         // the origin completes on close: counted in e.inflight until the end
	dropped  bool         // re-entry refused after Close: the task ends by Goexit
	grant    chan *worker // capacity 1; a host worker, or nil if the resumption was dropped
	release  chan outcome // capacity 1; to the host: suspended again, or the final outcome
}

type taskKey struct{}

func newTaskContext(e *engine, w *worker) *taskContext {
	return &taskContext{Context: e.base, e: e, w: w}
}

// Value returns the task context itself for taskKey, so Yield finds it
// through any context derived from it.
func (c *taskContext) Value(key any) any {
	if key == (taskKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// taskOf returns the task context ctx is or derives from, or nil.
func taskOf(ctx context.Context) *taskContext {
	if ctx == nil {
		return nil
	}
	tc, _ := ctx.Value(taskKey{}).(*taskContext)
	return tc
}

// Yield runs wait without holding a worker: called from a pool task with its
// context (or one derived from it), it gives the task's worker back to the
// pool while wait runs, then re-enters the pool through the followup channel
// of the channel the task came from, and returns once a worker has picked the
// task up again. The pool keeps Workers workers busy meanwhile. Use it around
// anything that blocks: I/O, a lock, a timer, another task's result.
//
// Called with any other context, or from inside another Yield's wait, Yield
// just calls wait. Call it only from the task's own goroutine.
//
// If the pool's Close starts while the task waits and the task came from a
// channel that does not complete on close, the task is dropped when wait
// returns: Yield does not return, the task's deferred calls run (as with
// runtime.Goexit), and the pool counts it as dropped. Tasks of
// complete-on-close channels always resume, and Close waits for them.
func Yield(ctx context.Context, wait func()) {
	tc := taskOf(ctx)
	if tc == nil || tc.w == nil {
		wait()
		return
	}
	tc.suspend()
	wait()
	tc.reenter()
}

// suspend gives up the slot this goroutine holds. See "Yield: slot hand-off".
func (tc *taskContext) suspend() {
	e := tc.e
	if tc.detached {
		tc.w = nil
		tc.release <- suspended
		return
	}
	w := tc.w
	tc.detached = true
	tc.origin = tc.cur.ch
	tc.counted = e.chans[tc.origin].coc
	e.chans[tc.origin].suspended.Add(1)
	if tc.counted {
		e.inflight.Add(1) // before the slot is released: see "Close accounting"
	}
	tc.grant = make(chan *worker, 1)
	tc.release = make(chan outcome, 1)
	tc.w = nil
	e.endSegment(tc.cur.ch)         // the run segment ends here; the task no longer runs
	go w.loop(newTaskContext(e, w)) // the worker carries on; live is unchanged
}

// reenter queues the task in its followup channel and waits for a worker.
func (tc *taskContext) reenter() {
	e := tc.e
	e.inflight.Add(1) // resuming: see "Close accounting"
	var err error = ErrClosed
	if tc.counted || !e.stopped.Load() {
		err = e.chans[e.followup[tc.cur.ch]].c.Requeue((*resumption)(tc))
	}
	e.leaveInflight()
	if err == nil {
		tc.w = <-tc.grant
	}
	if tc.w == nil { // refused, or dropped from the queue by Close
		tc.dropped = true
		runtime.Goexit()
	}
}

// end records how the task ended, on its detached goroutine, and releases
// its host worker.
func (tc *taskContext) end(how outcome) {
	e := tc.e
	e.endTask(tc.origin)
	tc.releaseUnit()
	e.chans[tc.origin].suspended.Add(-1)
	if tc.counted {
		e.leaveInflight()
	}
	if how == dropped {
		e.chans[tc.origin].dropped.Add(1)
		return
	}
	tc.release <- how
}

// releaseUnit releases the current task's unit of the in-flight limit as it
// ends, unless it handed the unit on.
func (tc *taskContext) releaseUnit() {
	if !tc.handedOff && !tc.skipped {
		tc.e.unitDone()
	}
}

// suspended returns the number of yielded tasks Close waits for: those of
// complete-on-close channels not yet finished, plus any task re-entering at
// this instant.
func (e *engine) suspended() int { return int(max(e.inflight.Load(), 0)) }

// leaveInflight decrements e.inflight and, if that ends a close's wait for
// suspended tasks, wakes every worker so they can exit.
func (e *engine) leaveInflight() {
	if e.inflight.Add(-1) == 0 && e.closing.Load() {
		e.wakeAll()
	}
}

// resumption is a suspended task's entry in its followup channel.
type resumption taskContext

// Run hands the calling worker's slot to the suspended task. Workers call
// resume directly; Run exists so a resumption is a Task any channel can hold.
func (r *resumption) Run(ctx context.Context) {
	if tc := taskOf(ctx); tc != nil && tc.w != nil {
		tc.w.resume(r, tc.cur)
	}
}

// resume hands w's slot to the suspended task r and waits until it yields
// again or ends, counting its outcome.
func (w *worker) resume(r *resumption, q *queueRef) {
	tc := (*taskContext)(r)
	tc.cur = q
	tc.grant <- w
	how := <-tc.release
	w.e.endSegment(q.ch)
	switch how {
	case ran:
		inc(&w.stats[tc.origin].ran)
	case panicked:
		inc(&w.stats[tc.origin].panicked)
	case goexited:
		inc(&w.stats[tc.origin].goexited)
	}
}

// drop tells a suspended task that Close removed its resumption.
func (r *resumption) drop() { r.grant <- nil }
