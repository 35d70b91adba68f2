package engine

import (
	"math/bits"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/smartpool-go/smartpool/internal/gid"
	"github.com/smartpool-go/smartpool/scheduler"
	"github.com/smartpool-go/smartpool/task"
)

// # Worker loop
//
// Every worker runs the same loop: retire if SetWorkers lowered the count
// below this worker's number and Close has not started (workers.go); read
// the closing flag; find a task (read the availability summary, let the
// scheduler pick a level, poll the level's queues in rotation from this
// worker's own cursor); run it; or, when there is none, exit if the pool is
// closing and otherwise park (park.go).
//
// A worker that found nothing parks at once. It used to give the processor
// away and look once more first, to spare a wake-up when a submitter was
// about to push; with other goroutines in the process (an embedded
// JetStream server's) that look-again queued behind them and delayed both,
// and without it an urgent message started sooner while spawn-spam did not
// move (benchmarks/asynqcmp's doc).
//
// The closing flag is read before the search: Close marks every channel
// closed before it sets the flag, so a worker that saw the flag and then found
// the summary empty knows no task can arrive any more, and may exit.
//
// Ownership: a worker's fields are touched only by the goroutine carrying
// it, except wake (any waker sends), idle (park.go), stats (read by Stats
// and the close report) and, at start and after a runtime.Goexit, the
// goroutine that starts the loop; and while the worker is idle, by whoever
// popped it off the idle stack (or created it), until it wakes it: that
// goroutine searches on the worker's behalf (cursor, order, picker) and
// leaves the task in next (park.go, "Waking with a task"). Which goroutine
// carries a worker changes when a task yields or takes an idle worker
// (yield.go); the hand-over always goes through a channel or the idle
// stack, which orders it.

// Sharing the CPU: a worker that has run tasks back to back for shareEvery
// lets other goroutines of the program run (runtime.Gosched), as Go only
// preempts a busy goroutine after about 10 ms: with every worker busy, a
// submitter woken by a timer would otherwise wait that long for a P (and
// so would the network goroutines that bring a JetStream channel's urgent
// message in). The clock is read once per checkEvery tasks, to keep it off
// the per-task path of short tasks; once checkEvery tasks took shareEvery
// or more, after every task, so that tasks of milliseconds still share the
// processor every shareEvery and not every checkEvery tasks.
const (
	checkEvery = 16
	shareEvery = 100 * time.Microsecond
)

type Worker struct {
	e      *Engine
	id     int
	wake   chan bool    // capacity 1; true: you are the waking worker (park.go)
	Idle   atomic.Int32 // on the idle stack: parked or orphaned; else claimed (park.go)
	timer  *time.Timer  // a parked goroutine's idle timeout (park.go); touched by the goroutine carrying the worker
	picker scheduler.Picker
	cursor []int       // per level: local queue index to try first
	stay   int32       // takes from the buffer's queue left in this turn of its level (Config.Quantum); same owner
	long   bool        // the sharing clock found its tasks long (every == 1 in loop): the default quantum is 1; same owner
	stats  []taskStats // per channel; written only by the goroutine holding the slot
	order  task.Order  // key of the task last polled from an OrderedPoller (order.go); same owner
	// next is a task, polled from queue nextQ, handed to w by whoever woke
	// it (handOver, park.go) to run before it searches. Written by the waker
	// between its pop of w and the wake-up, which orders it before the
	// woken goroutine's read; that goroutine clears it.
	next        task.Task
	nextQ       *queueRef
	nextStarted bool        // next was polled before Close started: it has started
	active      atomic.Bool // a goroutine owns this worker's loop (workers.go)
	// running is 1 + the channel of the task the worker last started or
	// hosted, 0 once it parks (timing.go); runs counts tasks toward the next
	// timed one. Written by the goroutine carrying it (and running by
	// goIdle), read by Stats.
	running atomic.Int32
	runs    uint32
	gen     atomic.Uint64 // the reshaping grace generation at this worker's last turn (reshape.go); the carrier writes, removals read
	_       pad
	buf     runBuffer // tasks polled in a batch and not run yet (buffer.go)
	_       pad
}

// taskStats counts outcomes of one channel's tasks on one worker. Single
// writer: the goroutine carrying the worker stores Load()+1 (inc), a plain
// increment that readers may load at any time. chanInfo.inWait is the one
// taskStats with many writers; it is only ever added to.
type taskStats struct {
	ran, panicked, goexited atomic.Uint64
}

func inc(c *atomic.Uint64) { c.Store(c.Load() + 1) }

// loop runs the loop of worker tc.w on the calling goroutine; waking says
// whether it starts with the waking token (park.go). tc is the context its
// tasks receive. If a task yields, tc leaves with it (yield.go) and the worker
// goes on without this goroutine, which returns. A goroutine whose task took
// an idle worker when it re-entered, or was handed one (yield.go), carries
// on with that worker's loop once the task ends: so tc.w is read again on
// every turn. Whoever ends while carrying a worker counts as that worker's
// exit (tc.w != nil). It reports free when the goroutine is left without a
// worker, by a yielded task that ended or by handing the worker to a
// resumed task, and may wait as a spare carrier (carriers.go).
func (e *Engine) loop(tc *taskContext, waking bool) (free bool) {
	tc.owner.Store(gid.Current()) // tc is this goroutine's: see taskOf
	defer func() {
		tc.owner.Store(0)
		if tc.w != nil {
			tc.w.running.Store(0) // not busy (timing.go); before exit, which may build the report
			e.exit()
		}
	}()
	streak, lastYield := 0, time.Now()
	every, lastCheck := checkEvery, lastYield // tasks between clock reads, and the last read
	for {
		w := tc.w
		if e.reshape != nil {
			w.turn() // a reshaping pool's grace (reshape.go); others pay this branch
		}
		var t task.Task
		var q *queueRef
		handed, started := w.next != nil, false // a task handed over with the wake-up (park.go)
		surplus := false                        // SetWorkers lowered the count below this worker's number (workers.go)
		if handed {
			t, q, started = w.next, w.nextQ, w.nextStarted
			w.next, w.nextQ, w.nextStarted = nil, nil, false
		} else if int32(w.id) >= e.target.Load() && !e.stopped.Load() {
			// A surplus worker takes no new work: it runs what its buffer
			// holds (no other worker would, before it stole), then retires.
			if surplus = !w.buf.empty(); !surplus && w.retire(&waking) {
				return
			}
		}
		closing := e.closing.Load()
		suspended := closing && e.inflight.Load() != 0 // read before the search: see yield.go
		switch {
		case surplus:
			t, q = w.takeBuffered() // nil if thieves emptied it: the next turn retires
		case !handed:
			t, q = w.search()
		}
		if t == nil {
			wasWaking := waking
			if waking {
				waking = false
				e.waking.Store(false)
			}
			if closing && !suspended {
				if wasWaking && e.hasWork() {
					continue // a wake-up may have been skipped while we held the token
				}
				// Out of service for good, as reshape.pml's exit: a removal's
				// grace (settled) and Stats.Live no longer count w, while a
				// yielded task keeps the close from finishing.
				w.active.Store(false)
				return
			}
			var stay bool
			if waking, stay = w.park(); !stay {
				tc.w = nil // idle without this goroutine (park.go): its share of live stays with it
				return
			}
			continue
		}
		if e.reshape != nil {
			w.quiet() // the search is over (reshape.go, 5): a removal need not wait for t to end
		}
		if waking {
			waking = false
			e.waking.Store(false)
			if e.hasWork() {
				e.wake() // pass the wake-up on: there is more work
			}
		}
		if !started && (e.stopped.Load() && !e.Chans[q.ch].coc || e.Chans[q.ch].removal.Load() == removeDropping) {
			// Close (or a removal that drops, reshape.go) started after this
			// task was queued: a dropping channel's task that has not
			// started is dropped, even if it was polled before Close emptied
			// the channel.
			cause := DropOnClose
			if e.Chans[q.ch].removal.Load() == removeDropping {
				cause = DropRemoved
			}
			e.dropTasks(q.ch, []task.Task{t}, cause)
			e.endSegment(q.ch)
			e.endTask(q.ch)
			e.untrack(q.ch) // the take's count: a resumption is its origin's
			continue
		}
		if r, ok := t.(*resumption); ok {
			e.untrack(q.ch) // a resumption counts in its origin's held
			w.handTo(r, q)
			tc.w = nil // w and its share of live are the task's goroutine's now
			return true
		}
		if !w.Run(tc, t, q) {
			return true // the task yielded and took the worker's goroutine, and has ended (runtime.Goexit does not return here)
		}
		if streak++; streak%every == 0 {
			now := time.Now()
			// Long tasks (checkEvery of them took shareEvery or more):
			// read the clock after each, a cost lost in their length, so
			// that the processor is shared every shareEvery and not every
			// checkEvery tasks.
			if now.Sub(lastCheck) >= shareEvery/checkEvery*time.Duration(every) {
				every = 1 // tasks average shareEvery/checkEvery or more
			} else {
				every = checkEvery
			}
			tc.w.long = every == 1 // tc.w: a task that yielded may have left this goroutine with another worker than w
			lastCheck = now
			if now.Sub(lastYield) >= shareEvery {
				runtime.Gosched()
				lastYield = now
			}
		}
	}
}

// search returns the worker loop's next task and its queue, or nil when
// there is none. The worker's buffer is the front of the queue it came from
// (buffer.go): the worker chooses a level and a queue as if that queue's bit
// were set, and takes from the buffer when it chooses that queue; so a
// higher level's task, or another queue's turn in the level's rotation,
// comes first as it would without the buffer. With the buffer empty, the
// poll fills it where it can; and with nothing found, it steals.
func (w *Worker) search() (task.Task, *queueRef) {
	// A scheduler of the user's picks per task. The pool's choice, not the
	// worker's: a worker whose picker failed (schedguard.go) must neither
	// buffer tasks its siblings would never steal nor leave them spinning.
	batch := w.e.sched == nil
	bq := -1
	if n, q := w.buf.buffered(); n > 0 {
		bq = q
	}
	if t, q := w.find(bq, batch && bq < 0); t != nil || !batch {
		return t, q
	}
	return w.steal()
}

// find returns a task and its queue, or nil when the summary reads empty
// and the buffer holds nothing. bq is the global queue the worker's buffer
// holds tasks of, or -1; with batch, a poll fills the (empty) buffer where
// the queue polls in batches.
func (w *Worker) find(bq int, batch bool) (task.Task, *queueRef) {
	e := w.e
	for {
		avail := e.Field.Summary()
		if bq >= 0 {
			avail |= 1 << uint(e.queues[bq].level)
		}
		if avail == 0 {
			return nil, nil
		}
		l := w.pick(avail)
		if uint(l) >= 64 || avail&(1<<uint(l)) == 0 {
			l = bits.TrailingZeros64(avail)
		}
		t, q, tookBuffer := w.pollLevel(l, bq, batch)
		if t != nil {
			return t, q
		}
		if tookBuffer {
			bq = -1 // thieves emptied it
			continue
		}
		if e.Field.Tidy(l) { // the level looked busy but was not: drop a spurious summary bit
			e.wake() // a repair: while the summary read zero, a woken worker may have parked
		}
	}
}

// pollLevel polls level l's queues whose bits are set, in rotation from the
// worker's cursor, and returns the first task it gets; by a batch poll where
// it can if batch. The buffer's queue bq takes its turn in the rotation
// whatever its bit (tookBuffer: it was tried).
func (w *Worker) pollLevel(l, bq int, batch bool) (t task.Task, q *queueRef, tookBuffer bool) {
	e := w.e
	first, n := e.Field.LevelRange(l)
	bi := bq - first // the buffer's queue in the level, if in [0, n)
	from := w.cursor[l]
	for range n {
		i := e.Field.Next(l, from)
		if bi >= 0 && bi < n && (i < 0 || ahead(bi, from, n) <= ahead(i, from, n)) {
			t, q := w.takeBuffered()
			w.cursor[l] = bi + 1
			if w.cursor[l] == n {
				w.cursor[l] = 0
			}
			if w.stay > 0 {
				if w.stay--; w.stay > 0 && !w.buf.empty() && w.quantum() > 1 {
					w.cursor[l] = bi // Config.Quantum: the queue keeps its turn
				}
			}
			return t, q, true
		}
		if i < 0 {
			return nil, nil, false
		}
		from = i + 1
		if from == n {
			from = 0
		}
		q := &e.queues[first+i]
		c := &e.Chans[q.ch]
		rb := c.rate.Load() // a start rate's bucket (rate.go); nil: none
		if rb != nil && !e.token(q.ch, rb) {
			continue
		}
		capped := c.Capped
		if capped && !e.reserve(q.ch) {
			if rb != nil {
				e.refund(q.ch, rb)
			}
			continue
		}
		if c.tracked {
			c.held.Add(1) // before the poll: a removal never sees the task nowhere (reshape.go)
		}
		var t task.Task
		filled := batch && q.batch != nil && rb == nil // a rated channel is polled one task a token
		if filled {
			t = w.fill(first+i, q)
		} else {
			t = w.poll(q)
		}
		if t != nil {
			if rb != nil {
				if _, ok := t.(*resumption); ok {
					e.refund(q.ch, rb) // a re-entry is no new start
				}
			}
			w.cursor[l] = from
			if filled && !w.buf.empty() {
				if k := w.quantum(); k > 1 {
					w.stay = k - 1 // Config.Quantum: the queue keeps its turn for its buffered tasks
					w.cursor[l] = i
				}
			}
			return t, q, false
		}
		if c.tracked {
			c.held.Add(-1)
		}
		if capped {
			e.Release(q.ch)
		}
		if rb != nil {
			e.refund(q.ch, rb)
		}
	}
	return nil, nil, false
}

// ahead returns how far queue x comes after from in a rotation of n
// queues (both in [0, n)): a comparison, not the division of (x-from+n)%n,
// which cost a short task's worker about 16 ns.
func ahead(x, from, n int) int {
	if d := x - from; d >= 0 {
		return d
	}
	return x - from + n
}

// quantum is how many tasks in a row w takes from one queue of a level:
// Config.Quantum if set; by default MaxQuantum while w's tasks are short
// (the sharing clock reads it every checkEvery tasks: under
// shareEvery/checkEvery on average), and 1 once they are longer: staying
// adds about MaxQuantum short tasks (50 µs) at most to the other queues'
// wait, and nothing once tasks are long.
func (w *Worker) quantum() int32 {
	switch {
	case w.e.quantum > 0:
		return w.e.quantum
	case w.long:
		return 1
	}
	return MaxQuantum
}

// Run runs t and records its outcome. It reports whether this goroutine
// carries on with a worker's loop (tc.w's): not if the task yielded and then
// ended on a host worker, inside a wait, or dropped, nor if it called
// runtime.Goexit (a new goroutine then carries on the loop).
func (w *Worker) Run(tc *taskContext, t task.Task, q *queueRef) (ok bool) {
	tc.cur, tc.handedOff, tc.skipped, tc.Recovered, tc.Task = q, false, false, nil, t
	tc.charged = w.e.Chans[q.ch].accounted.Load() && w.e.charge(q.ch) // credit.go
	finished := false
	start := w.startRun(tc, q.ch)
	defer func() {
		var r any
		if !finished {
			r = recover() // nil without a panic in flight: Goexit
		}
		if tc.detached { // the task yielded: its outcome is its goroutine's to count
			tc.E.timing.endRun(q.ch, start)
			ok = tc.finish(finished, r)
			return
		}
		e := w.e
		e.timing.endRun(q.ch, start)
		tc.Task = nil // let the task go: this goroutine may park for long
		e.endSegment(q.ch)
		e.endTask(q.ch)
		tc.releaseUnit()
		var how task.Outcome // none for a task its submitter cancelled (skipped): reported then
		switch {
		case finished:
			switch {
			case tc.Recovered != nil: // its Future or Group took the panic; the handler hears of it too
				inc(&w.stats[q.ch].panicked)
				e.notePanic(t, tc.Recovered)
				tc.inCallback = true
				e.panicked(q.ch, tc.Recovered)
				tc.inCallback = false
				how = task.Panicked
			case !tc.skipped:
				inc(&w.stats[q.ch].ran)
				how = task.Ran
			}
			ok = true
		case r != nil:
			inc(&w.stats[q.ch].panicked)
			tc.inCallback = true
			pe := &task.PanicError{Value: r, Stack: debug.Stack()}
			e.notePanic(t, pe)
			e.panicked(q.ch, pe)
			tc.inCallback = false
			how, ok = task.Panicked, true
		default:
			inc(&w.stats[q.ch].goexited)
			how = task.Goexited
		}
		if e.Chans[q.ch].onEnd != nil {
			tc.inCallback = true
			e.ended(q.ch, t, how)
			tc.inCallback = false
		}
		e.untrack(q.ch) // last: a removal may report once no task is held
		if tc.gaveWorker {
			// A wait in a callback gave the worker to another goroutine
			// (leaveForCallback): this one leaves the loop.
			tc.gaveWorker = false
			e.exit()
			ok = false
			return
		}
		if !ok {
			// runtime.Goexit is unwinding the worker's goroutine: hand the
			// worker to a new one.
			tc.w = nil
			e.carry(w, false) // a spare or a fresh goroutine: this one still reads tc while it unwinds
		}
	}()
	t.Run(tc)
	finished = true
	return true
}

// MaxQuantum is the largest Config.Quantum: the most tasks a worker takes
// from a queue under one hold of its lock.
const MaxQuantum = batchMax
