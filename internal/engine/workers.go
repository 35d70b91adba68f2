package engine

// # Workers start on first need
//
// New creates no worker: a worker is created and started the first time
// work finds every existing one busy (engine.bear, from wake), so New costs
// the same for any Workers and memory follows the workers a program uses.
// Numbers are handed out in order by e.born. To the wake-up protocol
// (park.go) a worker not yet created is an idle one that has no goroutine: a
// wake-up that finds the idle stack empty creates one instead, with the
// waking token. A parked goroutine that waited Config.IdleTimeout for work
// exits and leaves its worker on the idle stack without one (an orphan,
// park.go), so goroutines, and their grown stacks, also go back after a
// burst.
//
// # Worker count at run time
//
// Workers are numbered; those below e.target run. SetWorkers raises target
// and starts the missing workers, or lowers it and wakes the parked ones; a
// worker at or above target retires at the top of its loop, after the task
// it was running and those it had taken in a batch (buffer.go), so no task
// is interrupted, lost or run twice: tasks stay in their channels for the
// workers that remain. A retired worker keeps its stats, and its number is
// reused if the pool grows again.
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

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// startWorkers makes room for the workers numbered below target and puts
// back in service those of them that were created and then retired, idle
// without a goroutine (the next wake-up starts one); the others are created
// on first need (bear). It runs in New and under resize, while live counts
// the closer's share (so it cannot reach zero meanwhile).
func (e *Engine) startWorkers() {
	n := int(e.target.Load())
	for i := range min(n, int(e.born.Load())) {
		if w := e.worker(i); w != nil && w.active.CompareAndSwap(false, true) {
			e.live.Add(1)
			w.goIdle(Orphaned)
		}
	}
}

// unborn reports whether some worker below target was never created.
func (e *Engine) unborn() bool { return e.born.Load() < e.target.Load() }

// bear creates the next worker below target that does not exist yet and
// starts its goroutine, with the waking token if token and a task if hand
// (park.go). It reports false if every worker below target exists, or the
// pool has finished (live is zero: nothing may start any more).
func (e *Engine) bear(token, hand bool) bool {
	if !e.share() { // the new worker's share
		return false
	}
	for {
		n := e.born.Load()
		if n >= e.target.Load() {
			e.exit() // give the share back
			return false
		}
		if e.born.CompareAndSwap(n, n+1) {
			e.Idle.Grow(int(n) + 1)
			e.workers.grow(int(n) + 1)
			w := &Worker{e: e, id: int(n), wake: make(chan bool, 1),
				cursor: ownLines[int](e.Field.Levels()), stats: ownLines[taskStats](len(e.Chans))}
			w.active.Store(true)
			e.workers.set(int(n), w)
			if hand {
				w.handOver() // with the highest level's task: w has no picker yet
			}
			go func() {
				w.picker = e.newPicker() // on its own goroutine: a user's NewPicker may be slow
				e.carrier(newTaskContext(e, w), token)
			}()
			return true
		}
	}
}

// ownLines returns a slice of n zero values that shares no cache line with
// any other object: a worker writes its cursor and stats on every task, and
// small slices of different workers would otherwise sit side by side in one
// line, each write taking it from the other core (false sharing).
func ownLines[T any](n int) []T {
	var zero T
	margin := (int(unsafe.Sizeof(pad{})) + int(unsafe.Sizeof(zero)) - 1) / int(unsafe.Sizeof(zero))
	return make([]T, n+2*margin)[margin : margin+n : margin+n]
}

// workerTable holds the workers by number, in chunks that grow allocates
// (by whoever creates a worker in a chunk that has none yet, before it
// publishes the worker) and never replaces; a slot is written once, by the
// goroutine that created its worker (bear), and read by anyone.
type workerTable struct {
	chunks [MaxWorkers / workerChunk]atomic.Pointer[[workerChunk]atomic.Pointer[Worker]]
}

const workerChunk = 1024

func (t *workerTable) grow(n int) {
	for c := 0; c*workerChunk < n; c++ {
		if t.chunks[c].Load() == nil {
			t.chunks[c].CompareAndSwap(nil, new([workerChunk]atomic.Pointer[Worker])) // a concurrent grow may have won
		}
	}
}

func (t *workerTable) get(i int) *Worker {
	c := t.chunks[i/workerChunk].Load()
	if c == nil { // its creator has not grown the table yet (bear)
		return nil
	}
	return c[i%workerChunk].Load()
}

func (t *workerTable) set(i int, w *Worker) { t.chunks[i/workerChunk].Load()[i%workerChunk].Store(w) }

// EachWorker calls f for every worker created so far.
func (e *Engine) EachWorker(f func(w *Worker)) {
	for i := range int(e.born.Load()) {
		if w := e.worker(i); w != nil { // nil for a moment while bear creates it
			f(w)
		}
	}
}

// retire reports whether w's goroutine must stop because w is at or above
// target, passing on the waking token it may hold (park.go).
func (w *Worker) retire(waking *bool) bool {
	e := w.e
	if *waking {
		*waking = false
		e.waking.Store(false)
		if e.hasWork() {
			e.wake()
		}
	}
	w.active.Store(false)
	if int32(w.id) < e.target.Load() && w.active.CompareAndSwap(false, true) {
		return false // SetWorkers raised target again meanwhile: carry on
	}
	return true
}

// SetWorkers is Pool.SetWorkers.
func (e *Engine) SetWorkers(n int) error {
	if n < 1 || n > MaxWorkers {
		return ConfigErr(ErrWorkers, "SetWorkers(%d): want 1 to %d workers", n, MaxWorkers)
	}
	e.resize.Lock()
	defer e.resize.Unlock()
	if e.stopped.Load() {
		return poolClosed(fmt.Sprintf("SetWorkers(%d)", n))
	}
	old := e.target.Swap(int32(n))
	e.startWorkers()
	switch {
	case int32(n) < old:
		e.wakeAll() // parked surplus workers retire; the others park again
	case e.hasWork():
		e.wake() // queued work may be waiting for the new workers: start one, which passes the wake-up on
	}
	return nil
}

// MaxWorkers is the largest Workers value New accepts.
const MaxWorkers = 1 << 16
