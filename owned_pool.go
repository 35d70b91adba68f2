package smartpool

import (
	"context"
	"reflect"
	"runtime"

	"github.com/smartpool-go/smartpool/internal/gid"
	"github.com/smartpool-go/smartpool/scheduler"
)

// OwnedPool owns a running pool: it is the only handle that can close it.
// Share Pool() with code that only submits. All methods are safe for
// concurrent use. Do not copy an OwnedPool.
type OwnedPool[K comparable] struct {
	pool *Pool[K]
}

// New validates the behavior's configuration, attaches its channels and
// opens the pool; workers start as work needs them (Config.IdleTimeout).
// Every configuration mistake is an error wrapping
// ErrConfig whose message names the value and the rule it breaks (a negative
// limit or cap also wraps ErrBadLimit, a channel without queues ErrNoQueues,
// one already in a pool ErrAttached, a scheduler's refusal
// scheduler.ErrBadPolicy); New then starts no goroutine, and leaves every
// channel of the behavior refusing submits with ErrClosed, and free to be
// passed to another New.
//
// A channel admits tasks only once New attached it: submits to it before
// return ErrClosed, so nothing is queued before New.
func New[K comparable](b PoolBehavior[K]) (*OwnedPool[K], error) {
	if b == nil {
		return nil, configErr(errNilBehavior, "New(nil): the PoolBehavior is nil")
	}
	if v := reflect.ValueOf(b); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, configErr(errNilBehavior, "New(%T(nil)): the PoolBehavior is a nil pointer", b)
	}
	cfg := b.Config()
	workers := cfg.Workers
	switch {
	case workers < 0:
		return nil, configErr(errWorkers, "Workers = %d: want 0 (GOMAXPROCS) to %d", workers, MaxWorkers)
	case workers > MaxWorkers:
		return nil, configErr(errWorkers, "Workers = %d: want 0 (GOMAXPROCS) to %d", workers, MaxWorkers)
	case workers == 0:
		workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Limit < 0 {
		return nil, configErr(ErrBadLimit, "Limit = %d: want 0 (no limit) or more", cfg.Limit)
	}
	if cfg.Quantum < 0 || cfg.Quantum > MaxQuantum {
		return nil, configErr(errQuantum, "Quantum = %d: want 0 to %d", cfg.Quantum, MaxQuantum)
	}
	sched := cfg.Schedule
	if sched == nil {
		sched = scheduler.HighestFirst()
	}
	lo, err := buildLayout(&cfg, b)
	if err != nil {
		return nil, err
	}
	if err := startScheduler(sched, len(lo.perLevel)); err != nil {
		return nil, err
	}
	follow, err := followups(b, lo)
	if err != nil {
		return nil, err
	}
	if cfg.Schedule == nil || strictPriority(sched) {
		sched = nil // workers serve the highest level with work without a picker (worker.pick), and batch
	}
	e, err := newEngine(lo.perLevel, workers, sched)
	if err != nil {
		return nil, err
	}
	e.followup = append(follow, make([]int, lo.slots-len(follow))...) // spare slots: set by AddChannel
	e.idleTimeout = cfg.IdleTimeout
	e.quantum = int32(cfg.Quantum)
	if e.idleTimeout == 0 {
		e.idleTimeout = DefaultIdleTimeout
	}
	e.timing = newTiming(cfg.TimingEvery, lo.slots)
	e.timing.link()
	keys := append(lo.keys, make([]K, lo.slots-len(lo.keys))...) // spare slots: set by AddChannel
	p := &Pool[K]{e: e, keys: keys, log: logger(cfg.Logger)}
	p.index.Store(&lo.index)
	e.log = p.log
	p.setPanicHandler(cfg.PanicHandler)
	e.chans = make([]chanInfo, lo.slots)
	total := 0
	for _, n := range lo.perLevel {
		total += n
	}
	e.queues = make([]queueRef, 0, total)
	if lo.spare != nil {
		e.reshape = newReshaper(lo.perLevel, lo.levelFirst, lo.slots, len(lo.channels))
	}
	for i, c := range lo.sources {
		e.chans[i] = chanInfo{c: c, user: lo.channels[i], level: lo.level[i], first: lo.first[i], queues: c.Queues(),
			name: lo.keys[i], coc: lo.params[i].CompleteOnClose, onEnd: lo.params[i].OnEnd, tracked: e.reshape != nil}
		if limit := max(lo.params[i].MaxRunning, lo.params[i].MaxInFlight); limit > 0 {
			e.chans[i].capped, e.chans[i].holdsYield = true, lo.params[i].MaxInFlight > 0
			e.chans[i].maxRunning.Store(int64(limit))
			e.chans[i].pause.setCap(int64(limit))
		}
		for q := range c.Queues() {
			op, _ := c.(OrderedPoller)
			bp, _ := c.(BatchPoller)
			if !batches(e.chans[i].capped, lo.level[i], len(lo.perLevel)) {
				bp = nil
			}
			e.queues = e.queues[:lo.first[i]+q+1] // spare room before it stays zero: AddChannel fills it
			e.queues[lo.first[i]+q] = queueRef{c: c, local: q, ch: i, ordered: op, batch: bp, level: lo.level[i]}
		}
		if e.reshape != nil {
			e.reshape.own(lo.first[i], c.Queues(), i)
		}
	}
	e.queues = e.queues[:cap(e.queues)]
	// The limit is set before Attach: a channel may start goroutines there
	// that admit tasks (Bits.AdmitWait waits for start).
	preQueued := make([]int, len(lo.channels))
	if cfg.Limit > 0 {
		e.admit.on = true
		e.admit.limit.Store(int64(cfg.Limit))
		for i, c := range lo.channels {
			// A channel of the contract refuses tasks until attached; one
			// that queued some anyway gets them run, each holding a unit.
			preQueued[i] = c.Len()
			e.admit.held.Add(int64(preQueued[i]))
		}
	}
	e.admitDeclared = make([]bool, len(e.queues))
	e.attacher = gid.Current()
	if err := lo.attach(e); err != nil {
		e.failed.Store(true) // the channels attached so far refuse (e.stopped) and may be attached again
		close(e.started)     // their goroutines waiting for a unit get ErrClosed
		return nil, err
	}
	e.setAccounting(preQueued)
	e.stall = newWatchdog(e, cfg.StallAfter, p.keys)
	e.finish = func() { e.report = p.buildReport(); p.logClosed() }
	e.start()
	p.logStart(workers)
	return &OwnedPool[K]{pool: p}, nil
}

// Pool returns the shareable handle used to submit work and read stats.
func (o *OwnedPool[K]) Pool() *Pool[K] { return o.pool }

// Close shuts the pool down gracefully and waits until it is closed or ctx
// ends.
//
// The first call stops admission: from then on every submit returns
// ErrClosed. Queued tasks of complete-on-close channels all run; queued
// tasks of the other channels are dropped, counted, and handed to their
// channel's OnEnd callback (DroppedOnClose). Running tasks are never interrupted, and a task
// submitted to a pool with an idle worker has started when its submit
// returns (the wake-up hands it to that worker), so a Close right after it
// runs it; so do the first k tasks of a burst submitted to a pool with k
// idle workers, k up to GOMAXPROCS (each submit hands one to the next idle
// worker). Close returns the report once every worker has exited.
//
// If ctx ends first, Close returns ctx.Err(), and cancels the context of
// every task (a hint to stop early; nothing is interrupted); the close
// carries on, and a later Close call waits for it again. Every call after
// the pool closed returns the same report. Calls may be concurrent. The
// report is never nil: with an error it is not the final one but
// Pool.Stats at that moment, whose Queued, Yielded and Running counts say
// what the close still waits for.
//
// Called from one of the pool's own tasks (its goroutine, whatever ctx it
// passes, or with a task's context from any goroutine), or from a callback
// the pool waits for (a channel's OnEnd, the panic handler), Close starts
// the close and returns ErrCloseFromTask at once, since the pool cannot
// finish while the caller runs. Called from a task of another pool, the wait
// gives that task's worker back (see Yield).
func (o *OwnedPool[K]) Close(ctx context.Context) (*Report[K], error) {
	e := o.pool.e
	if ctx == nil {
		ctx = context.Background()
	}
	o.pool.logClosing()
	if e.closer.Load() == gid.Current() {
		// From the OnEnd of a task this goroutine's first Close is dropping:
		// the close has started, and startClose must not be entered again.
		return o.pool.Stats(), ErrCloseFromTask
	}
	e.startClose()
	if e.calledFromTask(ctx) {
		return o.pool.Stats(), ErrCloseFromTask
	}
	select {
	case <-e.done:
		return e.report.(*Report[K]), nil
	default:
	}
	Yield(ctx, func() {
		select {
		case <-e.done:
		case <-ctx.Done():
		}
	})
	select {
	case <-e.done: // also when both are ready: the pool closed, say so
		return e.report.(*Report[K]), nil
	default:
	}
	e.cancelTasks()
	return o.pool.Stats(), ctx.Err()
}

// Done returns a channel that is closed when the pool has closed (after a
// Close call started it and the last worker exited).
func (o *OwnedPool[K]) Done() <-chan struct{} { return o.pool.e.done }
