package engine

import (
	"time"

	"github.com/smartpool-go/smartpool/internal/gid"
	"github.com/smartpool-go/smartpool/task"
)

// # Spare carriers
//
// A goroutine carries one worker at a time (yield.go). When a task yields,
// its goroutine stays with the task and the worker needs another goroutine
// to carry on its loop (worker.carryOn); when a task that yielded ends on a
// host worker, borrowed a worker, or ended inside its wait, its goroutine is
// left with nothing to carry, and so is one that handed its worker to a
// resumed task (worker.handTo). Rather than ending that goroutine and starting
// a new one for the next carry-on (a goroutine, a taskContext and its grant
// and release channels each time, and a stack grown again), the free
// goroutine waits as a spare with its context, and the next carry-on hands
// the worker to it (engine.carry).
//
// Protocol. A spare is a free goroutine's taskContext in e.spares, a
// buffered channel whose capacity bounds how many wait. The goroutine:
//
//  1. stores spareWaiting in tc.spare, then sends tc on e.spares without
//     blocking (if it is full, the goroutine ends instead);
//  2. waits on tc.grant for a worker, on e.done for the pool's end and, if
//     Config.IdleTimeout is positive, on its timer.
//
// A hirer (anyone about to start a goroutine for a worker it holds, see
// engine.carry) receives from e.spares without blocking and claims the
// context by a compare-and-swap from spareWaiting to spareHired; if that
// fails (the spare gave up), it drops the context and tries the next. It
// then writes tc.waking and sends the worker on tc.grant, which orders both
// writes before the spare reads them. The worker's share of e.live moves
// with it, as with any carry-on. A spare that times out or sees e.done takes
// itself out of service by a compare-and-swap from spareWaiting to
// spareGone and ends; if that fails, it was hired, and its worker is on the
// way. So a spare is hired at most once per wait and never after it left,
// and a stale context left in e.spares costs one failed swap.
//
// Spares hold no worker and no share of e.live: they do not delay a close.
// Once the last worker has exited, nobody holds a worker to hand over, and
// e.done is closed: every spare ends. A goroutine freed after that ends at
// step 2 at once.
//
// A hired context is reset to the state of a new one (taskContext.rehire)
// except for what the goroutine keeps: its owner, its grant and release
// channels (both empty: a host has received every outcome, release being
// unbuffered, and the task has received every grant) and its timer.

// States of a spare (taskContext.spare).
const (
	spareOff     int32 = iota // carrying a worker or running a task: not in e.spares
	spareWaiting              // in e.spares (or about to be), waiting on grant
	spareHired                // claimed by a hirer: a worker is on its way on grant
	spareGone                 // gave up waiting; the goroutine has ended or is ending
)

// Bounds of e.spares. Freed goroutines come in bursts (a host resumes
// several yielded tasks in a row, and each that ends frees one) and so do
// carry-ons (the tasks polled next yield one after another): a bound of
// Workers kept few of them, so the floor is sized for bursts, the ceiling for
// memory (each spare keeps its grown stack until Config.IdleTimeout).
const (
	minSpares = 64
	maxSpares = 256
)

// newSpares returns the channel of spare carriers of a pool of workers
// workers.
func newSpares(workers int) chan *taskContext {
	return make(chan *taskContext, min(max(workers, minSpares), maxSpares))
}

// carry starts a goroutine carrying w's loop, with the waking token if
// waking (park.go): a spare if one waits, else a new goroutine. The caller
// holds w and its share of e.live, which move to that goroutine.
func (e *Engine) carry(w *Worker, waking bool) {
	for {
		select {
		case tc := <-e.spares:
			if !tc.spare.CompareAndSwap(spareWaiting, spareHired) {
				continue // it gave up waiting
			}
			tc.waking = waking
			tc.grant <- w
			return
		default:
			go e.carrier(newTaskContext(e, w), waking)
			return
		}
	}
}

// carrier runs worker loops on the calling goroutine with tc, starting with
// tc.w's, for as long as it is hired again after each (see "Spare carriers").
func (e *Engine) carrier(tc *taskContext, waking bool) {
	id := gid.Current()
	carriers.register(id, tc) // see identity.go
	defer carriers.unregister(id)
	for e.loop(tc, waking) {
		w := tc.waitSpare()
		if w == nil {
			return
		}
		waking = tc.waking
		tc.rehire(w)
	}
}

// waitSpare waits as a spare until a hirer hands over a worker, which it
// returns; or returns nil if the goroutine must end: e.spares is full, the
// pool has finished, or Config.IdleTimeout passed.
func (tc *taskContext) waitSpare() *Worker {
	e := tc.E
	tc.handOffChannels() // a goroutine that never yielded has none: it handed its worker to a resumed task
	tc.spare.Store(spareWaiting)
	select {
	case e.spares <- tc:
	default:
		return nil // full: nobody can reach this context
	}
	var timeout <-chan time.Time
	if d := e.idleTimeout; d > 0 {
		timeout = rearm(&tc.timer, d)
	}
	for {
		select {
		case w := <-tc.grant:
			if tc.timer != nil {
				tc.timer.Stop()
			}
			return w
		case <-timeout:
		case <-e.done:
		}
		if tc.spare.CompareAndSwap(spareWaiting, spareGone) {
			if tc.timer != nil {
				tc.timer.Stop()
			}
			return nil
		}
		timeout = nil // hired meanwhile: the worker is on its way
	}
}

// rehire resets tc, whose goroutine a hirer just handed w, to the state of
// newTaskContext(e, w): see "Spare carriers" for what it keeps.
func (tc *taskContext) rehire(w *Worker) {
	tc.Context = tc.E.Base
	tc.w, tc.cur = w, nil
	tc.handedOff, tc.skipped, tc.Recovered, tc.Task, tc.charged = false, false, nil, nil, false
	tc.detached, tc.origin, tc.order = false, 0, task.Order{}
	tc.counted, tc.Dropped, tc.hosted, tc.borrowed = false, false, false, false
	tc.dropCause = DropOnClose
	tc.runStart, tc.reenteredAt = 0, 0
	tc.inline = nil // empty between tasks: runInline and runHere pop what they push
	tc.obs = nil    // nil between tasks: observed.Run restores what it set
	tc.inCallback, tc.gaveWorker = false, false
	tc.waking = false
	tc.spare.Store(spareOff)
}

// # Waiting in a callback
//
// A worker runs its channel's OnEnd, and the panic handler, right after the
// task, on its own goroutine. A wait there (Future.Wait, a Group's Wait,
// Yield, Sleep) for work of the same pool would hold the worker it waits
// for: with one worker, for ever. So such a wait gives the worker back as a
// task's Yield does: the worker's loop goes on on another goroutine
// (engine.carry), and the callback finishes beside the pool's workers on
// this one, which then leaves the loop (worker.run) and waits as a spare.
// It holds a share of e.live from the hand-over until the callback returned,
// so Close still waits for the callback, and a Close from inside it still
// returns ErrCloseFromTask (the goroutine stays a registered carrier).

// leaveForCallback gives tc's worker to another goroutine for the rest of
// the callback tc's goroutine runs (see "Waiting in a callback"). Only that
// goroutine calls it, through callbackOf, holding tc.w.
func (tc *taskContext) leaveForCallback() {
	w := tc.w
	tc.E.share() // succeeds: w's share keeps live above zero until carry hands it on
	tc.w, tc.gaveWorker = nil, true
	w.running.Store(0) // not busy here (timing.go); the next carrier marks it
	tc.E.carry(w, false)
}
