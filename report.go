package smartpool

import (
	"runtime"
	"sync"
	"time"
)

// ChannelStats counts one channel's tasks. Counts only grow.
type ChannelStats[K comparable] struct {
	Key             K
	Level           int
	CompleteOnClose bool
	Queued          int    // tasks waiting in the channel now, or in a worker's run buffer (taken in a batch, not started)
	Paused          bool   // Pause stopped the workers taking its tasks, until Resume (pause.go); false in a Close report: Close resumes
	Cap             int    // the MaxRunning or MaxInFlight cap, 0 if none (or set to 0 by SetCap)
	Held            int    // slots of the cap held now: tasks running (MaxRunning) or in progress (MaxInFlight)
	Ran             uint64 // tasks that ran and returned, with or without an error (a panic counts in Panicked, also under Go, NewFuture and Group)
	Panicked        uint64 // tasks that panicked (recovered)
	Goexited        uint64 // tasks that called runtime.Goexit
	Dropped         uint64 // tasks dropped: by Close from the queue or when they came back from a Yield after Close, or by the channel (Bits.Discard)
	Cancelled       uint64 // tasks cancelled while queued: their WithContext context ended, or Handle.Cancel
	// Yielded counts its tasks that yielded and have not ended: waiting,
	// queued to re-enter, or running again. In a Close report, those of a
	// channel that does not complete on close will be dropped when their
	// wait returns (and counted in Dropped of later Stats).
	Yielded int
	// Running counts the workers running (or hosting) one of its tasks now,
	// or not parked since they ran one (see Stats.Busy).
	Running int
	// Wait is the queue wait of its tasks (submit to start, re-entry to
	// restart) and Run their run time (start to end, including time spent
	// yielded), from the tasks timing sampled (Config.TimingEvery).
	Wait, Run Timing
	// Removing says RemoveChannel is removing the channel: it refuses
	// submits and ends what it holds (reshape.go).
	Removing bool
}

// Finished returns the number of tasks that left the channel: ran,
// panicked, goexited, dropped or cancelled.
func (c ChannelStats[K]) Finished() uint64 {
	return c.Ran + c.Panicked + c.Goexited + c.Dropped + c.Cancelled
}

// Stats is a snapshot of a pool's counters, channel by channel in
// configuration order. Counters read while the pool runs are each exact at
// some instant, not all at the same one. Queued, read from the channel and
// the workers' run buffers, counts each task once: no batch poll or steal
// moves tasks while Stats reads them, so a task queued throughout the read
// counts once, and one that arrived or left meanwhile once or not at all.
type Stats[K comparable] struct {
	// Workers is the worker count asked for: Config.Workers or the last
	// SetWorkers (surplus workers stop after their current task).
	Workers int
	// Live counts the workers that have a goroutine now: running a task,
	// or parked waiting for one. Workers get a goroutine when work needs
	// them and lose it after Config.IdleTimeout idle, so Live is what the
	// pool costs in goroutines at the moment (ants' Running), from 0 after
	// New or a quiet spell to Workers under load. Goroutines of yielded
	// tasks, which hold no worker, are not counted.
	Live int
	// Wakeups counts the times a parked worker was woken because work
	// arrived (not counting Close's wake-ups): a measure of wake-up churn.
	Wakeups uint64
	// Suspended counts yielded tasks of complete-on-close channels that
	// have not finished (plus any task re-entering the pool at the moment
	// of the snapshot): Close waits for them.
	Suspended int
	// Limit is the in-flight limit (Config.Limit, or the last SetLimit), 0
	// if the pool has none; Admitted counts the units held now (tasks
	// queued, running or yielded) and Waiting the submitters blocked for one
	// (WithContext, blocking channel submits).
	Limit, Admitted, Waiting int
	// Busy counts the workers not parked: running a task, or between two
	// tasks (a worker is marked parked as it parks, not after each task).
	Busy int
	// Rate is the tasks finished per second over the interval between the
	// pool's previous Stats call at least a second old and this one (0 on
	// the first call); in Close's Report, over the pool's whole life.
	Rate float64
	// Stalls counts the stalls the watchdog noticed (Config.StallAfter):
	// times every worker was busy, work was queued and no task ended for
	// StallAfter. Stalled says the last one goes on: the watchdog has not
	// seen the pool move on since.
	Stalls   uint64
	Stalled  bool
	Channels []ChannelStats[K]
	// Removed sums the final counts (Ran, Panicked, Goexited, Dropped,
	// Cancelled) of every channel RemoveChannel removed, each also in its
	// removal's result; Channels lists only the channels present. Total
	// includes it, so the pool's totals keep adding up across removals.
	// Zero in a pool that never removed a channel.
	Removed ChannelStats[K]
}

// Report is what Close returns: the Stats of the pool when its last worker
// exited. Every task is counted in it but the yielded tasks of channels that
// do not complete on close and were still waiting (Yielded): each is dropped
// when its wait ends, and counted in Dropped of later Stats.
type Report[K comparable] = Stats[K]

// Channel returns the stats of the channel named key, and false if no
// channel has that key.
func (s *Stats[K]) Channel(key K) (ChannelStats[K], bool) {
	for _, c := range s.Channels {
		if c.Key == key {
			return c, true
		}
	}
	return ChannelStats[K]{}, false
}

// Total sums every channel's counters, and those of the removed channels
// (Removed); its Key and Level are zero.
func (s *Stats[K]) Total() ChannelStats[K] {
	var t ChannelStats[K]
	for _, c := range append(s.Channels, s.Removed) {
		t.Queued += c.Queued
		t.Ran += c.Ran
		t.Panicked += c.Panicked
		t.Goexited += c.Goexited
		t.Dropped += c.Dropped
		t.Cancelled += c.Cancelled
		t.Yielded += c.Yielded
		t.Running += c.Running
	}
	return t
}

// Stats returns a snapshot of the pool's counters.
func (p *Pool[K]) Stats() *Stats[K] {
	e := p.e
	defer e.reshape.lock()() // the channel tables hold still (reshape.go)
	s := &Stats[K]{Workers: int(e.target.Load()), Wakeups: e.wakeups.Load(), Suspended: e.suspended(), Channels: make([]ChannelStats[K], len(e.chans))}
	if e.admit.on {
		s.Limit, s.Admitted = int(e.admit.limit.Load()), int(e.admit.held.Load())
		s.Waiting = int(e.admit.waiters.Load())
	}
	if d := e.stall; d != nil {
		s.Stalls, s.Stalled = d.stalls.Load(), d.stalled.Load()
	}
	for i, n := range e.queued() {
		s.Channels[i].Queued = n
	}
	for i := range e.chans {
		c := &s.Channels[i]
		c.Key, c.CompleteOnClose = p.keys[i], e.chans[i].coc
		c.Level = e.chans[i].level
		c.Dropped = e.chans[i].dropped.Load()
		c.Cancelled = e.chans[i].cancelled.Load()
		c.Yielded = int(e.chans[i].suspended.Load())
		if e.chans[i].capped {
			c.Cap, c.Held = int(e.chans[i].pause.cap.Load()), int(e.chans[i].running.Load())
		}
		c.Paused = e.paused(i)
		c.addOutcomes(&e.chans[i].inWait)
		c.addOutcomes(&e.chans[i].inline)
		e.eachWorker(func(w *worker) { c.addOutcomes(&w.stats[i]) })
		c.Wait, c.Run = e.timing.chans[i].wait.snapshot(), e.timing.chans[i].run.snapshot()
	}
	live := e.live.Load() > 0 // zero once the last worker exited: the report's snapshot
	e.eachWorker(func(w *worker) {
		if live && w.active.Load() && w.idle.Load() != orphaned { // in service, and not idle without a goroutine (park.go)
			s.Live++
		}
		if r := w.running.Load(); r > 0 && int(r) <= len(s.Channels) {
			s.Busy++
			s.Channels[r-1].Running++
		}
	})
	if e.reshape != nil {
		p.reshapeStats(s)
	}
	s.Rate = p.rate.update(s.Total().Finished())
	return s
}

// addOutcomes adds one set of outcome counters: a worker's, or the
// channel's count of tasks that ended inside a Yield's wait.
func (c *ChannelStats[K]) addOutcomes(st *taskStats) {
	c.Ran += st.ran.Load()
	c.Panicked += st.panicked.Load()
	c.Goexited += st.goexited.Load()
}

// buildReport builds Close's report: the Stats of the pool as it closes,
// with the rate over its whole life (a last Stats call may come less than a
// second after the previous one, or be the first).
func (p *Pool[K]) buildReport() *Report[K] {
	r := p.Stats()
	r.Rate = 0
	if life := time.Since(p.e.timing.epoch).Seconds(); life > 0 {
		r.Rate = float64(r.Total().Finished()) / life
	}
	return r
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

// rateWindow turns the finished-task count of successive Stats calls into a
// rate. Only Stats touches it, under mu: never the hot path.
type rateWindow struct {
	mu   sync.Mutex
	at   time.Time // when done was read; zero before the first call
	done uint64
	rate float64
}

// update returns the rate over the interval since the last reading at
// least a second old, and starts a new interval when it is.
func (r *rateWindow) update(done uint64) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.at.IsZero() {
		r.at, r.done = now, done
		return 0
	}
	if dt := now.Sub(r.at); dt >= time.Second {
		r.rate = float64(done-r.done) / dt.Seconds()
		r.at, r.done = now, done
	}
	return r.rate
}
