package engine

import (
	"context"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smartpool-go/smartpool/internal/avail"
	"github.com/smartpool-go/smartpool/internal/gid"
	"github.com/smartpool-go/smartpool/internal/idle"
	"github.com/smartpool-go/smartpool/scheduler"
	"github.com/smartpool-go/smartpool/task"
)

// pad keeps hot atomics on cache lines of their own.
type pad [64]byte

// Engine is the key-agnostic heart of a pool: bits, queues, workers, close
// state. Pool[K] and OwnedPool[K] wrap it with the user's key type.
type Engine struct {
	Field    *avail.Field
	queues   []queueRef   // by global queue number; read-only after New
	Chans    []chanInfo   // by channel index; read-only after New except counters
	workers  workerTable  // by number, created on first need (workers.go)
	followup []int        // channel index -> followup channel index; read-only
	log      *slog.Logger // Config.Logger or slog.Default(); set by New before any worker starts
	Idle     *idle.Stack
	procs    int32                            // runtime.GOMAXPROCS(0) at New: the bound of a burst's hand-overs (park.go)
	quantum  int32                            // Config.Quantum: tasks in a row from one queue of a level (worker.pollLevel); 0: by the tasks' length (worker.quantum)
	sched    scheduler.Scheduler              // makes the workers' pickers; nil for the default, highest first
	panicked func(ch int, p *task.PanicError) // the typed handler, wrapped

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
	done      chan struct{} // closed when the close has finished, after finish ran

	closer    atomic.Uintptr   // the goroutine (gid) running startClose's drop phase, whose OnEnd calls must not wait for it; 0 outside it
	callbacks gidSet           // goroutines outside the pool running an OnEnd Close waits for (cancel.go)
	unread    unreadBook       // errors no Wait has read yet (unread.go)
	keyOf     func(ch int) any // the user's key of channel ch, for log lines; set by Start, read-only

	Timers schedules // After, At, Every
	timing timing    // wait and run histograms (timing.go)
	stall  *watchdog // Config.StallAfter (stall.go); nil when off; set by New before start

	rates *rateTimer // the rated channels' one timer (rate.go); set by Build, nil in a standalone engine

	standalone bool // a channel's test harness, not a pool: never started (standalone.go)

	observer func(ctx context.Context, ch int) Observer // Config.Observe (observe.go); nil without. Set by Build, read-only

	reshape *reshaper // Config.Spare: run-time channels (reshape.go); nil otherwise. Set by New, read-only

	Base        context.Context // parent of every task context
	cancelTasks context.CancelFunc
	finish      func() // the root builds its report and logs the close; run by whoever takes live to zero, before done is closed
}

// queue is how the engine reaches a channel: the channel author's Source
// less Attach, which the root calls. Every Source is a queue, so a poll or a
// push costs one dynamic call, as through the Source itself. The optional
// pollers below are the Source's too, asked for by type assertion.
type queue interface {
	Queues() int
	Push(t task.Task, o task.Order) error
	Requeue(t task.Task) error
	Poll(queue int) task.Task
	Close(drop bool) []task.Task
}

// batchPoller is a channel that polls in batches (buffer.go).
type batchPoller interface {
	PollBatch(queue int, ts []task.Task, keys []task.Order, share int) int
}

// orderedPoller is a channel whose tasks keep their key when they yield
// (order.go).
type orderedPoller interface {
	PollOrder(queue int) (task.Task, task.Order)
}

// reorderer is a channel that moves a queued task to a new key (Handle).
type reorderer interface {
	PushIndexed(t task.Task, o task.Order) error
	Reorder(t task.Task, o task.Order) error
}

// lener counts a channel's queued tasks: its user-facing Len.
type lener interface{ Len() int }

// queueRef maps a global queue number to its channel.
type queueRef struct {
	c       queue
	local   int           // queue number inside the channel
	ch      int           // channel index
	ordered orderedPoller // c, if it orders by a key a yielded task keeps (order.go)
	batch   batchPoller   // c, if it polls in batches and has no cap (buffer.go)
	level   int           // the channel's level
	// wakeHands: c calls Bits.Wake only outside its locks, so the wake-up
	// may search for the woken worker (Bits.WakesOutsideLock). Written
	// during Attach, read-only once New returned.
	wakeHands bool
}

type chanInfo struct {
	c         queue
	user      lener // c's Channel, for Len
	level     int
	first     int // global number of its queue 0
	queues    int
	coc       bool
	onEnd     func(task.Task, task.Outcome) // ChannelParams.OnEnd; read-only
	name      any                           // the channel's key, boxed once (New, AddChannel) for the errors of its Handles; read-only while attached
	dropped   [NumDropCauses]atomic.Uint64  // by cause (DropCause)
	cancelled atomic.Uint64                 // WithContext tasks whose context ended while queued (cancel.go)
	suspended atomic.Int64                  // its tasks detached by Yield and not yet ended (yield.go)
	accounted atomic.Bool                   // the pool keeps the limit's units of its queued tasks itself (credit.go); set by New, atomic because a channel's own goroutines may admit while New runs
	credit    atomic.Int64                  // when accounted: units that entered with its queued tasks, not yet taken back (credit.go)
	inWait    taskStats                     // its tasks that panicked or called Goexit inside a Yield's wait, holding no worker; any goroutine adds
	inline    taskStats                     // its tasks the channel ran on a submitting goroutine (Bits.RunHere); any goroutine adds

	Capped     bool         // MaxRunning or MaxInFlight was set at New: running is kept (limit.go)
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

	// Start rate (rate.go): the token bucket, nil without a rate (stored
	// under pause.mu, loaded by the workers' search); when the rate timer
	// must unblock the channel (ns since the epoch, 0: not armed; lowered
	// by blockers, cleared by the firing); takes refused.
	rate      atomic.Pointer[bucket]
	due       atomic.Int64
	throttled atomic.Uint64
}

func newEngine(perLevel []int, workers int, sched scheduler.Scheduler) (*Engine, error) {
	field, err := avail.New(perLevel)
	if err != nil {
		return nil, ConfigErr(ErrTooManyQueues, "%v", err)
	}
	e := &Engine{Field: field, Idle: new(idle.Stack), procs: int32(runtime.GOMAXPROCS(0)), spares: newSpares(workers), sched: sched, done: make(chan struct{}), started: make(chan struct{})}
	e.Timers = schedules{e: e, active: map[*Timer]struct{}{}}
	e.Base, e.cancelTasks = context.WithCancel(context.Background())
	e.target.Store(int32(workers))
	e.stopped.Store(true) // no channel admits a task before start (Bits.Closed)
	return e, nil
}

// ChanSpec is one channel of a pool to build, as New validated it.
type ChanSpec struct {
	Src         queue
	User        lener // src's Channel, for Len
	Level       int
	First       int // global number of its queue 0
	Name        any // its key, boxed once, for errors
	Coc         bool
	OnEnd       func(task.Task, task.Outcome)
	MaxRunning  int
	MaxInFlight int
	RatePerSec  float64 // ChannelParams.Rate, checked (CheckRate); 0: none
	RateBurst   int
}

// PoolSpec is a validated configuration, without the user's key type.
type PoolSpec struct {
	PerLevel    []int // queues per level, spare room included
	LevelFirst  []int // with Config.Spare: each level's first global queue; nil without
	Slots       int   // the channel table's size: the listed channels, plus one per spare queue
	Workers     int
	Sched       scheduler.Scheduler // nil: the workers serve the highest level with work, without a picker
	Followup    []int               // channel index -> followup channel index, for the listed channels
	IdleTimeout time.Duration
	Quantum     int
	TimingEvery int
	Limit       int
	Log         *slog.Logger
	Chans       []ChanSpec                                 // the listed channels
	Observe     func(ctx context.Context, ch int) Observer // Config.Observe; nil: none (observe.go)
}

// Build makes the engine of a pool, its channels not yet attached, and
// returns each channel's tasks queued before Attach (with a limit: New
// admitted them, and they hold units).
func Build(sp *PoolSpec) (*Engine, []int, error) {
	e, err := newEngine(sp.PerLevel, sp.Workers, sp.Sched)
	if err != nil {
		return nil, nil, err
	}
	e.log = sp.Log
	e.observer = sp.Observe
	e.followup = append(sp.Followup, make([]int, sp.Slots-len(sp.Followup))...) // spare slots: set by AddChannel
	e.idleTimeout = sp.IdleTimeout
	e.quantum = int32(sp.Quantum)
	e.timing = newTiming(sp.TimingEvery, sp.Slots)
	e.timing.link()
	e.Chans = make([]chanInfo, sp.Slots)
	e.rates = newRateTimer(e)
	total := 0
	for _, n := range sp.PerLevel {
		total += n
	}
	e.queues = make([]queueRef, 0, total)
	if sp.LevelFirst != nil {
		e.reshape = newReshaper(sp.PerLevel, sp.LevelFirst, sp.Slots, len(sp.Chans))
	}
	for i, cs := range sp.Chans {
		c := cs.Src
		e.Chans[i] = chanInfo{c: c, user: cs.User, level: cs.Level, first: cs.First, queues: c.Queues(),
			name: cs.Name, coc: cs.Coc, onEnd: e.onEndOf(&sp.Chans[i]), tracked: e.reshape != nil}
		if limit := max(cs.MaxRunning, cs.MaxInFlight); limit > 0 {
			e.Chans[i].Capped, e.Chans[i].holdsYield = true, cs.MaxInFlight > 0
			e.Chans[i].maxRunning.Store(int64(limit))
			e.Chans[i].pause.setCap(int64(limit))
		}
		e.initRate(i, cs.RatePerSec, cs.RateBurst)
		for q := range c.Queues() {
			op, _ := c.(orderedPoller)
			bp, _ := c.(batchPoller)
			if !batches(e.Chans[i].Capped, cs.Level, len(sp.PerLevel)) {
				bp = nil
			}
			e.queues = e.queues[:cs.First+q+1] // spare room before it stays zero: AddChannel fills it
			e.queues[cs.First+q] = queueRef{c: c, local: q, ch: i, ordered: op, batch: bp, level: cs.Level}
		}
		if e.reshape != nil {
			e.reshape.own(cs.First, c.Queues(), i)
		}
	}
	e.queues = e.queues[:cap(e.queues)]
	// The limit is set before Attach: a channel may start goroutines there
	// that admit tasks (Bits.AdmitWait waits for start).
	preQueued := make([]int, len(sp.Chans))
	if sp.Limit > 0 {
		e.admit.on = true
		e.admit.limit.Store(int64(sp.Limit))
		for i, cs := range sp.Chans {
			// A channel of the contract refuses tasks until attached; one
			// that queued some anyway gets them run, each holding a unit.
			preQueued[i] = cs.User.Len()
			e.admit.held.Add(int64(preQueued[i]))
		}
	}
	e.admitDeclared = make([]bool, len(e.queues))
	return e, preQueued, nil
}

// AttachAll hands each of the n listed channels its Bits through attach,
// on the goroutine running New. If one refuses, New fails: the channels
// attached so far refuse submits (stopped) and may be attached again, and
// their goroutines waiting for a unit get ErrClosed.
func (e *Engine) AttachAll(n int, attach func(ch int, b Bits) error) error {
	e.attacher = gid.Current()
	for i := range n {
		var att *attachment
		if e.reshape != nil {
			att = e.reshape.slots[i].att // a listed channel is removable too
		}
		if err := attach(i, Bits{e: e, base: e.Chans[i].first, n: e.Chans[i].queues, att: att}); err != nil {
			e.failed.Store(true)
			close(e.started)
			return err
		}
	}
	return nil
}

// Start opens admission and launches the workers, with the stall watchdog
// after stallAfter (not positive: none) naming channels by keyOf; finish
// runs once the pool has closed, before closed() is. Nothing before it
// starts a goroutine, so a failed New leaves none behind.
func (e *Engine) Start(stallAfter time.Duration, keyOf func(ch int) any, finish func()) {
	e.stall = newWatchdog(e, stallAfter, keyOf)
	e.keyOf = keyOf
	e.finish = finish
	e.live.Store(1) // the closer's share
	e.stopped.Store(false)
	close(e.started)
	e.stall.start()
	e.startWorkers()
	if e.Field.Summary() != 0 {
		// A channel's own goroutine queued tasks between Attach and now;
		// its wake-up found no worker to create (live was zero; park.pml
		// PRESTART, mutant 13).
		e.wake()
	}
}

// Stopping reports whether admission stopped: Close started (or the pool
// never started). One atomic load.
func (e *Engine) Stopping() bool { return e.stopped.Load() }

// OnPanic sets the handler of every task's panic, also of those a Future or
// Group recovered (Recovered); set by New before any worker starts.
func (e *Engine) OnPanic(f func(ch int, p *task.PanicError)) { e.panicked = f }

// StartedAt returns when the pool was built: the start of Close's rate.
func (e *Engine) StartedAt() time.Time { return e.timing.epoch }

// Closed returns a channel closed once the pool has closed.
func (e *Engine) Closed() <-chan struct{} { return e.done }

// Close starts the close and waits for it until ctx ends: OwnedPool.Close
// without its report. It returns ErrCloseFromTask when the caller is one
// the pool waits for, and ctx.Err() when ctx ended first, after cancelling
// every task's context.
func (e *Engine) Close(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if e.closer.Load() == gid.Current() {
		// From the OnEnd of a task this goroutine's first Close is dropping:
		// the close has started, and startClose must not be entered again.
		return task.ErrCloseFromTask
	}
	e.startClose()
	if e.calledFromTask(ctx) {
		return task.ErrCloseFromTask
	}
	select {
	case <-e.done:
		return nil
	default:
	}
	YieldFor(ctx, func() {
		select {
		case <-e.done:
		case <-ctx.Done():
		}
	})
	select {
	case <-e.done: // also when both are ready: the pool closed, say so
		return nil
	default:
	}
	e.cancelTasks()
	return ctx.Err()
}

// worker returns worker i, nil if it was not created yet.
func (e *Engine) worker(i int) *Worker { return e.workers.get(i) }

// exit is called by each worker goroutine as it ends, and once by the closer.
func (e *Engine) exit() {
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
func (e *Engine) share() bool {
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
func (e *Engine) enterCallbacks(ch int) uintptr {
	if ch < 0 || e.Chans[ch].onEnd == nil {
		return 0
	}
	id := gid.Current()
	e.callbacks.add(id)
	return id
}

// leaveCallbacks ends what enterCallbacks began.
func (e *Engine) leaveCallbacks(id uintptr) {
	if id != 0 {
		e.callbacks.remove(id)
	}
}

// Submit queues t in channel ch without waiting, ordered by o: refused
// once Close started, then a unit of the in-flight limit, then push (nil:
// the channel's Push).
func (e *Engine) Submit(ch int, t task.Task, o task.Order, push func(task.Task, task.Order) error) error {
	if e.stopped.Load() {
		return task.ErrClosed
	}
	if err := e.admitNow(1); err != nil {
		return err
	}
	var ob *observed
	if e.observer != nil {
		t, ob = e.observe(context.Background(), ch, t) // observe.go
	}
	e.credited(ch, 1)
	var err error
	if push == nil { // not a method value: that would allocate on the hot path
		err = e.Chans[ch].c.Push(e.timing.stamp(ch, t), o)
	} else {
		err = push(e.timing.stamp(ch, t), o)
	}
	if err != nil {
		e.queuedUnitsDone(ch, 1)
		ob.refused(err)
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
//     dropTasks (reshape.go, removeChannel).
//   - A channel's held tasks, a displaced task ended by Bits.Discard after
//     the unlock or one run on its submitter (Bits.RunHere): Bits.Hold (source.Bits.Hold)'s
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
func (e *Engine) startClose() {
	e.closeOnce.Do(func() {
		e.closer.Store(gid.Current()) // its dropped tasks' OnEnd may call Close (owned_pool.go)
		defer e.closer.Store(0)
		e.Timers.Close()
		e.resize.Lock() // a SetWorkers in progress counts its workers in live first
		e.stopped.Store(true)
		e.resize.Unlock()
		e.resumeAll() // a paused channel drains or drops as any other (pause.go), a rated one at once (rate.go)
		e.rates.close()
		e.admit.broadcast() // submitters waiting for a unit get ErrClosed
		dropped := make([][]task.Task, len(e.Chans))
		present := e.reshape.present(len(e.Chans)) // AddChannel refuses from here on
		for i := range e.Chans {
			if present[i] {
				if e.Chans[i].tracked {
					// What Close(true) takes out is in neither the queue nor
					// held until dropTasks below: a removal waiting for both
					// must not detach meanwhile (reshape.go; reshape.pml,
					// mutant asis-closeheld).
					e.Chans[i].held.Add(1)
				}
				dropped[i] = e.Chans[i].c.Close(!e.Chans[i].coc)
			}
		}
		e.closing.Store(true)
		e.wakeAll()
		if e.born.Load() == 0 && e.Field.Summary() != 0 {
			// Tasks queued before admission stopped, and no worker yet: their
			// submitter's wake-up may come after this closer's share of live
			// is gone, too late to create one (workers.go; close.pml,
			// mutant asis-closebear). Worker 0, once created, never retires
			// (target >= 1), so it drains them.
			e.bear(false, false)
		}
		for i, ts := range dropped {
			e.dropTasks(i, ts, DropOnClose)
			if present[i] && e.Chans[i].tracked {
				e.Chans[i].held.Add(-1)
			}
		}
		e.exit() // the closer's share of live
	})
}

// DropCause is why the pool dropped a task, for Stats: the outcome
// (DroppedOnClose, DroppedLate, DroppedDisplaced) but for a removal's drops,
// which end as DroppedOnClose and count apart.
type DropCause uint8

// The drop causes.
const (
	DropOnClose DropCause = iota
	DropLate
	DropDisplaced
	DropRemoved
	NumDropCauses
)

// causeOf is the cause of a drop that ends as why.
func causeOf(why task.Outcome) DropCause {
	switch why {
	case task.DroppedLate:
		return DropLate
	case task.DroppedDisplaced:
		return DropDisplaced
	}
	return DropOnClose
}

// dropTasks reports tasks removed from channel ch by Close, or by a removal
// that drops (cause DropRemoved): see dropQueued.
func (e *Engine) dropTasks(ch int, ts []task.Task, cause DropCause) {
	for _, t := range ts {
		e.dropQueued(ch, t, task.DroppedOnClose, cause)
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
func (e *Engine) dropQueued(ch int, t task.Task, why task.Outcome, cause DropCause) bool {
	if r, ok := t.(*resumption); ok {
		r.drop(cause)
		return false
	}
	u, ok := e.discard(ch, t)
	if !ok {
		return false
	}
	e.Chans[ch].dropped[cause].Add(1)
	if d, ok := u.(Droppable); ok {
		d.Dropped()
	}
	e.ended(ch, t, why) // t, not u: an observer finds its wrapper (observe.go)
	return true
}

// discard releases the unit of a queued task of channel ch the pool will
// not run and returns the task as the user submitted it, seen through
// WithContext's wrapper and any channel's (Unwrapper); false if its
// submitter cancelled it, which was reported already.
func (e *Engine) discard(ch int, t task.Task) (task.Task, bool) {
	if c := cancellableOf(t); c != nil && !c.claim(claimedDropped, true) {
		if ch >= 0 && e.Chans[ch].accounted.Load() {
			e.takeCredit(ch) // the cancellation released its unit; its credit leaves with it
		}
		return nil, false
	}
	e.queuedUnitsDone(ch, 1)
	return UserTask(t), true
}

// cancellableOf returns WithContext's wrapper inside t, or nil.
func cancellableOf(t task.Task) *cancellable {
	for {
		switch tt := t.(type) {
		case *cancellable:
			return tt
		case task.Unwrapper:
			t = tt.Unwrap()
		default:
			return nil
		}
	}
}

// UserTask returns t as the user submitted it, seen through WithContext's
// wrapper and any channel's (Unwrapper).
func UserTask(t task.Task) task.Task {
	for {
		inner, ok := unwrapOnce(t)
		if !ok {
			return t
		}
		t = inner
	}
}

// unwrapOnce returns the task t wraps (WithContext's wrapper, or any
// Unwrapper: a channel's, a stamp, an observed task), or false.
func unwrapOnce(t task.Task) (task.Task, bool) {
	switch tt := t.(type) {
	case *cancellable:
		return tt.Task, true
	case task.Unwrapper:
		return tt.Unwrap(), true
	}
	return t, false
}

// Droppable is implemented by the library's own task types (futures,
// scopes) that must resolve when Close drops them.
type Droppable interface{ Dropped() }

// calledFromTask reports whether the pool cannot finish while the calling
// goroutine waits: it runs a task of this pool, or one of the callbacks the
// pool waits for (OnEnd, a panic handler, a scheduler's Pick: on a worker
// between two tasks, or a cancelled task's OnEnd: see callbacks), or ctx is
// (or derives from) a task's context, which from any goroutine would hang
// as surely.
func (e *Engine) calledFromTask(ctx context.Context) bool {
	if tc := taskValue(ctx); tc != nil && tc.E == e {
		return true
	}
	id := gid.Current()
	if tc := carrierOf(id); tc != nil && tc.E == e {
		return true
	}
	return e.callbacks.has(id)
}

// ended hands the end of task t of channel ch to the channel's OnEnd, if it
// has one, after the end was counted; a panic in OnEnd goes to the panic
// handler. t may be a wrapper: OnEnd receives the task as submitted.
func (e *Engine) ended(ch int, t task.Task, o task.Outcome) {
	if ch < 0 || o == 0 || e.Chans[ch].onEnd == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			e.panicked(ch, &task.PanicError{Value: r, Stack: Stack()})
		}
	}()
	if e.observer != nil {
		e.endObserved(ch, t, o) // observe.go
	}
	e.Chans[ch].onEnd(UserTask(t), o)
}

func Stack() []byte { return debug.Stack() }
