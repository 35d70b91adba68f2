package smartpool

// # Worker count at run time
//
// Workers are numbered; those below e.target run. SetWorkers raises target
// and starts the missing workers, or lowers it and wakes the parked ones; a
// worker at or above target retires at the top of its loop, after the task
// it was running, so no task is interrupted, lost or run twice: tasks stay
// in their channels for the workers that remain. A retired worker keeps its
// stats, and its number is reused if the pool grows again.
//
// Once Close started, no worker retires: the surplus ones drain with the
// rest and exit by the close protocol (yield.go). A worker that retired
// during the drain could take with it the only goroutine that would see a
// yielded task's re-entry: the workers below target may already have exited,
// having read e.inflight as zero while that task was still running on the
// retiring worker. A retirement decided before Close is safe: a task that
// yielded on that worker was counted in e.inflight before the worker's loop
// went on, and queued tasks stay for the workers below target.
//
// worker.active says the worker is in service: a goroutine carries its loop,
// or it is idle, with its goroutine parked or none (an orphan, park.go).
// Only a compare-and-swap from false to true starts one (SetWorkers), and a
// retiring goroutine clears it and then re-reads target, taking the worker
// back by the same compare-and-swap if target rose meanwhile: so a worker
// below target is always in service, with at most one goroutine.

// SetWorkers changes the number of workers at run time. New workers start at
// once; when n is lower, the surplus workers stop after their current task
// (a task that yielded finishes on whichever worker picks it up), unless
// Close has started by then: they then help finish the drain. n must be
// between 1 and MaxWorkers: it returns an error wrapping ErrConfig
// otherwise, and ErrClosed once Close started.
func (p *Pool[K]) SetWorkers(n int) error {
	if n < 1 || n > MaxWorkers {
		return configErr(errWorkers, "SetWorkers(%d): want 1 to %d workers", n, MaxWorkers)
	}
	e := p.e
	e.resize.Lock()
	defer e.resize.Unlock()
	if e.stopped.Load() {
		return ErrClosed
	}
	old := e.target.Swap(int32(n))
	e.startWorkers()
	if int32(n) < old {
		e.wakeAll() // parked surplus workers retire; the others park again
	}
	return nil
}

// startWorkers creates the workers numbered below target that do not exist
// yet and starts every one of them that has no goroutine. It runs in New and
// under resize, while live counts the closer's share (so it cannot reach
// zero meanwhile).
func (e *engine) startWorkers() {
	n := int(e.target.Load())
	ws := *e.workers.Load()
	if n > len(ws) {
		e.idle.Grow(n)
		grown := append(ws[:len(ws):len(ws)], make([]*worker, n-len(ws))...)
		for i := len(ws); i < n; i++ {
			grown[i] = &worker{e: e, id: i, wake: make(chan bool, 1), picker: e.newPicker(),
				cursor: make([]int, e.field.Levels()), stats: make([]taskStats, len(e.chans))}
		}
		e.workers.Store(&grown)
		ws = grown
	}
	for _, w := range ws[:n] {
		if w.active.CompareAndSwap(false, true) {
			e.live.Add(1)
			go e.loop(newTaskContext(e, w), false)
		}
	}
}

// retire reports whether w's goroutine must stop because w is at or above
// target, passing on the waking token it may hold (park.go).
func (w *worker) retire(waking *bool) bool {
	e := w.e
	if *waking {
		*waking = false
		e.waking.Store(false)
		if e.field.Summary() != 0 {
			e.wake()
		}
	}
	w.active.Store(false)
	if int32(w.id) < e.target.Load() && w.active.CompareAndSwap(false, true) {
		return false // SetWorkers raised target again meanwhile: carry on
	}
	return true
}
