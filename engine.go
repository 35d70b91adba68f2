package smartpool

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smartpool-go/smartpool/internal/avail"
	"github.com/smartpool-go/smartpool/internal/gid"
	"github.com/smartpool-go/smartpool/internal/idle"
	"github.com/smartpool-go/smartpool/scheduler"
)

// pad keeps hot atomics on cache lines of their own.
type pad [64]byte

// engine is the key-agnostic heart of a pool: bits, queues, workers, close
// state. Pool[K] and OwnedPool[K] wrap it with the user's key type.
type engine struct {
	field    *avail.Field
	queues   []queueRef   // by global queue number; read-only after New
	chans    []chanInfo   // by channel index; read-only after New except counters
	workers  workerTable  // by number, created on first need (workers.go)
	followup []int        // channel index -> followup channel index; read-only
	log      *slog.Logger // Config.Logger or slog.Default(); set by New before any worker starts
	idle     *idle.Stack
	procs    int32                       // runtime.GOMAXPROCS(0) at New: the bound of a burst's hand-overs (park.go)
	quantum  int32                       // Config.Quantum: tasks in a row from one queue of a level (worker.pollLevel); 0: by the tasks' length (worker.quantum)
	sched    scheduler.Scheduler         // makes the workers' pickers; nil for the default, highest first
	panicked func(ch int, p *PanicError) // the typed handler, wrapped

	_       pad
	waking  atomic.Bool   // a woken worker has not yet found work or parked (park.go)
	wakeups atomic.Uint64 // wake-ups sent to parked workers for new work (park.go)
	// buffered counts the workers' non-empty run buffers: one more by the
	// fill that makes a buffer non-empty, one less by the claim that empties
	// it (buffer.go). Work the summary does not show, so the sleep and
	// wake-up protocol reads it with the summary (hasWork).
	buffered atomic.Int32
	_        pad

	admit         admission // Config.Limit (admit.go)
	admitDeclared []bool    // per queue: its channel declared AdmitsOwnSubmits (credit.go); written during New only, then nil
	_             pad

	target atomic.Int32 // workers wanted: those numbered below it run (workers.go)
	born   atomic.Int32 // workers created: those numbered below it exist (workers.go)
	resize sync.Mutex   // serialises SetWorkers, and it with startClose's stop

	idleTimeout time.Duration // Config.IdleTimeout resolved; <= 0: parked goroutines stay (park.go)

	spares chan *taskContext // free goroutines waiting to carry a worker (carriers.go)

	inflight  atomic.Int64  // yielded tasks Close must wait for (yield.go)
	holds     atomic.Int64  // shares of live Bits.Hold took and Bits.Unhold has not given back (hold.go)
	stopped   atomic.Bool   // admission stopped: true from newEngine until start, and again from startClose on
	failed    atomic.Bool   // New failed after attaching channels: they may be attached again (Bits.Attached)
	closing   atomic.Bool   // set by startClose after every channel is closed
	started   chan struct{} // closed by start, or by a New that failed after Attach (admitWait waits for it)
	attacher  uintptr       // the goroutine running New (gid), whose Attach calls must not wait for start; written before Attach
	live      atomic.Int32  // running worker goroutines + 1 for the closer's drop phase
	closeOnce sync.Once     // guards startClose
	done      chan struct{} // closed when the close has finished; report set before
	report    any           // *Report[K]; written once before done is closed

	closer    atomic.Uintptr // the goroutine (gid) running startClose's drop phase, whose OnEnd calls must not wait for it; 0 outside it
	callbacks gidSet         // goroutines outside the pool running an OnEnd Close waits for (cancel.go)

	timers schedules // After, At, Every
	timing timing    // wait and run histograms (timing.go)
	stall  *watchdog // Config.StallAfter (stall.go); nil when off; set by New before start

	standalone bool // a channel's test harness, not a pool: never started (standalone.go)

	reshape *reshaper // Config.Spare: run-time channels (reshape.go); nil otherwise. Set by New, read-only

	base        context.Context // parent of every task context
	cancelTasks context.CancelFunc
	finish      func() // builds the report; run by whoever takes live to zero
}

// queueRef maps a global queue number to its channel.
type queueRef struct {
	c       Source
	local   int           // queue number inside the channel
	ch      int           // channel index
	ordered OrderedPoller // c, if it orders by a key a yielded task keeps (order.go)
	batch   BatchPoller   // c, if it polls in batches and has no cap (buffer.go)
	level   int           // the channel's level
	// wakeHands: c calls Bits.Wake only outside its locks, so the wake-up
	// may search for the woken worker (Bits.WakesOutsideLock). Written
	// during Attach, read-only once New returned.
	wakeHands bool
}

type chanInfo struct {
	c         Source
	user      Channel // c's Channel, for Len
	level     int
	first     int // global number of its queue 0
	queues    int
	coc       bool
	onEnd     func(Task, Outcome) // ChannelParams.OnEnd; read-only
	name      any                 // the channel's key, boxed once (New, AddChannel) for the errors of its Handles; read-only while attached
	dropped   atomic.Uint64
	cancelled atomic.Uint64 // WithContext tasks whose context ended while queued (cancel.go)
	suspended atomic.Int64  // its tasks detached by Yield and not yet ended (yield.go)
	accounted atomic.Bool   // the pool keeps the limit's units of its queued tasks itself (credit.go); set by New, atomic because a channel's own goroutines may admit while New runs
	credit    atomic.Int64  // when accounted: units that entered with its queued tasks, not yet taken back (credit.go)
	inWait    taskStats     // its tasks that panicked or called Goexit inside a Yield's wait, holding no worker; any goroutine adds
	inline    taskStats     // its tasks the channel ran on a submitting goroutine (Bits.RunHere); any goroutine adds

	capped     bool         // MaxRunning or MaxInFlight was set at New: running is kept (limit.go)
	holdsYield bool         // the cap is MaxInFlight: a yielded task keeps its slot
	maxRunning atomic.Int64 // the cap in force, when capped: 0 while paused (pause.go)
	running    atomic.Int64 // slots reserved, when capped

	// Reshaping (reshape.go), only in a pool with Config.Spare. tracked is
	// set by New for every slot of such a pool, read-only. held counts the
	// tasks taken from this channel and not yet ended (polls in progress,
	// buffered, running, yielded): a worker adds before it polls, whoever
	// ends the task subtracts after OnEnd. removal is the policy of a
	// removal in progress (removeDraining, removeDropping), 0 otherwise;
	// written by RemoveChannel, read by workers as they take a task.
	tracked bool
	held    atomic.Int64
	removal atomic.Int32

	pause chanPause // Pause and Resume, and the cap SetCap set (pause.go)
}

func newEngine(perLevel []int, workers int, sched scheduler.Scheduler) (*engine, error) {
	field, err := avail.New(perLevel)
	if err != nil {
		return nil, configErr(errTooManyQueues, "%v", err)
	}
	e := &engine{field: field, idle: new(idle.Stack), procs: int32(runtime.GOMAXPROCS(0)), spares: newSpares(workers), sched: sched, done: make(chan struct{}), started: make(chan struct{})}
	e.timers = schedules{e: e, active: map[*Timer]struct{}{}}
	e.base, e.cancelTasks = context.WithCancel(context.Background())
	e.target.Store(int32(workers))
	e.stopped.Store(true) // no channel admits a task before start (Bits.Closed)
	return e, nil
}

// start opens admission and launches the workers. Nothing before it starts a
// goroutine, so a failed New leaves none behind.
func (e *engine) start() {
	e.live.Store(1) // the closer's share
	e.stopped.Store(false)
	close(e.started)
	e.stall.start()
	e.startWorkers()
	if e.field.Summary() != 0 {
		// A channel's own goroutine queued tasks between Attach and now;
		// its wake-up found no worker to create (live was zero; park.pml
		// PRESTART, mutant 13).
		e.wake()
	}
}

// worker returns worker i, nil if it was not created yet.
func (e *engine) worker(i int) *worker { return e.workers.get(i) }

// exit is called by each worker goroutine as it ends, and once by the closer.
func (e *engine) exit() {
	if e.live.Add(-1) == 0 {
		e.stall.stop(e) // before the report, which counts its stalls
		e.finish()
		e.cancelTasks()
		close(e.done)
	}
}

// share takes a share of live for a new worker, or for a goroutine outside
// the pool whose work must end before the pool finishes (cancel.go); it
// reports false, taking nothing, once the pool finished (or before it
// started). The holder gives it back with exit.
func (e *engine) share() bool {
	for l := e.live.Load(); l > 0; l = e.live.Load() {
		if e.live.CompareAndSwap(l, l+1) {
			return true
		}
	}
	return false
}

// enterCallbacks enters the calling goroutine, which holds a share of live
// for an ending off the pool's goroutines, in callbacks while it may run
// channel ch's OnEnd, so that a Close called from that OnEnd returns
// ErrCloseFromTask instead of waiting for the share. It returns the id for
// leaveCallbacks, 0 if ch has no OnEnd.
func (e *engine) enterCallbacks(ch int) uintptr {
	if ch < 0 || e.chans[ch].onEnd == nil {
		return 0
	}
	id := gid.Current()
	e.callbacks.add(id)
	return id
}

// leaveCallbacks ends what enterCallbacks began.
func (e *engine) leaveCallbacks(id uintptr) {
	if id != 0 {
		e.callbacks.remove(id)
	}
}

// submit queues t in channel ch without waiting, ordered by o: refused
// once Close started, then a unit of the in-flight limit, then push (nil:
// the channel's Push).
func (e *engine) submit(ch int, t Task, o Order, push func(Task, Order) error) error {
	if e.stopped.Load() {
		return ErrClosed
	}
	if err := e.admitNow(1); err != nil {
		return err
	}
	e.credited(ch, 1)
	var err error
	if push == nil { // not a method value: that would allocate on the hot path
		err = e.chans[ch].c.Push(e.timing.stamp(ch, t), o)
	} else {
		err = push(e.timing.stamp(ch, t), o)
	}
	if err != nil {
		e.queuedUnitsDone(ch, 1)
	}
	return err
}

// # Endings off the pool's goroutines
//
// Close reports when live reaches zero (exit), so the rule is: every task
// ending produced off the pool's goroutines is covered by a share of live
// (or by e.inflight, which the last workers wait for), taken before the
// task leaves what Close can see (its queue, a worker) and given back after
// its OnEnd returned; and while the holder runs user code that may call
// Close (OnEnd, the task itself), its goroutine is known (a carrier, the
// closer, or in callbacks), so that Close returns ErrCloseFromTask instead
// of waiting for itself. The paths:
//
//   - Workers, and the goroutines carrying or borrowing them: the worker's
//     share. A submitter searching on an idle worker's behalf (handOver,
//     whose Poll may Discard a late task) holds that worker, and its share,
//     until it wakes it; Discard enters callbacks.
//   - Yielded tasks: e.inflight for complete-on-close channels (yield.go);
//     those of dropping channels are the one documented exception (Report:
//     counted as Yielded, dropped when their wait ends). Inline runs
//     (help.go, Bits.RunInTask) run on a task's goroutine, covered by its
//     worker, or inside a Yield's wait by inflight; a run inside the wait
//     of a dropping channel's task shares that exception.
//   - Cancellations off the pool (the AfterFunc, Handle.Cancel, the
//     submit): a share taken while the task is claimed as cancelling, and
//     callbacks around OnEnd (cancel.go).
//   - A removal's drops (RemoveChannel): a share taken under rs.mu as it
//     starts the removal, while admission is open, and callbacks around its
//     dropTasks (reshape.go).
//   - A channel's held tasks, a displaced task ended by Bits.Discard after
//     the unlock or one run on its submitter (Bits.RunHere): Bits.Hold's
//     share, taken under the channel's lock before the task leaves the
//     queue, in the hold where the submit saw Closed false, so before
//     Close's channel Close can take that lock (hold.go); Discard and
//     RunHere enter callbacks.
//   - Timers: a firing's endings are its channel's (Hold); Close waits for
//     the firings in progress before the closer gives its share back, but
//     not for the one it is called from (schedule.go).
//   - The closer's own drops: the closer's share (e.closer).
//
// startClose stops admission and starts the drain, once. See OwnedPool.Close.
func (e *engine) startClose() {
	e.closeOnce.Do(func() {
		e.closer.Store(gid.Current()) // its dropped tasks' OnEnd may call Close (owned_pool.go)
		defer e.closer.Store(0)
		e.timers.close()
		e.resize.Lock() // a SetWorkers in progress counts its workers in live first
		e.stopped.Store(true)
		e.resize.Unlock()
		e.resumeAll()       // a paused channel drains or drops as any other (pause.go)
		e.admit.broadcast() // submitters waiting for a unit get ErrClosed
		dropped := make([][]Task, len(e.chans))
		present := e.reshape.present(len(e.chans)) // AddChannel refuses from here on
		for i := range e.chans {
			if present[i] {
				if e.chans[i].tracked {
					// What Close(true) takes out is in neither the queue nor
					// held until dropTasks below: a removal waiting for both
					// must not detach meanwhile (reshape.go; reshape.pml,
					// mutant asis-closeheld).
					e.chans[i].held.Add(1)
				}
				dropped[i] = e.chans[i].c.Close(!e.chans[i].coc)
			}
		}
		e.closing.Store(true)
		e.wakeAll()
		if e.born.Load() == 0 && e.field.Summary() != 0 {
			// Tasks queued before admission stopped, and no worker yet: their
			// submitter's wake-up may come after this closer's share of live
			// is gone, too late to create one (workers.go; close.pml,
			// mutant asis-closebear). Worker 0, once created, never retires
			// (target >= 1), so it drains them.
			e.bear(false, false)
		}
		for i, ts := range dropped {
			e.dropTasks(i, ts)
			if present[i] && e.chans[i].tracked {
				e.chans[i].held.Add(-1)
			}
		}
		e.exit() // the closer's share of live
	})
}

// dropTasks reports tasks removed from channel ch by Close (see dropQueued).
func (e *engine) dropTasks(ch int, ts []Task) {
	for _, t := range ts {
		e.dropQueued(ch, t, DroppedOnClose)
	}
}

// dropQueued ends a queued task of channel ch that the pool will not run,
// whatever dropped it (Close, a channel through Bits.Discard): it releases
// the task's unit, counts it as dropped, resolves its Future or Group, and
// hands it to the channel's OnEnd with why, in that order, outside every
// pool lock, and reports true. Nothing is left to report (false) if its
// submitter cancelled it
// (counted already), or if it is a yielded task's resumption, whose
// goroutine is told instead and ends itself as dropped from its origin
// channel (taskContext.endDropped).
func (e *engine) dropQueued(ch int, t Task, why Outcome) bool {
	if r, ok := t.(*resumption); ok {
		r.drop()
		return false
	}
	t, ok := e.discard(ch, t)
	if !ok {
		return false
	}
	e.chans[ch].dropped.Add(1)
	if d, ok := t.(droppable); ok {
		d.dropped()
	}
	e.ended(ch, t, why)
	return true
}

// discard releases the unit of a queued task of channel ch the pool will
// not run and returns the task as the user submitted it, seen through
// WithContext's wrapper and any channel's (Unwrapper); false if its
// submitter cancelled it, which was reported already.
func (e *engine) discard(ch int, t Task) (Task, bool) {
	if c := cancellableOf(t); c != nil && !c.claim(claimedDropped, true) {
		if ch >= 0 && e.chans[ch].accounted.Load() {
			e.takeCredit(ch) // the cancellation released its unit; its credit leaves with it
		}
		return nil, false
	}
	e.queuedUnitsDone(ch, 1)
	return userTask(t), true
}

// cancellableOf returns WithContext's wrapper inside t, or nil.
func cancellableOf(t Task) *cancellable {
	for {
		switch tt := t.(type) {
		case *cancellable:
			return tt
		case Unwrapper:
			t = tt.Unwrap()
		default:
			return nil
		}
	}
}

// userTask returns t as the user submitted it, seen through WithContext's
// wrapper and any channel's (Unwrapper).
func userTask(t Task) Task {
	for {
		switch tt := t.(type) {
		case *cancellable:
			t = tt.Task
		case Unwrapper:
			t = tt.Unwrap()
		default:
			return t
		}
	}
}

// droppable is implemented by the library's own task types (futures,
// scopes) that must resolve when Close drops them.
type droppable interface{ dropped() }

// calledFromTask reports whether the pool cannot finish while the calling
// goroutine waits: it runs a task of this pool, or one of the callbacks the
// pool waits for (OnEnd, a panic handler, a scheduler's Pick: on a worker
// between two tasks, or a cancelled task's OnEnd: see callbacks), or ctx is
// (or derives from) a task's context, which from any goroutine would hang
// as surely.
func (e *engine) calledFromTask(ctx context.Context) bool {
	if tc := taskValue(ctx); tc != nil && tc.e == e {
		return true
	}
	id := gid.Current()
	if tc := carrierOf(id); tc != nil && tc.e == e {
		return true
	}
	return e.callbacks.has(id)
}
