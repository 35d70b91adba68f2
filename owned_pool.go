package smartpool

import (
	"context"
	"reflect"
	"runtime"

	"github.com/smartpool-go/smartpool/internal/engine"
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
		return nil, engine.ConfigErr(engine.ErrNilBehavior, "New(nil): the PoolBehavior is nil")
	}
	if v := reflect.ValueOf(b); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, engine.ConfigErr(engine.ErrNilBehavior, "New(%T(nil)): the PoolBehavior is a nil pointer", b)
	}
	cfg := b.Config()
	workers := cfg.Workers
	switch {
	case workers < 0:
		return nil, engine.ConfigErr(engine.ErrWorkers, "Workers = %d: want 0 (GOMAXPROCS) to %d", workers, engine.MaxWorkers)
	case workers > engine.MaxWorkers:
		return nil, engine.ConfigErr(engine.ErrWorkers, "Workers = %d: want 0 (GOMAXPROCS) to %d", workers, engine.MaxWorkers)
	case workers == 0:
		workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Limit < 0 {
		return nil, engine.ConfigErr(ErrBadLimit, "Limit = %d: want 0 (no limit) or more", cfg.Limit)
	}
	if cfg.Quantum < 0 || cfg.Quantum > engine.MaxQuantum {
		return nil, engine.ConfigErr(engine.ErrQuantum, "Quantum = %d: want 0 to %d", cfg.Quantum, engine.MaxQuantum)
	}
	sched := cfg.Schedule
	if sched == nil {
		sched = scheduler.HighestFirst()
	}
	lo, err := buildLayout(&cfg, b)
	if err != nil {
		return nil, err
	}
	if err := engine.StartScheduler(sched, len(lo.perLevel)); err != nil {
		return nil, err
	}
	follow, err := followups(b, lo)
	if err != nil {
		return nil, err
	}
	if cfg.Schedule == nil || engine.StrictPriority(sched) {
		sched = nil // workers serve the highest level with work without a picker (worker.pick), and batch
	}
	sp := &engine.PoolSpec{PerLevel: lo.perLevel, Slots: lo.slots, Workers: workers, Sched: sched, Followup: follow,
		IdleTimeout: cfg.IdleTimeout, Quantum: cfg.Quantum, TimingEvery: cfg.TimingEvery, Limit: cfg.Limit,
		Chans: make([]engine.ChanSpec, len(lo.sources))}
	if sp.IdleTimeout == 0 {
		sp.IdleTimeout = DefaultIdleTimeout
	}
	if sp.TimingEvery == 0 {
		sp.TimingEvery = DefaultTimingEvery
	}
	stallAfter := cfg.StallAfter
	if stallAfter == 0 {
		stallAfter = DefaultStallAfter
	}
	if lo.spare != nil {
		sp.LevelFirst = lo.levelFirst
	}
	for i, c := range lo.sources {
		sp.Chans[i] = engine.ChanSpec{Src: c, User: lo.channels[i], Level: lo.level[i], First: lo.first[i], Name: lo.keys[i],
			Coc: lo.params[i].CompleteOnClose, OnEnd: lo.params[i].OnEnd,
			MaxRunning: lo.params[i].MaxRunning, MaxInFlight: lo.params[i].MaxInFlight}
		sp.Chans[i].RatePerSec, sp.Chans[i].RateBurst, _ = rateSpec(lo.params[i], "") // checked by layout
	}
	keys := append(lo.keys, make([]K, lo.slots-len(lo.keys))...) // spare slots: set by AddChannel
	p := &Pool[K]{keys: keys, log: logger(cfg.Logger)}
	p.index.Store(&lo.index)
	sp.Log = p.log
	if observe := cfg.Observe; observe != nil {
		sp.Observe = func(ctx context.Context, ch int) engine.Observer { // ch is pinned by the submit: its key and level hold
			if o := observe(ctx, p.keys[ch], p.e.LevelOf(ch)); o != nil {
				return o
			}
			return nil // not a nil TaskObserver inside a non-nil engine.Observer
		}
	}
	e, preQueued, err := engine.Build(sp)
	if err != nil {
		return nil, err
	}
	p.e = e
	p.setPanicHandler(cfg.PanicHandler)
	if err := e.AttachAll(len(lo.sources), lo.attachOne); err != nil {
		return nil, err
	}
	e.SetAccounting(preQueued)
	e.Start(stallAfter, func(ch int) any { return keys[ch] }, // not p: the watchdog holds no pool alive
		func() { p.report = p.buildReport(); p.logClosed() })
	p.logStart(workers, len(lo.keys))
	return &OwnedPool[K]{pool: p}, nil
}

// Pool returns the shareable handle used to submit work and read stats.
func (o *OwnedPool[K]) Pool() *Pool[K] { return o.pool }

// Close shuts the pool down gracefully and waits until it is closed or ctx
// ends; it returns the report once every worker has exited. Calls may be
// concurrent, and every call after the close returns the same report.
//
// The first call stops admission: every submit returns ErrClosed from then
// on. Complete-on-close channels run their queued and yielded tasks; the
// others' queued tasks are dropped, counted and handed to OnEnd
// (DroppedOnClose). Running tasks are never interrupted, and a task
// submitted to an idle worker has started by the time its submit returns,
// so a Close right after it runs it.
//
// If ctx ends first, Close returns ctx.Err() with Pool.Stats of that moment
// (never a nil report), and cancels every task's context as a hint; the
// close carries on, and a later Close waits for it again. Called from one
// of the pool's own tasks or from a callback the pool waits for (OnEnd, the
// panic handler), it starts the close and returns ErrCloseFromTask at once.
func (o *OwnedPool[K]) Close(ctx context.Context) (*Report[K], error) {
	o.pool.logClosing()
	if err := o.pool.e.Close(ctx); err != nil {
		return o.pool.Stats(), err
	}
	return o.pool.report, nil
}

// Done returns a channel that is closed when the pool has closed (after a
// Close call started it and the last worker exited).
func (o *OwnedPool[K]) Done() <-chan struct{} { return o.pool.e.Closed() }
