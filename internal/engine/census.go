package engine

import "runtime"

// Census is the engine's counters at one moment, without the user's keys:
// what Pool.Stats is built from.
type Census struct {
	Workers, Live, Busy      int
	Limit, Admitted, Waiting int
	Suspended                int
	Wakeups, Stalls          uint64
	Stalled                  bool
	Chans                    []ChanCensus // the channels present, in slot order
	Removed                  ChanCensus   // the outcomes of the channels removed so far
}

// ChanCensus is one channel's counters; slot is its index (its key's).
type ChanCensus struct {
	Slot                                int
	Level                               int
	Coc, Paused, Removing               bool
	Queued, Cap, Held, Yielded, Running int
	Ran, Panicked, Goexited, Cancelled  uint64
	DroppedBy                           [NumDropCauses]uint64 // by DropCause
	RatePerSec                          float64               // the start rate (rate.go), if Rated
	RateBurst                           int
	Rated                               bool
	Throttled                           uint64 // takes refused for want of a token
	Wait, Run                           Timing
}

func (c *ChanCensus) addOutcomes(st *taskStats) {
	c.Ran += st.ran.Load()
	c.Panicked += st.panicked.Load()
	c.Goexited += st.goexited.Load()
}

// Count fills c with the pool's counters now, then calls name, while the
// channel tables hold still (reshape.go): the caller reads its keys there.
func (e *Engine) Count(c *Census, name func()) {
	defer e.reshape.lock()()
	defer name()
	c.Workers, c.Wakeups, c.Suspended = int(e.target.Load()), e.wakeups.Load(), e.suspended()
	c.Chans = make([]ChanCensus, len(e.Chans))
	if e.admit.on {
		c.Limit, c.Admitted = int(e.admit.limit.Load()), int(e.admit.held.Load())
		c.Waiting = int(e.admit.waiters.Load())
	}
	if d := e.stall; d != nil {
		c.Stalls, c.Stalled = d.stalls.Load(), d.stalled.Load()
	}
	for i, n := range e.queued() {
		c.Chans[i].Queued = n
	}
	for i := range e.Chans {
		ch := &c.Chans[i]
		ch.Slot, ch.Coc, ch.Level = i, e.Chans[i].coc, e.Chans[i].level
		for k := range ch.DroppedBy {
			ch.DroppedBy[k] = e.Chans[i].dropped[k].Load()
		}
		ch.Cancelled = e.Chans[i].cancelled.Load()
		ch.Yielded = int(e.Chans[i].suspended.Load())
		if e.Chans[i].Capped {
			ch.Cap, ch.Held = int(e.Chans[i].pause.cap.Load()), int(e.Chans[i].running.Load())
		}
		ch.Paused = e.paused(i)
		ch.RatePerSec, ch.RateBurst, ch.Rated = e.rateOf(i)
		ch.Throttled = e.Chans[i].throttled.Load()
		ch.addOutcomes(&e.Chans[i].inWait)
		ch.addOutcomes(&e.Chans[i].inline)
		e.EachWorker(func(w *Worker) { ch.addOutcomes(&w.stats[i]) })
		ch.Wait, ch.Run = e.timing.chans[i].wait.snapshot(), e.timing.chans[i].run.snapshot()
	}
	live := e.live.Load() > 0 // zero once the last worker exited: the report's snapshot
	e.EachWorker(func(w *Worker) {
		if live && w.active.Load() && w.Idle.Load() != Orphaned { // in service, and not idle without a goroutine (park.go)
			c.Live++
		}
		if r := w.running.Load(); r > 0 && int(r) <= len(c.Chans) {
			c.Busy++
			c.Chans[r-1].Running++
		}
	})
	if e.reshape != nil {
		e.reshapeCensus(c)
	}
}

// reshapeCensus keeps the channels present, less the counts of their slot's
// earlier channels, and fills removed. Under the reshape lock.
func (e *Engine) reshapeCensus(c *Census) {
	rs := e.reshape
	out := c.Chans[:0]
	for i := range c.Chans {
		sl := &rs.slots[i]
		if !rs.listed(i) {
			continue
		}
		ch := c.Chans[i]
		ch.Ran -= sl.base.ran
		ch.Panicked -= sl.base.panicked
		ch.Goexited -= sl.base.goexited
		for k := range ch.DroppedBy {
			ch.DroppedBy[k] -= sl.base.dropped[k]
		}
		ch.Cancelled -= sl.base.cancelled
		ch.Removing = sl.state == slotRemoving
		out = append(out, ch)
	}
	c.Chans = out
	c.Removed.Ran, c.Removed.Panicked, c.Removed.Goexited = rs.removed.ran, rs.removed.panicked, rs.removed.goexited
	c.Removed.DroppedBy, c.Removed.Cancelled = rs.removed.dropped, rs.removed.cancelled
}

// queued returns each channel's queued tasks: its Len plus the tasks of its
// queues in the workers' run buffers. It holds every buffer's lock while it
// reads (holdBuffers): a batch poll or a steal moving tasks between a
// channel and a buffer, or between two buffers, in the middle of the read
// would count them twice, or not at all.
func (e *Engine) queued() []int {
	q := make([]int, len(e.Chans))
	for try := 1; ; try++ {
		n := int(e.born.Load())
		held, all := e.holdBuffers(n)
		for i := range e.Chans {
			if e.Chans[i].user != nil && e.reshape.listed(i) { // spare slots hold none (reshape.go; the caller holds its lock)
				q[i] = e.Chans[i].user.Len()
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
func (e *Engine) holdBuffers(n int) (held []heldBuffer, all bool) {
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
