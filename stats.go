package smartpool

import (
	"expvar"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/smartpool-go/smartpool/internal/engine"
	"github.com/smartpool-go/smartpool/internal/show"
)

// ChannelStats counts one channel's tasks. Counts only grow.
type ChannelStats[K comparable] struct {
	Key             K
	Level           int
	CompleteOnClose bool
	Queued          int    // tasks waiting in the channel now, or in a worker's run buffer (taken in a batch, not started)
	Paused          bool   // Pause stopped the workers taking its tasks, until Resume; false in a Close report: Close resumes
	Cap             int    // the MaxRunning or MaxInFlight cap, 0 if none (or set to 0 by SetCap)
	Held            int    // slots of the cap held now: tasks running (MaxRunning) or in progress (MaxInFlight)
	Ran             uint64 // tasks that ran and returned, with or without an error (a panic counts in Panicked, also under Go, NewFuture and Group)
	Panicked        uint64 // tasks that panicked (recovered)
	Goexited        uint64 // tasks that called runtime.Goexit
	Dropped         uint64 // tasks dropped, for every cause: the sum of DroppedBy
	DroppedBy       Drops  // the drops by cause
	Cancelled       uint64 // tasks cancelled while queued: their WithContext context ended, or Handle.Cancel
	// Yielded counts its yielded tasks not yet ended (a Close report's
	// of a dropping channel are dropped when their wait returns).
	Yielded int
	// Running counts the workers running one of its tasks (see Busy).
	Running int
	// Wait and Run are its sampled queue waits and run times.
	Wait, Run Timing
	// Removing says RemoveChannel is removing the channel.
	Removing bool
	// Rate is the start rate set (ChannelParams.Rate, Pool.SetRate); the
	// zero Rate if none. Throttled counts the times a worker found the
	// channel without a token and left it to the rate timer. (Stats.Rate
	// is the pool's throughput, not a limit.)
	Rate      Rate
	Throttled uint64
}

// Drops counts a channel's dropped tasks by cause; Dropped is their sum.
type Drops struct {
	OnClose   uint64 // Close dropped them, queued or coming back from a Yield (DroppedOnClose)
	Late      uint64 // a DropLate channel dropped them once their deadline passed (DroppedLate)
	Displaced uint64 // a DropOldest channel made room for newer tasks (DroppedDisplaced)
	Removed   uint64 // RemoveChannel with Drop dropped them (their Outcome is DroppedOnClose)
}

// String names the causes with drops, "close 1, displaced 3"; "" if none.
func (d Drops) String() string {
	var parts []string
	for _, p := range []struct {
		n    uint64
		name string
	}{{d.OnClose, "close"}, {d.Late, "late"}, {d.Displaced, "displaced"}, {d.Removed, "removed"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", p.name, p.n))
		}
	}
	return strings.Join(parts, ", ")
}

func (d Drops) sum() uint64 { return d.OnClose + d.Late + d.Displaced + d.Removed }

func (d *Drops) add(o Drops) {
	d.OnClose += o.OnClose
	d.Late += o.Late
	d.Displaced += o.Displaced
	d.Removed += o.Removed
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
	// Workers is the worker count asked for: Config.Workers or the last SetWorkers.
	Workers int
	// Live counts the workers that have a goroutine now, running or
	// parked (ants' Running): from 0 after New or a quiet spell
	// (Config.IdleTimeout) to Workers under load. Yielded tasks' goroutines
	// hold no worker and are not counted.
	Live int
	// Wakeups counts parked workers woken for new work.
	Wakeups uint64
	// Suspended counts yielded tasks of complete-on-close channels not yet
	// finished: Close waits for them.
	Suspended int
	// Limit is the in-flight limit (0: none); Admitted counts the units
	// held now and Waiting the submitters blocked for one.
	Limit, Admitted, Waiting int
	// Busy counts the workers not parked.
	Busy int
	// Rate is the tasks finished per second since the previous Stats call
	// at least a second old (0 on the first); in Close's Report, over the
	// pool's life.
	Rate float64
	// Stalls counts the stalls the watchdog noticed (Config.StallAfter);
	// Stalled says the last one goes on.
	Stalls   uint64
	Stalled  bool
	Channels []ChannelStats[K]
	// Removed sums the final counts of every channel RemoveChannel removed;
	// Channels lists those present, and Total includes Removed.
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
		t.DroppedBy.add(c.DroppedBy)
		t.Cancelled += c.Cancelled
		t.Yielded += c.Yielded
		t.Running += c.Running
	}
	return t
}

// Stats returns a snapshot of the pool's counters.
func (p *Pool[K]) Stats() *Stats[K] {
	var c engine.Census
	var keys []K
	p.e.Count(&c, func() {
		keys = make([]K, len(c.Chans))
		for i := range c.Chans {
			keys[i] = p.keys[c.Chans[i].Slot]
		}
	})
	s := &Stats[K]{Workers: c.Workers, Live: c.Live, Wakeups: c.Wakeups, Suspended: c.Suspended, Limit: c.Limit,
		Admitted: c.Admitted, Waiting: c.Waiting, Busy: c.Busy, Stalls: c.Stalls, Stalled: c.Stalled,
		Channels: make([]ChannelStats[K], len(c.Chans))}
	for i := range c.Chans {
		s.Channels[i] = channelStats(keys[i], &c.Chans[i])
	}
	s.Removed = channelStats(*new(K), &c.Removed)
	s.Rate = p.rate.update(s.Total().Finished())
	return s
}

// channelStats gives a channel's counts its key.
func channelStats[K comparable](key K, c *engine.ChanCensus) ChannelStats[K] {
	cs := ChannelStats[K]{Key: key, Level: c.Level, CompleteOnClose: c.Coc, Queued: c.Queued, Paused: c.Paused,
		Cap: c.Cap, Held: c.Held, Ran: c.Ran, Panicked: c.Panicked, Goexited: c.Goexited, DroppedBy: Drops{OnClose: c.DroppedBy[engine.DropOnClose], Late: c.DroppedBy[engine.DropLate],
			Displaced: c.DroppedBy[engine.DropDisplaced], Removed: c.DroppedBy[engine.DropRemoved]},
		Cancelled: c.Cancelled, Yielded: c.Yielded, Running: c.Running, Wait: timingOf(c.Wait), Run: timingOf(c.Run),
		Removing: c.Removing, Throttled: c.Throttled}
	if c.Rated {
		cs.Rate = Rate{PerSecond: c.RatePerSec, Burst: c.RateBurst}
	}
	cs.Dropped = cs.DroppedBy.sum()
	return cs
}

// timingOf copies the engine's histogram summary into the user's type.
func timingOf(t engine.Timing) Timing {
	if t.Count == 0 {
		return Timing{}
	}
	bs := make([]TimingBucket, len(t.Buckets))
	for i, b := range t.Buckets {
		bs[i] = TimingBucket(b)
	}
	return Timing{Count: t.Count, Sum: t.Sum, P50: t.P50, P90: t.P90, P99: t.P99, Max: t.Max, Buckets: bs}
}

// buildReport builds Close's report: the Stats of the pool as it closes,
// with the rate over its whole life (a last Stats call may come less than a
// second after the previous one, or be the first).
func (p *Pool[K]) buildReport() *Report[K] {
	r := p.Stats()
	r.Rate = 0
	if life := time.Since(p.e.StartedAt()).Seconds(); life > 0 {
		r.Rate = float64(r.Total().Finished()) / life
	}
	return r
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

// Timing summarises the durations a pool recorded for one channel (queue
// waits or run times) of the tasks it timed (about one in
// Config.TimingEvery). Zero when nothing was recorded.
type Timing struct {
	Count         uint64        // durations recorded
	Sum           time.Duration // their total
	P50, P90, P99 time.Duration // quantiles, within a bucket's width (25%)
	Max           time.Duration // the longest recorded
	// Buckets counts the durations shorter than each bound, cumulative, at
	// every power of two of nanoseconds from 1.024µs to about 68.7s (a
	// Prometheus histogram's shape).
	Buckets []TimingBucket
}

// TimingBucket is one cumulative bucket of a Timing: Count durations were
// shorter than Le.
type TimingBucket struct {
	Le    time.Duration
	Count uint64
}

// String prints the stats as a small table: a line of pool figures (stalls
// only if there were any), then one row per channel, levels top to bottom.
// Keys print with %v.
func (s *Stats[K]) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workers %d (live %d, busy %d)  rate %.1f/s  wakeups %d  suspended %d", s.Workers, s.Live, s.Busy, s.Rate, s.Wakeups, s.Suspended)
	if s.Limit > 0 {
		fmt.Fprintf(&b, "  limit %d (admitted %d, waiting %d)", s.Limit, s.Admitted, s.Waiting)
	}
	if s.Stalls > 0 {
		fmt.Fprintf(&b, "  stalls %d", s.Stalls)
		if s.Stalled {
			b.WriteString(" (stalled now)")
		}
	}
	b.WriteByte('\n')
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "level\tchannel\ton close\tpaused\tqueued\trunning\tcap\tran\tpanicked\tgoexited\tdropped\tcancelled\tyielded\twait p50\tp99\trun p50\tp99\t")
	for _, c := range s.Channels {
		policy, limit, paused := "drop", "-", "-"
		if c.Paused {
			paused = "yes"
		}
		if c.CompleteOnClose {
			policy = "complete"
		}
		if c.Cap > 0 {
			limit = fmt.Sprintf("%d/%d", c.Held, c.Cap)
		}
		if c.Rate != (Rate{}) {
			limit = strings.TrimPrefix(limit+" ", "- ") + fmt.Sprintf("%v/s", c.Rate.PerSecond)
		}
		fmt.Fprintf(tw, "%d\t%v\t%s\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t\n",
			c.Level, c.Key, policy, paused, c.Queued, c.Running, limit, c.Ran, c.Panicked, c.Goexited,
			dropped(c), c.Cancelled, c.Yielded, show.Duration(c.Wait.P50, c.Wait.Count), show.Duration(c.Wait.P99, c.Wait.Count),
			show.Duration(c.Run.P50, c.Run.Count), show.Duration(c.Run.P99, c.Run.Count))
	}
	tw.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

// publishMu serialises Publish calls, so that two of them cannot both find a
// name free.
var publishMu sync.Mutex

// Publish exposes the pool's live Stats as JSON under name in the expvar
// registry, served by expvar's handler at /debug/vars: each read of the
// variable takes a fresh snapshot. It returns an error, and publishes
// nothing, if name is empty or already published (expvar itself would
// panic). expvar cannot unpublish: the variable outlives the pool and then
// shows its final stats.
func (p *Pool[K]) Publish(name string) (err error) {
	if name == "" {
		return fmt.Errorf("smartpool: Publish: empty expvar name")
	}
	publishMu.Lock()
	defer publishMu.Unlock()
	if expvar.Get(name) != nil {
		return fmt.Errorf("smartpool: Publish: expvar name %q is already published", name)
	}
	defer func() {
		if r := recover(); r != nil { // published meanwhile by a direct expvar.Publish
			err = fmt.Errorf("smartpool: Publish %q: %v", name, r)
		}
	}()
	expvar.Publish(name, expvar.Func(func() any { return p.Stats() }))
	return nil
}

// dropped is a channel's drops in String: the sum, and its causes unless
// Close is the only one.
func dropped[K comparable](c ChannelStats[K]) string {
	if c.Dropped == c.DroppedBy.OnClose {
		return strconv.FormatUint(c.Dropped, 10)
	}
	return fmt.Sprintf("%d (%s)", c.Dropped, c.DroppedBy)
}
