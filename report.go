package smartpool

// ChannelStats counts one channel's tasks. Counts only grow.
type ChannelStats[K comparable] struct {
	Key             K
	Level           int
	CompleteOnClose bool
	Queued          int    // tasks waiting in the channel now
	Cap             int    // the MaxRunning or MaxInFlight cap, 0 if none
	Held            int    // slots of the cap held now: tasks running (MaxRunning) or in progress (MaxInFlight)
	Ran             uint64 // tasks that returned normally
	Panicked        uint64 // tasks that panicked (recovered)
	Goexited        uint64 // tasks that called runtime.Goexit
	Dropped         uint64 // tasks dropped: by Close from the queue or when they came back from a Yield after Close, or by the channel (Bits.Discard)
	Cancelled       uint64 // SubmitContext tasks whose context ended while they were queued
	// Yielded counts its tasks that yielded and have not ended: waiting,
	// queued to re-enter, or running again. In a Close report, those of a
	// channel that does not complete on close will be dropped when their
	// wait returns (and counted in Dropped of later Stats).
	Yielded int
}

// Finished returns the number of tasks that left the channel: ran,
// panicked, goexited, dropped or cancelled.
func (c ChannelStats[K]) Finished() uint64 {
	return c.Ran + c.Panicked + c.Goexited + c.Dropped + c.Cancelled
}

// Stats is a snapshot of a pool's counters, channel by channel in
// configuration order. Counters read while the pool runs are each exact at
// some instant, not all at the same one.
type Stats[K comparable] struct {
	// Workers is the worker count asked for: Config.Workers or the last
	// SetWorkers (surplus workers stop after their current task).
	Workers int
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
	// (SubmitContext, blocking channel submits).
	Limit, Admitted, Waiting int
	Channels                 []ChannelStats[K]
}

// Report is what Close returns: the final Stats of a closed pool.
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

// Total sums every channel's counters; its Key and Level are zero.
func (s *Stats[K]) Total() ChannelStats[K] {
	var t ChannelStats[K]
	for _, c := range s.Channels {
		t.Queued += c.Queued
		t.Ran += c.Ran
		t.Panicked += c.Panicked
		t.Goexited += c.Goexited
		t.Dropped += c.Dropped
		t.Cancelled += c.Cancelled
		t.Yielded += c.Yielded
	}
	return t
}

// Stats returns a snapshot of the pool's counters.
func (p *Pool[K]) Stats() *Stats[K] {
	e := p.e
	s := &Stats[K]{Workers: int(e.target.Load()), Wakeups: e.wakeups.Load(), Suspended: e.suspended(), Channels: make([]ChannelStats[K], len(e.chans))}
	if e.admit.on {
		s.Limit, s.Admitted = int(e.admit.limit.Load()), int(e.admit.held.Load())
		s.Waiting = int(e.admit.waiters.Load())
	}
	for i := range e.chans {
		c := &s.Channels[i]
		c.Key, c.CompleteOnClose = p.keys[i], e.chans[i].coc
		c.Level = e.chans[i].level
		c.Queued = e.chans[i].c.Len()
		c.Dropped = e.chans[i].dropped.Load()
		c.Cancelled = e.chans[i].cancelled.Load()
		c.Yielded = int(e.chans[i].suspended.Load())
		if e.chans[i].capped {
			c.Cap, c.Held = int(e.chans[i].maxRunning.Load()), int(e.chans[i].running.Load())
		}
		c.addOutcomes(&e.chans[i].inWait)
		for _, w := range *e.workers.Load() {
			c.addOutcomes(&w.stats[i])
		}
	}
	return s
}

// addOutcomes adds one set of outcome counters: a worker's, or the
// channel's count of tasks that ended inside a Yield's wait.
func (c *ChannelStats[K]) addOutcomes(st *taskStats) {
	c.Ran += st.ran.Load()
	c.Panicked += st.panicked.Load()
	c.Goexited += st.goexited.Load()
}

func (p *Pool[K]) buildReport() *Report[K] { return p.Stats() }
