package engine

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/smartpool-go/smartpool/task"
)

// # Yield: slot hand-off
//
// Go has no stackless coroutines, so a task that waits keeps its goroutine;
// what it gives back is its worker slot, the way the runtime hands a P on
// while a goroutine sits in a system call. A worker is a slot; a goroutine
// carries one worker at a time, with its own taskContext. A task always
// starts on the goroutine carrying a worker. On its first Yield:
//
//  1. suspend: the goroutine detaches from the worker (carryOn). Another
//     goroutine (a spare carrier, or a new one with a new taskContext:
//     carriers.go) carries on the worker's loop at once, so the pool stays
//     at full strength; or, if no work is eligible,
//     the worker goes idle without a goroutine (an orphan: whoever wakes it
//     starts one, park.go). The old goroutine keeps the task and its
//     context, which from now on is the task's own handle.
//  2. wait: the task runs wait() holding no slot.
//  3. re-enter: if no work is eligible anywhere and a worker is idle, the
//     task takes that worker (takeIdle) and runs on at once, as if a worker
//     had taken it from its followup channel; else it pushes its context, as
//     a *resumption, into that channel and blocks on grant.
//  4. resume: a worker that polls the resumption hands itself over for
//     good (worker.handTo): it sends itself on grant, with its share of
//     live, and its goroutine leaves the loop to wait as a spare
//     (carriers.go). The task's goroutine now carries the worker, as if it
//     had adopted an orphan in step 3: one goroutine switch per re-entry,
//     where a host that waited for the task to give the worker back took
//     two. (A resumption run as a Task, by resumption.Run, still has a
//     host: it sends itself on grant and blocks on release until the task
//     yields again (release: suspended, the host carries on) or ends
//     (release: the outcome). release is unbuffered: the task goes on only
//     once this host has its outcome, so a later host of the same context
//     can never receive it instead.)
//
// A later Yield of the same task repeats steps 1-4, except that step 1
// releases a host if there is one. A task that carries its worker counts
// its outcome in that worker's stats itself when it ends.
// If the worker was an orphan, or handed to it, the task's goroutine goes on
// with its loop (engine.loop), so the goroutine that woke from the wait does
// the next task too, and no goroutine switches hands on the way; if the
// worker's goroutine was parked, the task only borrowed it, and gives it back
// to the idle stack when it yields or ends (park.go, Orphans). So at most
// Workers tasks run user code at any time (a task runs only while its
// goroutine carries a worker or a host is blocked in resume for it), and
// tasks that never yield pay one store per task.
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
// workers. A task that takes an idle worker in step 3 needs no count (b): it
// holds that worker from the pop on, so no worker is missing from the close,
// and it carries the worker through the close protocol like any other. (It
// takes one only before Close started, so a task of a dropping channel that
// does so had re-entered before the drop.) A task of a dropping channel that
// re-enters after Close started is dropped: it is counted as dropped, its unit
// released and the task handed to its origin channel's OnEnd
// (taskContext.endDropped), and then its goroutine ends with runtime.Goexit,
// running the task's deferred calls, which so see it ended; so is a
// resumption that Close removes from a dropping channel. Close does not
// wait for such tasks while they are suspended: their goroutines wait on
// their own events. A task that ends counts its outcome, when no worker will,
// before it leaves inflight (taskContext.end), so Close's report has it.

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
	E               *Engine

	// owner is the goroutine that carries this context (gid.Current): set
	// when it starts the worker loop, zero once it has left it. Any
	// goroutine may load it; only through taskOf, which compares it with
	// the caller, does a goroutine reach the fields below.
	owner atomic.Uintptr

	w         *Worker          // worker whose slot this goroutine holds; nil while suspended
	cur       *queueRef        // queue the current task was last taken from (written by a host before grant)
	handedOff bool             // the current task gave its unit of the in-flight limit away (Handoff)
	skipped   bool             // the current task was cancelled while queued: not run, counted already (cancel.go)
	Recovered *task.PanicError // the current task's panic, which its Future or Group recovered (recoveredPanic): counted as panicked and sent to the handler too
	Task      task.Task        // the current task as polled, for OnEnd if it is dropped after a Yield (written by worker.run)
	charged   bool             // the current task came without a unit of the limit and was charged one (credit.go)
	inline    []int            // channels of the tasks this goroutine runs inline for its task, innermost last (help.go): RemoveChannel refuses to wait for them
	// A callback worker.run makes after a task (OnEnd, the panic handler)
	// may wait: see "Waiting in a callback".
	inCallback bool // the goroutine runs such a callback (holding w unless gaveWorker)
	gaveWorker bool // a wait in it gave w to another goroutine; this one holds a share of live until the callback returns

	// Set when the goroutine detaches (the first Yield of its task).
	detached  bool
	origin    int          // channel the task was submitted to: its stats and close policy
	order     task.Order   // the key the task was first ordered by, kept across re-entries (order.go)
	counted   bool         // the origin completes on close: counted in e.inflight until the end
	Dropped   bool         // re-entry refused after Close: the task ends by Goexit
	dropCause DropCause    // why, when its resumption was dropped from a queue (resumption.drop); DropOnClose otherwise
	hosted    bool         // w is a host worker's, waiting on release (written by the host before grant)
	borrowed  bool         // w was taken idle with its goroutine parked: give it back (takeIdle)
	grant     chan *Worker // capacity 1; a host worker, or nil if the resumption was dropped; or a spare's new worker (carriers.go)
	release   chan outcome // unbuffered, so a host has its outcome before the goroutine goes on: to the host, suspended again or the final outcome

	runStart    int64 // clock reading at the current task's start, 0 if not timed (timing.go)
	reenteredAt int64 // clock reading at the last re-entry, 0 if not timed (timing.go)

	// A free goroutine waiting as a spare carrier (carriers.go).
	spare  atomic.Int32 // spareOff, spareWaiting, spareHired, spareGone: swapped by the spare and one hirer
	waking bool         // the waking token came with the hire (written by the hirer before grant)
	timer  *time.Timer  // the spare's idle timeout; the goroutine's own

	obs *observed // the innermost observed task this goroutine runs, nil if none (observe.go)
}

type TaskKey struct{}

func newTaskContext(e *Engine, w *Worker) *taskContext {
	return &taskContext{Context: e.Base, E: e, w: w}
}

// Value returns the task context itself for taskKey, so Yield finds it
// through any context derived from it.
func (c *taskContext) Value(key any) any {
	if key == (TaskKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// handOffChannels makes tc's grant and release channels on first need; a
// goroutine keeps them across the tasks it carries.
func (tc *taskContext) handOffChannels() {
	if tc.grant == nil {
		tc.grant = make(chan *Worker, 1)
		tc.release = make(chan outcome) // unbuffered: see "Spare carriers" (carriers.go)
	}
}

// suspend gives up the slot this goroutine holds. See "Yield: slot hand-off".
func (tc *taskContext) suspend() {
	e, w := tc.E, tc.w
	if !tc.detached {
		tc.detached = true
		tc.origin = tc.cur.ch
		tc.order = task.Order{}
		if tc.cur.ordered != nil {
			tc.order = w.order // the task was the last this worker polled (order.go)
		}
		tc.counted = e.Chans[tc.origin].coc
		e.Chans[tc.origin].suspended.Add(1)
		if tc.counted {
			e.inflight.Add(1) // before the slot is released: see "Close accounting"
		}
		tc.handOffChannels()
	}
	tc.w = nil
	e.endSegment(tc.cur.ch) // the run segment ends here; the task no longer runs
	switch {
	case tc.hosted:
		tc.hosted = false
		tc.release <- suspended
	case tc.borrowed:
		tc.borrowed = false
		w.goIdle(Parked) // back to its parked goroutine
	default:
		w.carryOn()
	}
}

// carryOn lets w go on without the goroutine that carried it, whose task
// yielded: a new goroutine carries on w's loop, or, if there is no work to
// look for, w goes idle without one (a later wake-up starts one). Its share
// of live moves with it either way.
func (w *Worker) carryOn() {
	e := w.e
	if !e.hasWork() && int32(w.id) < e.target.Load() { // hasWork counts w's own buffer too
		w.goIdle(Orphaned)
		return
	}
	e.carry(w, false)
}

// reenter takes an idle worker if no other work waits, or else queues the
// task in its followup channel and waits for a worker.
func (tc *taskContext) reenter() {
	e := tc.E
	if tc.takeIdle() {
		return
	}
	e.inflight.Add(1) // resuming: see "Close accounting"
	tc.markReentry()
	var err error = task.ErrClosed
	follow := e.followup[tc.cur.ch]
	if tc.counted || !e.stopped.Load() {
		err = e.Chans[follow].c.Requeue((*resumption)(tc))
	}
	if err != nil && e.Chans[follow].removal.Load() == removeDropping {
		tc.dropCause = DropRemoved // refused by a followup a removal emptied
	}
	e.leaveInflight()
	if err == nil {
		tc.w = <-tc.grant
	}
	if tc.w == nil { // refused, or dropped from the queue by Close
		tc.Dropped = true
		tc.endDropped()
		runtime.Goexit()
	}
}

// endDropped ends a yielded task that may not re-enter because its channel
// dropped it at Close, before runtime.Goexit runs its deferred calls: so
// that whatever observes the task's end (its defers, a Future, a WaitGroup)
// sees it counted in Stats as dropped and no longer yielded. It counts the
// task in its origin channel, releases its unit and hands it to the
// origin's OnEnd (ChannelParams.OnEnd, DroppedOnClose); its Future or
// Group resolves in the task's own deferred call. end then has nothing left
// to do but let the goroutine go.
func (tc *taskContext) endDropped() {
	e, c := tc.E, &tc.E.Chans[tc.origin]
	e.endTask(tc.origin)
	tc.releaseUnit()
	c.dropped[tc.dropCause].Add(1)
	c.suspended.Add(-1)
	e.ended(tc.origin, tc.Task, task.DroppedOnClose)
	tc.Task = nil
	e.untrack(tc.origin)
	if tc.counted {
		e.leaveInflight() // last: Close may report once inflight reaches zero
	}
}

// takeIdle gives the re-entering task an idle worker's slot when no work is
// eligible anywhere: a worker woken for its resumption would poll it next
// anyway, and this way no goroutine switches hands. The task then runs on
// its own goroutine as if taken from its followup channel. An orphan worker
// it adopts: the goroutine carries the worker on when the task ends
// (engine.loop), and the worker's share of live moves to it. A worker whose
// goroutine is parked it borrows: the goroutine stays parked, and the task
// gives the worker back when it yields or ends (park.go, Orphans). A worker
// at or above the target is woken to retire instead.
func (tc *taskContext) takeIdle() bool {
	e := tc.E
	if e.stopped.Load() || e.hasWork() || e.Idle.Empty() {
		return false
	}
	ch := e.followup[tc.cur.ch]
	c := &e.Chans[ch]
	if c.removal.Load() == removeDropping {
		return false // re-enter through the channel, which refuses: dropped (reshape.go)
	}
	if c.Capped && !e.reserve(ch) || !c.Capped && e.paused(ch) { // a paused channel: queue (pause.go)
		return false
	}
	i := e.Idle.Pop()
	if i < 0 || int32(i) >= e.target.Load() {
		if i >= 0 {
			e.worker(i).rouse(false, false)
		}
		if c.Capped {
			e.Release(ch)
		}
		return false
	}
	w := e.worker(i)
	tc.borrowed = w.Idle.Swap(claimed) != Orphaned
	tc.w, tc.cur = w, &e.queues[c.first]
	return true
}

// finish ends the run of a task that yielded, on its own goroutine, from
// the deferred call of worker.run: finished says it returned, r is what it
// panicked with. It reports whether the goroutine carries on with a worker's
// loop (see engine.loop).
func (tc *taskContext) finish(finished bool, r any) (carry bool) {
	how := ran
	switch {
	case finished && tc.Recovered != nil: // its Future or Group took the panic
		how = panicked
		tc.E.notePanic(tc.Task, tc.Recovered)
		tc.E.panicked(tc.origin, tc.Recovered)
	case finished:
	case tc.Dropped: // ended already (endDropped); a panic in its deferred calls is still reported
		how = dropped
		if r != nil {
			tc.E.panicked(tc.origin, &task.PanicError{Value: r, Stack: debug.Stack()})
		}
	case r != nil:
		how = panicked
		pe := &task.PanicError{Value: r, Stack: debug.Stack()}
		tc.E.notePanic(tc.Task, pe)
		tc.E.panicked(tc.origin, pe)
	default:
		how = goexited
	}
	return tc.end(how)
}

// end records how the task ended and releases its worker: to the host
// worker waiting for it, or, if the task took its worker itself, by counting
// the outcome and then giving a borrowed worker back, or carrying on with an
// adopted worker's loop (or handing it to a new goroutine, if runtime.Goexit
// is unwinding this one). A task that ended inside a wait holds no worker.
func (tc *taskContext) end(how outcome) (carry bool) {
	if how == dropped {
		return false // counted and released by endDropped, before the defers ran
	}
	e, c, w := tc.E, &tc.E.Chans[tc.origin], tc.w
	e.endTask(tc.origin)
	tc.releaseUnit()
	// An outcome no worker will count is counted before the task leaves
	// inflight: once inflight reaches zero, Close may finish and report.
	switch {
	case w == nil && how == panicked:
		c.inWait.panicked.Add(1)
	case w == nil && how == goexited:
		c.inWait.goexited.Add(1)
	}
	c.suspended.Add(-1)
	if w != nil {
		// This goroutine carries w until it lets it go below (a host waits
		// in resume for release), so it counts in w's stats itself.
		w.count(tc.origin, how)
	}
	e.ended(tc.origin, tc.Task, how.public())
	e.untrack(tc.origin)
	if tc.counted {
		e.leaveInflight()
	}
	if w == nil { // ended inside a wait: no worker to release
		return false
	}
	e.endSegment(tc.cur.ch)
	if tc.hosted {
		tc.hosted, tc.w = false, nil
		tc.release <- how
		return false
	}
	switch {
	case tc.borrowed:
		tc.borrowed, tc.w = false, nil
		w.goIdle(Parked)
		return false
	case how == goexited:
		tc.w = nil
		e.carry(w, false) // a spare or a new goroutine: this one is unwinding
		return false
	}
	tc.detached, tc.counted, tc.Dropped, tc.Task = false, false, false, nil
	return true
}

// releaseUnit releases the current task's unit of the in-flight limit as it
// ends, unless it handed the unit on.
func (tc *taskContext) releaseUnit() {
	if !tc.handedOff && (!tc.skipped || tc.charged) {
		tc.E.unitDone()
	}
}

// suspended returns the number of yielded tasks Close waits for: those of
// complete-on-close channels not yet finished, plus any task re-entering at
// this instant.
func (e *Engine) suspended() int { return int(max(e.inflight.Load(), 0)) }

// leaveInflight decrements e.inflight and, if that ends a close's wait for
// suspended tasks, wakes every worker so they can exit.
func (e *Engine) leaveInflight() {
	if e.inflight.Add(-1) == 0 && e.closing.Load() {
		e.wakeAll()
	}
}

// resumption is a suspended task's entry in its followup channel.
type resumption taskContext

// Run hands the calling worker's slot to the suspended task. Workers call
// resume directly; Run exists so a resumption is a Task any channel can hold.
func (r *resumption) Run(ctx context.Context) {
	if tc := TaskOf(ctx); tc != nil && tc.w != nil {
		tc.w.resume(r, tc.cur)
	}
}

// handTo hands w, which the calling goroutine carries, to the suspended
// task r for good, as takeIdle hands it an orphan: the task's goroutine
// carries w on when the task yields again or ends, and the caller, left
// without a worker, waits as a spare (step 4 of "Yield: slot hand-off").
// So a resumed task costs one goroutine switch, not two. The share of live
// moves with w.
func (w *Worker) handTo(r *resumption, q *queueRef) {
	tc := (*taskContext)(r)
	tc.endReentry(q.ch)
	tc.cur = q
	w.running.Store(int32(q.ch) + 1)
	tc.grant <- w
}

// resume hands w's slot to the suspended task r and waits until it yields
// again or ends (a resumption run as a Task, by Run). The task ends its run
// segments and counts its outcome itself.
func (w *Worker) resume(r *resumption, q *queueRef) {
	tc := (*taskContext)(r)
	tc.endReentry(q.ch)
	tc.cur, tc.hosted = q, true
	w.running.Store(int32(q.ch) + 1)
	tc.grant <- w
	<-tc.release // suspended again, or ended: counted by the task (end)
}

// count records how a yielded task of channel origin ended, in the stats of
// the worker it ended on.
func (w *Worker) count(origin int, how outcome) {
	switch how {
	case ran:
		inc(&w.stats[origin].ran)
	case panicked:
		inc(&w.stats[origin].panicked)
	case goexited:
		inc(&w.stats[origin].goexited)
	}
}

// public is how's Outcome; suspended and dropped have none (a dropped
// task's end is reported by endDropped).
func (how outcome) public() task.Outcome {
	switch how {
	case ran:
		return task.Ran
	case panicked:
		return task.Panicked
	case goexited:
		return task.Goexited
	}
	return 0
}

// drop tells a suspended task that Close removed its resumption.
func (r *resumption) drop(cause DropCause) {
	r.dropCause = cause // before the send, which the task receives
	r.grant <- nil
}

// YieldFor is Yield with a wait: the task of ctx, or of the calling
// goroutine, gives its worker up while wait runs.
func YieldFor(ctx context.Context, wait func()) {
	tc := TaskOf(ctx)
	if tc == nil || tc.w == nil {
		if cb := callbackOf(); cb != nil && cb.w != nil {
			cb.leaveForCallback()
		}
		wait()
		return
	}
	if o := tc.obs; o != nil {
		o.obs.Yield() // observe.go
	}
	tc.suspend()
	wait()
	tc.reenter()
	if o := tc.obs; o != nil {
		o.obs.Resume()
	}
}

// Handoff is Pool.HandoffTask for channel ch, from task tc of this pool:
// t continues tc's chain, taking over its unit of the in-flight limit.
func (e *Engine) Handoff(tc *taskContext, ch int, t task.Task, opts []Option) error {
	so, err := Gather(task.Order{}, opts)
	if err == nil && so.Ctx != nil {
		err = &OptionError{What: "WithContext in Handoff: a continuation holds its chain's unit, not a context"}
	}
	if err != nil {
		return WithChannel(e.Chans[ch].name, err)
	}
	transfer := e.admit.on && !tc.handedOff
	if !transfer {
		if err := e.admitNow(1); err != nil {
			return err
		}
	}
	var hc *cancellable // WithHandle's wrapper: what Handle.Cancel claims
	var indexed reorderer
	var ob *observed
	if e.observer != nil {
		t, ob = e.observe(context.Background(), ch, t) // observe.go
	}
	if so.Handle != nil {
		hc = newCancellable(context.Background(), e, ch, t, false)
		t = hc
		indexed, _ = e.Chans[ch].c.(reorderer)
	}
	c := e.Chans[ch].c
	e.credited(ch, 1)
	if indexed != nil {
		err = indexed.PushIndexed(t, so.Order)
	} else {
		err = c.Push(t, so.Order)
	}
	if errors.Is(err, task.ErrClosed) && tc.w != nil {
		// Draining: the work goes on, like a yielded task's re-entry. The
		// calling task holds a worker, which looks for work again when the
		// task ends, so t cannot be stranded by workers exiting. Requeue
		// indexes nothing: the handle cannot move t.
		indexed = nil
		err = c.Requeue(t)
	}
	if hc != nil {
		if err != nil {
			hc.refused()
		} else {
			*so.Handle = Handle{c: hc, queued: t, src: indexed, channel: e.Chans[ch].name}
			hc.pushed()
		}
	}
	switch {
	case err != nil && !transfer:
		e.queuedUnitsDone(ch, 1)
	case err != nil:
		// An accounted channel's task that came without a unit may have
		// taken t's credit, and with it the caller's unit.
		tc.handedOff = e.Chans[ch].accounted.Load() && !e.takeCredit(ch)
	case transfer:
		tc.handedOff = true
	}
	if err == nil {
		return nil
	}
	ob.refused(err)
	return WithChannel(e.Chans[ch].name, err) // a key the channel's option error lacks
}
