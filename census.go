package smartpool

import "runtime"

// census is the engine's counters at one moment, without the user's keys:
// what Pool.Stats is built from.
type census struct {
	workers, live, busy      int
	limit, admitted, waiting int
	suspended                int
	wakeups, stalls          uint64
	stalled                  bool
	chans                    []chanCensus // the channels present, in slot order
	removed                  chanCensus   // the outcomes of the channels removed so far
}

// chanCensus is one channel's counters; slot is its index (its key's).
type chanCensus struct {
	slot                                        int
	level                                       int
	coc, paused, removing                       bool
	queued, cap, held, yielded, running         int
	ran, panicked, goexited, dropped, cancelled uint64
	wait, run                                   Timing
}

func (c *chanCensus) addOutcomes(st *taskStats) {
	c.ran += st.ran.Load()
	c.panicked += st.panicked.Load()
	c.goexited += st.goexited.Load()
}

// count fills c with the pool's counters now, then calls name, while the
// channel tables hold still (reshape.go): the caller reads its keys there.
func (e *engine) count(c *census, name func()) {
	defer e.reshape.lock()()
	defer name()
	c.workers, c.wakeups, c.suspended = int(e.target.Load()), e.wakeups.Load(), e.suspended()
	c.chans = make([]chanCensus, len(e.chans))
	if e.admit.on {
		c.limit, c.admitted = int(e.admit.limit.Load()), int(e.admit.held.Load())
		c.waiting = int(e.admit.waiters.Load())
	}
	if d := e.stall; d != nil {
		c.stalls, c.stalled = d.stalls.Load(), d.stalled.Load()
	}
	for i, n := range e.queued() {
		c.chans[i].queued = n
	}
	for i := range e.chans {
		ch := &c.chans[i]
		ch.slot, ch.coc, ch.level = i, e.chans[i].coc, e.chans[i].level
		ch.dropped = e.chans[i].dropped.Load()
		ch.cancelled = e.chans[i].cancelled.Load()
		ch.yielded = int(e.chans[i].suspended.Load())
		if e.chans[i].capped {
			ch.cap, ch.held = int(e.chans[i].pause.cap.Load()), int(e.chans[i].running.Load())
		}
		ch.paused = e.paused(i)
		ch.addOutcomes(&e.chans[i].inWait)
		ch.addOutcomes(&e.chans[i].inline)
		e.eachWorker(func(w *worker) { ch.addOutcomes(&w.stats[i]) })
		ch.wait, ch.run = e.timing.chans[i].wait.snapshot(), e.timing.chans[i].run.snapshot()
	}
	live := e.live.Load() > 0 // zero once the last worker exited: the report's snapshot
	e.eachWorker(func(w *worker) {
		if live && w.active.Load() && w.idle.Load() != orphaned { // in service, and not idle without a goroutine (park.go)
			c.live++
		}
		if r := w.running.Load(); r > 0 && int(r) <= len(c.chans) {
			c.busy++
			c.chans[r-1].running++
		}
	})
	if e.reshape != nil {
		e.reshapeCensus(c)
	}
}

// reshapeCensus keeps the channels present, less the counts of their slot's
// earlier channels, and fills removed. Under the reshape lock.
func (e *engine) reshapeCensus(c *census) {
	rs := e.reshape
	out := c.chans[:0]
	for i := range c.chans {
		sl := &rs.slots[i]
		if !rs.listed(i) {
			continue
		}
		ch := c.chans[i]
		ch.ran -= sl.base.ran
		ch.panicked -= sl.base.panicked
		ch.goexited -= sl.base.goexited
		ch.dropped -= sl.base.dropped
		ch.cancelled -= sl.base.cancelled
		ch.removing = sl.state == slotRemoving
		out = append(out, ch)
	}
	c.chans = out
	c.removed.ran, c.removed.panicked, c.removed.goexited = rs.removed.ran, rs.removed.panicked, rs.removed.goexited
	c.removed.dropped, c.removed.cancelled = rs.removed.dropped, rs.removed.cancelled
}

// queued returns each channel's queued tasks: its Len plus the tasks of its
// queues in the workers' run buffers. It holds every buffer's lock while it
// reads (holdBuffers): a batch poll or a steal moving tasks between a
// channel and a buffer, or between two buffers, in the middle of the read
// would count them twice, or not at all.
func (e *engine) queued() []int {
	q := make([]int, len(e.chans))
	for try := 1; ; try++ {
		n := int(e.born.Load())
		held, all := e.holdBuffers(n)
		for i := range e.chans {
			if e.chans[i].user != nil && e.reshape.listed(i) { // spare slots hold none (reshape.go; the caller holds its lock)
				q[i] = e.chans[i].user.Len()
			}
		}
		if (!all || int(e.born.Load()) != n) && try < maxQueuedTries {
			// A worker being created (or created meanwhile) may fill its
			// buffer before a Len read or after it: read again with its
			// lock too.
			releaseBuffers(held)
			runtime.Gosched()
			continue
		}
		for _, h := range held {
			if k, qi := h.b.buffered(); k > 0 {
				q[e.queues[qi].ch] += k
			}
		}
		releaseBuffers(held)
		return q
	}
}

// maxQueuedTries bounds queued's reads while workers are being created.
const maxQueuedTries = 8

// heldBuffer is a run buffer queued reads, and whether it holds its lock.
type heldBuffer struct {
	b      *runBuffer
	locked bool
}

// holdBuffers locks the run buffers of workers 0 to n-1, in order, and
// returns them; all is false if a worker was still being created (bear). The
// order makes no cycle: a fill or a steal holds one buffer lock at a time. A
// lock still held after holdSpins tries is not taken, and that buffer is
// read without it: its holder may be the caller itself (a channel's
// PollBatch, which runs under it, calling Stats through Bits.Discard and
// OnEnd), and Stats must not hang.
func (e *engine) holdBuffers(n int) (held []heldBuffer, all bool) {
	held = make([]heldBuffer, 0, n)
	all = true
	for i := range n {
		w := e.worker(i)
		if w == nil {
			all = false
			continue
		}
		h := heldBuffer{b: &w.buf}
		for range holdSpins {
			if h.locked = h.b.mu.TryLock(); h.locked {
				break
			}
			runtime.Gosched()
		}
		held = append(held, h)
	}
	return held, all
}

// holdSpins bounds holdBuffers' tries for one buffer's lock: a fill holds
// it for one PollBatch call.
const holdSpins = 10000

// releaseBuffers unlocks what holdBuffers locked.
func releaseBuffers(held []heldBuffer) {
	for _, h := range held {
		if h.locked {
			h.b.mu.Unlock()
		}
	}
}
