package smartpool

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/smartpool-go/smartpool/internal/avail"
	"github.com/smartpool-go/smartpool/internal/idle"
	"github.com/smartpool-go/smartpool/scheduler"
)

// pad keeps hot atomics on cache lines of their own.
type pad [64]byte

// engine is the key-agnostic heart of a pool: bits, queues, workers, close
// state. Pool[K] and OwnedPool[K] wrap it with the user's key type.
type engine struct {
	field    *avail.Field
	queues   []queueRef // by global queue number; read-only after New
	chans    []chanInfo // by channel index; read-only after New except counters
	workers  []*worker  // read-only after New
	idle     *idle.Stack
	panicked func(ch int, p *PanicError) // the typed handler, wrapped

	_      pad
	waking atomic.Bool // a woken worker has not yet found work or parked (park.go)
	_      pad

	stopped   atomic.Bool   // admission stopped: set first by startClose
	closing   atomic.Bool   // set by startClose after every channel is closed
	live      atomic.Int32  // running worker goroutines + 1 for the closer's drop phase
	closeOnce sync.Once     // guards startClose
	done      chan struct{} // closed when the close has finished; report set before
	report    any           // *Report[K]; written once before done is closed

	base        context.Context // parent of every task context
	cancelTasks context.CancelFunc
	finish      func() // builds the report; run by whoever takes live to zero
}

// queueRef maps a global queue number to its channel.
type queueRef struct {
	c     Channel
	local int // queue number inside the channel
	ch    int // channel index
}

type chanInfo struct {
	c       Channel
	level   int
	coc     bool
	onDrop  func(Task)
	dropped atomic.Uint64
}

func newEngine(perLevel []int, workers int, sched scheduler.Scheduler) (*engine, error) {
	field, err := avail.New(perLevel)
	if err != nil {
		return nil, configErr(ErrTooManyQueues, "%v", err)
	}
	e := &engine{field: field, idle: idle.New(workers), done: make(chan struct{})}
	e.base, e.cancelTasks = context.WithCancel(context.Background())
	for i := range workers {
		w := &worker{e: e, id: i, wake: make(chan bool, 1), picker: sched.NewPicker(), cursor: make([]int, len(perLevel))}
		w.ctx = &taskContext{Context: e.base, w: w}
		e.workers = append(e.workers, w)
	}
	return e, nil
}

// start launches the workers. Nothing before it starts a goroutine, so a
// failed New leaves none behind.
func (e *engine) start() {
	for _, w := range e.workers {
		w.stats = make([]taskStats, len(e.chans))
	}
	e.live.Store(int32(len(e.workers)) + 1)
	for _, w := range e.workers {
		go w.loop()
	}
}

// exit is called by each worker goroutine as it ends, and once by the closer.
func (e *engine) exit() {
	if e.live.Add(-1) == 0 {
		e.finish()
		e.cancelTasks()
		close(e.done)
	}
}

// startClose stops admission and starts the drain, once. See OwnedPool.Close.
func (e *engine) startClose() {
	e.closeOnce.Do(func() {
		e.stopped.Store(true)
		dropped := make([][]Task, len(e.chans))
		for i := range e.chans {
			dropped[i] = e.chans[i].c.Close(!e.chans[i].coc)
		}
		e.closing.Store(true)
		e.wakeAll()
		for i, ts := range dropped {
			e.announceDrops(i, ts)
		}
		e.exit() // the closer's share of live
	})
}

func (e *engine) announceDrops(ch int, ts []Task) {
	c := &e.chans[ch]
	c.dropped.Add(uint64(len(ts)))
	if c.onDrop == nil {
		return
	}
	for _, t := range ts {
		e.callOnDrop(ch, t)
	}
}

func (e *engine) callOnDrop(ch int, t Task) {
	defer func() {
		if r := recover(); r != nil {
			e.panicked(ch, &PanicError{Value: r, Stack: stack()})
		}
	}()
	e.chans[ch].onDrop(t)
}

// workerOf returns the worker of e whose task context ctx is (or derives
// from), or nil.
func (e *engine) workerOf(ctx context.Context) *worker {
	if ctx == nil {
		return nil
	}
	w, _ := ctx.Value(workerKey{}).(*worker)
	if w == nil || w.e != e {
		return nil
	}
	return w
}
