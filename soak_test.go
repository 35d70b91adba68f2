package smartpool_test

// K1 TestSoak_Mixed: a long open-loop run of a mixed workload
// through a pool that is replaced while producers keep going, checked by a
// ledger all along. Run it with `make soak`, or:
//
//	SMARTPOOL_SOAK=60s go test -run Soak -count=1 -timeout 5m -v .
//
// Knobs, from the environment:
//
//	SMARTPOOL_SOAK          run length, a time.Duration (60s in CI, 30m
//	                        nightly, 4h weekly); unset: the test is skipped
//	SMARTPOOL_SOAK_RATE     base arrival rate, tasks/s over all producers
//	                        (default 20000, CI's rate; the nightly run,
//	                        scripts/nightly.sh k1, uses 50000)
//	SMARTPOOL_SOAK_WORKERS  workers per pool (default GOMAXPROCS)
//	SMARTPOOL_SOAK_SCHED    highest-first or round-robin for every pool
//	                        (default: alternate, so both schedulers soak)
//	SMARTPOOL_TEST_SEED     replays the arrivals and task shapes (not the
//	                        interleavings)
//
// The workload: 16 producers submit open-loop (Poisson arrivals paced by a
// 1 ms ticker, whatever the pool does) into 12 channels on 4 levels, three per
// level: a FIFO, a Deadline (one of them with DropLate) and a Multi (of FIFOs,
// or of Deadlines), complete-on-close and dropping ones mixed. Levels 0-3 get
// 10, 20, 30 and 40% of the arrivals (the urgent level is the lightest);
// followups go into the channel itself or a higher level, never from a lower
// level into level 0. Pools alternate HighestFirst and RoundRobin(1ms, 500µs,
// 500µs, 500µs), a 2.5 ms rotation. A task busy-spins 0-200 µs (exponential,
// mean 20 µs); 20% then yield 1-3 times (Sleep for 20-500 µs, or Yield with a
// wait that only reschedules); 0.1% panic at the end; 1% of deadlines are in
// the past. Every 30 s the rate is 5x for 2 s (see soak.burst): at the CI
// rate that is 2 cores of spinning alone, so on CI's 2 cores the pool falls
// behind during a burst and catches up after it. Every 60 s (every third of
// the run if that is shorter, so that a 60 s run replaces the pool twice) a
// fresh pool replaces the old one: producers move to it, and the old one is
// closed and its report folded into the ledger.
//
// The ledger gives every task an ID and one outcome: ran, panicked (the panic
// handler) or dropped (ChannelParams.OnEnd, which sees every drop: a task
// Close dropped from a queue, one whose Yield never returned because Close
// dropped it, or a late one DropLate dropped; how many of those were late
// is the channel's own DeadlineStats.DroppedLate). OnEnd sees the other
// endings too: at each replacement its counts of tasks that ran and
// panicked must equal the ledger's. Counts are
// kept per pool, the IDs as an order-independent checksum (count, sum and xor
// of a 64-bit hash; B9 in TESTING.md), so memory stays flat however long it
// runs.
//
// Every 10 s: the live pool's ledger identity, accepted = ran + panicked +
// dropped + still-in-pool with still-in-pool >= 0, and its Stats
// agreeing with the ledger up to the tasks finishing at that instant (at most
// one per worker); goroutines <= baseline + workers + producers + suspended
// tasks (+ a documented slack); level-0 p99 submit-to-start latency under
// 10 ms while level 0 is below half capacity (see "Level-0 latency"). At each
// replacement, for the closed pool: the exact identity with nothing left in
// the pool, and the report agreeing with the ledger. At the end: the
// checksums of accepted and finished IDs equal, the live heap after GC within
// 10% of its value after warm-up (F6; plus what the runtime keeps for each
// goroutine beyond the high-water mark reached by then: see
// soakGoroutineBytes), goleak clean.
//
// # Level-0 latency
//
// The bound is asserted in a 10 s window when level-0 tasks held the workers
// less than half the window (soakTask.Run adds that time up) and no burst
// overlapped it. During a burst level 0's own arrivals are 5x, and the pool
// as a whole is past its capacity, so that no share of it can be measured:
// held time counts the tasks' own running time, not the pool's per-task work
// around them, which grows when the CPU is oversubscribed. With RoundRobin
// level 0 is then at the edge of its share (1 ms of each 2.5 ms rotation):
// calibration on 2 cores found about 45 level-0 tasks queued at the end of a
// burst and a level-0 p99 of 30-90 ms, where HighestFirst mostly stays at
// 2-4 ms with level 0 empty. The windows after a burst, when levels 1-3 work off
// seconds of backlog while level 0 is back to its own rate, are asserted:
// they are the test of priority isolation. Burst windows are logged. With
// RoundRobin a window is not asserted either when it starts with the pool
// still past its capacity (more than soakBehind of arrivals in it, as after
// a burst that the machine could not keep up with): level 0 then has its
// share of a pool that is still working off the burst, the burst's case
// (in CI on a loaded 2-core machine: 71,000 tasks in the pool and 11,500
// suspended in Yield at the end of the burst window, and a level-0 p99 of
// 63 ms in the next). HighestFirst's windows after a burst stay asserted.
//
// No sleeps synchronise anything: the ticker and the Sleep calls in tasks are
// load, and every wait for an event is bounded and fails loudly.

import (
	"bytes"
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/scheduler"
)

const (
	soakProducers   = 16
	soakLevels      = 4
	soakTick        = time.Millisecond      // producer pacing
	soakCheckEvery  = 10 * time.Second      // ledger, goroutines, latency
	soakReplace     = 60 * time.Second      // pool lifetime (capped at a third of the run)
	soakBurstEvery  = 30 * time.Second      // see soak.burst
	soakBurstLen    = 2 * time.Second       //
	soakBurstFactor = 5                     // rate multiplier during a burst
	soakBurstClear  = 8 * time.Second       // no replacement sooner after a burst ends
	soakMeanCost    = 20 * time.Microsecond // busy-spin per task, exponential...
	soakMaxCost     = 200 * time.Microsecond
	soakYieldPct    = 20                    // % of tasks that yield, 1-3 times
	soakPanicPer    = 1000                  // 1 in soakPanicPer tasks panics
	soakPastPct     = 1                     // % of deadlines in the past
	soakLatency     = 10 * time.Millisecond // level-0 p99 bound...
	soakHalf        = 0.5                   // ...asserted while level 0 holds the workers less than this share of the time
	soakBehind      = time.Second           // ...and, with RoundRobin, unless the last check found more than this much arrival in the pool
	soakHeapSlack   = 0.10                  // F6
	// soakGoroutineSlack covers goroutines that finished their task but
	// have not returned yet: a resumed task between its last statement and
	// the hand-back to its host worker, a dropped one unwinding. Workers
	// are added on top.
	soakGoroutineSlack = 8
)

// soakChan is one channel of the layout.
type soakChan struct {
	key      string
	level    int
	kind     string // fifo, deadline, droplate (Deadline with DropLate), multififo, multideadline
	coc      bool
	followup string // "" for itself
}

// soakLayout returns the 12 channels, level 0 (the highest) first. Followups
// of complete-on-close channels are complete-on-close channels (a
// configuration rule). No channel of a lower level follows up into level 0,
// so that level 0's load is its own arrivals: what the latency check bounds.
func soakLayout() []soakChan {
	return []soakChan{
		{"l0.fifo", 0, "fifo", true, ""},
		{"l0.deadline", 0, "deadline", true, "l0.fifo"},
		{"l0.multi", 0, "multififo", false, ""},
		{"l1.fifo", 1, "fifo", false, ""},
		{"l1.deadline", 1, "deadline", false, "l1.fifo"},
		{"l1.multi", 1, "multififo", true, ""},
		{"l2.fifo", 2, "fifo", true, "l1.multi"},
		{"l2.deadline", 2, "droplate", false, ""},
		{"l2.multi", 2, "multideadline", true, ""},
		{"l3.fifo", 3, "fifo", false, ""},
		{"l3.deadline", 3, "deadline", true, "l1.multi"},
		{"l3.multi", 3, "multififo", false, "l1.fifo"},
	}
}

// soakLevelShare is the share of arrivals per level, in percent: the urgent
// level is the lightest, as in the programs the pool is for.
var soakLevelShare = [soakLevels]int{10, 20, 30, 40}

// soakByLevel returns the channel indexes of each level.
func soakByLevel(layout []soakChan) (by [soakLevels][]int) {
	for i, c := range layout {
		by[c.level] = append(by[c.level], i)
	}
	return by
}

// pick draws a channel index: a level by soakLevelShare, then one of its
// channels uniformly.
func (s *soak) pick(r *rand.Rand) int {
	n := r.IntN(100)
	l := 0
	for n >= soakLevelShare[l] {
		n -= soakLevelShare[l]
		l++
	}
	return s.byLevel[l][r.IntN(len(s.byLevel[l]))]
}

// soakFollow returns, for every channel index, the index of its followup.
func soakFollow(layout []soakChan) []int {
	follow := make([]int, len(layout))
	for i, c := range layout {
		follow[i] = i
		for j, d := range layout {
			if c.followup == d.key {
				follow[i] = j
			}
		}
	}
	return follow
}

// soakTally is an order-independent checksum of a set of IDs.
type soakTally struct{ n, sum, xor atomic.Uint64 }

func soakHash(id uint64) uint64 { // splitmix64
	id += 0x9e3779b97f4a7c15
	id = (id ^ id>>30) * 0xbf58476d1ce4e5b9
	id = (id ^ id>>27) * 0x94d049bb133111eb
	return id ^ id>>31
}

func (t *soakTally) add(id uint64, sign int) {
	h := soakHash(id)
	if sign > 0 {
		t.n.Add(1)
		t.sum.Add(h)
	} else {
		t.n.Add(^uint64(0))
		t.sum.Add(-h)
	}
	for old := t.xor.Load(); !t.xor.CompareAndSwap(old, old^h); old = t.xor.Load() {
	}
}

func (t *soakTally) String() string {
	return fmt.Sprintf("n=%d sum=%#x xor=%#x", t.n.Load(), t.sum.Load(), t.xor.Load())
}

// soakHist is a latency histogram: 8 buckets per power of two of
// nanoseconds, so a percentile is read to within 12.5%.
type soakHist struct{ b [soakBuckets]atomic.Uint64 }

// soakBuckets covers every int64: 16 exact values, then 8 buckets for each
// power of two from 2^4 to 2^63.
const soakBuckets = 16 + 60*8

// soakCounts is a histogram's counts, read out.
type soakCounts [soakBuckets]uint64

func soakBucket(ns int64) int {
	if ns < 16 {
		return int(max(ns, 0))
	}
	e := bits.Len64(uint64(ns)) - 1 // 2^e <= ns < 2^(e+1), e >= 4
	return 16 + (e-4)*8 + int(uint64(ns)>>(e-3))&7
}

// soakBucketTop is the largest value of bucket i.
func soakBucketTop(i int) time.Duration {
	if i < 16 {
		return time.Duration(i)
	}
	e, sub := (i-16)/8+4, (i-16)%8
	return time.Duration(int64(9+sub)<<(e-3) - 1)
}

func (h *soakHist) record(d time.Duration) { h.b[soakBucket(int64(d))].Add(1) }

// take moves h's counts into a snapshot (and into total, if not nil).
func (h *soakHist) take(total *soakCounts) (snap soakCounts) {
	for i := range h.b {
		snap[i] = h.b[i].Swap(0)
		if total != nil {
			total[i] += snap[i]
		}
	}
	return snap
}

// soakPercentile returns the top of the bucket holding quantile q, and the
// number of samples.
func soakPercentile(c *soakCounts, q float64) (time.Duration, uint64) {
	var n uint64
	for _, v := range c {
		n += v
	}
	if n == 0 {
		return 0, 0
	}
	rank := uint64(q*float64(n-1)) + 1
	var seen uint64
	for i, v := range c {
		if seen += v; seen >= rank {
			return soakBucketTop(i), n
		}
	}
	return soakBucketTop(len(c) - 1), n
}

// outcome kinds of the ledger.
const (
	soakRan = iota
	soakPanicked
	soakDropped
	soakOutcomes
)

// soakGen is one pool's lifetime: the pool, its submit functions and its
// share of the ledger.
type soakGen struct {
	s       *soak
	n       int
	sched   string
	rr      int // 1 for round-robin, 0 for highest-first
	workers int
	pool    *smartpool.OwnedPool[string]
	subs    []func(t *soakTask, r *rand.Rand) error // by channel index
	late    []*channels.Deadline                    // the DropLate channels

	// Producers submit holding mu for reading, after checking retired;
	// retiring takes it for writing, so that no submit reaches the pool
	// once it is retired.
	mu      sync.RWMutex
	retired bool // guarded by mu

	accepted atomic.Uint64
	out      [soakOutcomes]atomic.Uint64
	ends     [smartpool.DroppedDisplaced + 1]atomic.Uint64 // OnEnd's endings other than drops, by outcome
	// pending is accepted minus finished, plus one while the pool is live;
	// whoever takes it to zero closes settled. Every task adds one before
	// it is submitted, so it never reaches zero early.
	pending atomic.Int64
	settled chan struct{}
	settle  func() // closes settled, once
}

// soakTask is one task of the ledger.
type soakTask struct {
	g         *soakGen
	id        uint64
	ch        int // channel index in the layout
	level     int
	yields    int
	panics    bool
	cost      time.Duration
	submitted time.Duration // since s.epoch, just before the submit
}

type soakPanic struct{ t *soakTask }

func soakSpin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// Run is the task: spin, maybe yield, maybe panic; it records its own outcome
// when it runs to its end (a drop, even after a Yield, goes to OnEnd) and
// never asserts. It also
// adds up the time it holds a worker, by level: each stretch between yields
// is charged to the level of the queue the task was taken from for it (its
// own channel, then the followup of the previous one), which is what "level
// 0 below half capacity" is measured with.
func (t *soakTask) Run(ctx context.Context) {
	s := t.g.s
	start := s.since()
	wait := start - t.submitted
	s.lat[t.level].record(wait)
	if t.level == 0 {
		s.lat0[t.g.rr].record(wait)
	}
	ch := t.ch
	finished, panicking := false, false
	defer func() {
		if !finished && !panicking {
			return // Close dropped it while it yielded: ChannelParams.OnEnd recorded it before these deferred calls
		}
		s.held[s.layout[ch].level].Add(int64(s.since() - start))
	}()
	soakSpin(t.cost)
	if t.yields > 0 {
		s.suspended.Add(1)
		defer s.suspended.Add(-1)
		for i := range t.yields {
			s.held[s.layout[ch].level].Add(int64(s.since() - start))
			if (t.id+uint64(i))%2 == 0 {
				_ = smartpool.Sleep(ctx, time.Duration(20+t.id%480)*time.Microsecond)
			} else {
				smartpool.Yield(ctx, runtime.Gosched)
			}
			start, ch = s.since(), s.follow[ch]
		}
	}
	if t.panics {
		panicking = true
		panic(soakPanic{t})
	}
	finished = true
	t.g.finish(t, soakRan)
}

// finish records t's outcome.
func (g *soakGen) finish(t *soakTask, kind int) {
	g.out[kind].Add(1)
	g.s.finished.add(t.id, 1)
	switch p := g.pending.Add(-1); {
	case p == 0:
		g.settle()
	case p < 0:
		g.s.fail("pool %d: task %d has a second outcome (%d)", g.n, t.id, kind)
	}
}

// soak is the whole run.
type soak struct {
	t       *testing.T
	epoch   time.Time
	rate    float64 // base tasks/s over all producers
	follow  []int   // channel index -> followup channel index
	byLevel [soakLevels][]int
	sched   string        // "" alternates
	phase   time.Duration // first burst: see burst
	workers int
	layout  []soakChan

	cur       atomic.Pointer[soakGen]
	nextID    atomic.Uint64
	accepted  soakTally
	finished  soakTally
	suspended atomic.Int64             // tasks between their first Yield and their end
	lat       [soakLevels]soakHist     // submit-to-start, this window
	held      [soakLevels]atomic.Int64 // time tasks held a worker, by the level of the queue they were taken from, this window
	totalLat  [soakLevels]soakCounts
	lat0      [2]soakHist          // level 0 over the whole run, by scheduler (soakGen.rr)
	totals    [soakOutcomes]uint64 // closed pools
	lateTotal uint64               // closed pools' drops that DropLate made (included in totals' dropped)
	acceptedN uint64               // closed pools
	pools     int

	failMu   sync.Mutex
	failures []string // guarded by failMu
}

func (s *soak) since() time.Duration { return time.Since(s.epoch) }

// fail records a failure seen off the test goroutine (tasks never assert:
// t.Fatal or require there would only Goexit the goroutine running the task);
// the test goroutine reports it.
func (s *soak) fail(format string, args ...any) {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	if len(s.failures) < 20 {
		s.failures = append(s.failures, fmt.Sprintf(format, args...))
	}
}

func (s *soak) failed() []string {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	return append([]string(nil), s.failures...)
}

// burst returns the rate multiplier at time x of the run, and when the
// burst under way or last ended ends (-1 before the first). Bursts last 2 s,
// every 30 s, from s.phase on: (replacement period + 5 s) mod 30 s, that is
// 5 s after each replacement in long runs (60 s pools: two bursts per pool)
// and 25 s, 55 s in the 60 s CI run (20 s pools: the second pool, round-robin,
// and the third, highest-first, each take a burst). Replacements wait until
// soakBurstClear after a burst's end: a closing pool's queued
// complete-on-close tasks run on its own workers, beside the new pool's, with
// no priority between the two pools, and closing a pool in the middle of a
// backlog would measure the Go scheduler rather than this one.
func (s *soak) burst(x time.Duration) (factor float64, end time.Duration) {
	if x < s.phase {
		return 1, -1
	}
	k := (x - s.phase) / soakBurstEvery
	end = s.phase + k*soakBurstEvery + soakBurstLen
	if x < end {
		return soakBurstFactor, end
	}
	return 1, end
}

// burstIn reports whether a burst overlaps the window (from, to].
func (s *soak) burstIn(from, to time.Duration) bool {
	for start := s.phase; start < to; start += soakBurstEvery {
		if start+soakBurstLen > from {
			return true
		}
	}
	return false
}

func (s *soak) burstFactor(x time.Duration) float64 {
	f, _ := s.burst(x)
	return f
}

// newGen builds and starts pool n: fresh channels (a channel serves one
// pool), the scheduler alternating.
func (s *soak) newGen(n int) *soakGen {
	g := &soakGen{s: s, n: n, workers: s.workers, settled: make(chan struct{})}
	g.pending.Store(1)
	g.settle = sync.OnceFunc(func() { close(g.settled) })
	b := &behavior{workers: s.workers, levels: make([][]ch, soakLevels)}
	if s.sched == "highest-first" || s.sched == "" && n%2 == 0 {
		g.sched = "highest-first"
		b.sched = scheduler.HighestFirst()
	} else {
		g.sched, g.rr = "round-robin", 1
		b.sched = scheduler.RoundRobin(time.Millisecond, 500*time.Microsecond, 500*time.Microsecond, 500*time.Microsecond)
	}
	b.onPanic = func(key string, pe *smartpool.PanicError) {
		if p, ok := pe.Value.(soakPanic); ok {
			p.t.g.finish(p.t, soakPanicked)
			return
		}
		s.fail("pool %d: unexpected panic in %s: %v\n%s", n, key, pe.Value, pe.Stack)
	}
	// OnEnd records a drop as the task's outcome, and counts the other
	// endings, which the task and the panic handler record.
	onEnd := func(task smartpool.Task, o smartpool.Outcome) {
		t, ok := task.(*soakTask)
		switch {
		case !ok:
			s.fail("pool %d: OnEnd got a %T (%v)", n, task, o)
		case o == smartpool.DroppedOnClose || o == smartpool.DroppedLate:
			t.g.finish(t, soakDropped)
		case o.Dropped() || o < smartpool.Ran || o > smartpool.DroppedDisplaced:
			s.fail("pool %d: task %d ended %v", n, t.id, o)
		default:
			t.g.ends[o].Add(1)
		}
	}
	deadline := func(r *rand.Rand) time.Time {
		if r.IntN(100) < soakPastPct {
			return time.Now().Add(-time.Duration(r.Int64N(int64(time.Second))))
		}
		return time.Now().Add(time.Duration(r.Int64N(int64(20 * time.Millisecond))))
	}
	for _, sc := range s.layout {
		c := ch{key: sc.key, coc: sc.coc, followup: sc.followup, onEnd: onEnd}
		pool := func() *smartpool.Pool[string] { return g.pool.Pool() }
		byKey := func(t *soakTask, _ *rand.Rand) error { return pool().SubmitTask(sc.key, t) }
		switch sc.kind {
		case "fifo":
			c.c = channels.NewFIFO()
			g.subs = append(g.subs, byKey)
		case "deadline", "droplate":
			var opts []channels.DeadlineOption
			if sc.kind == "droplate" {
				opts = append(opts, channels.DropLate()) // ChannelParams.OnEnd records every drop
			}
			d := channels.NewDeadline(opts...)
			if sc.kind == "droplate" {
				g.late = append(g.late, d)
			}
			c.c = d
			g.subs = append(g.subs, func(t *soakTask, r *rand.Rand) error { return d.SubmitTask(deadline(r), t) })
		case "multififo":
			c.c = channels.NewMulti(4, channels.NewFIFO)
			g.subs = append(g.subs, byKey)
		case "multideadline":
			m := channels.NewMulti(3, func() *channels.Deadline { return channels.NewDeadline() })
			c.c = m
			g.subs = append(g.subs, func(t *soakTask, r *rand.Rand) error { return m.Next().SubmitTask(deadline(r), t) })
		}
		b.levels[sc.level] = append(b.levels[sc.level], c)
	}
	o, err := smartpool.New[string](b)
	if err != nil {
		s.t.Fatalf("New pool %d: %v", n, err)
	}
	g.pool = o
	s.pools++
	return g
}

// produce is one open-loop producer: Poisson arrivals at rate/producers
// (times the burst factor), paced by a ticker; a late tick submits every
// arrival that is due, so the load does not depend on how the pool keeps up.
func (s *soak) produce(p int, seed uint64, stop <-chan struct{}) {
	r := rand.New(rand.NewPCG(seed, uint64(p)))
	tick := time.NewTicker(soakTick)
	defer tick.Stop()
	perSec := s.rate / soakProducers
	next := s.since()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		now := s.since()
		if next > now {
			continue
		}
		g := s.cur.Load()
		g.mu.RLock()
		for g.retired {
			g.mu.RUnlock()
			g = s.cur.Load()
			g.mu.RLock()
		}
		for ; next <= now; next += time.Duration(r.ExpFloat64() / (perSec * s.burstFactor(next)) * float64(time.Second)) {
			s.submit(g, r)
		}
		g.mu.RUnlock()
	}
}

// submit makes one task and submits it to g, which the caller holds live.
func (s *soak) submit(g *soakGen, r *rand.Rand) {
	ci := s.pick(r)
	t := &soakTask{
		g:     g,
		id:    s.nextID.Add(1),
		ch:    ci,
		level: s.layout[ci].level,
		cost:  min(soakMaxCost, time.Duration(r.ExpFloat64()*float64(soakMeanCost))),
	}
	if r.IntN(100) < soakYieldPct {
		t.yields = 1 + r.IntN(3)
	}
	t.panics = r.IntN(soakPanicPer) == 0
	// Counted before the submit: the task may end before Submit returns.
	g.pending.Add(1)
	g.accepted.Add(1)
	s.accepted.add(t.id, 1)
	t.submitted = s.since()
	if err := g.subs[ci](t, r); err != nil {
		// The pool is live while the producer holds g.mu: nothing may refuse.
		s.fail("pool %d: submit to %s refused: %v", g.n, s.layout[ci].key, err)
		g.pending.Add(-1)
		g.accepted.Add(^uint64(0))
		s.accepted.add(t.id, -1)
	}
}

// counts reads g's ledger, outcomes first, so that accepted minus finished
// is never under the truth.
func (g *soakGen) counts() (out [soakOutcomes]uint64, accepted uint64) {
	for i := range out {
		out[i] = g.out[i].Load()
	}
	return out, g.accepted.Load()
}

func soakSum(out [soakOutcomes]uint64) uint64 {
	var n uint64
	for _, v := range out {
		n += v
	}
	return n
}

func (g *soakGen) droppedLate() uint64 {
	var n uint64
	for _, d := range g.late {
		n += d.Stats().DroppedLate
	}
	return n
}

// checkLive checks the live pool's ledger against its Stats. Tasks that
// recorded their outcome but are not yet counted by the pool (or the other
// way round, for panics: the pool counts an attached task's panic before
// the handler runs) each hold a worker, so the two differ by at most
// Workers.
func (s *soak) checkLive(g *soakGen) (inPool uint64, errs []string) {
	before, _ := g.counts()
	st := g.pool.Pool().Stats()
	late := g.droppedLate()
	after, accepted := g.counts()
	tot := st.Total()
	within := func(name string, pool, lo, hi, slack uint64) {
		if pool+slack < lo || pool > hi+slack {
			errs = append(errs, fmt.Sprintf("pool %d: Stats %s = %d, ledger %d..%d (slack %d)", g.n, name, pool, lo, hi, slack))
		}
	}
	w := uint64(g.workers)
	within("Ran", tot.Ran, before[soakRan], after[soakRan], w)
	within("Panicked", tot.Panicked, before[soakPanicked], after[soakPanicked], w)
	// DropLate counts up to a batch of 16 late tasks before it hands them
	// to the callback.
	// A live pool drops only late tasks. The pool counts a drop before
	// OnEnd records it; the channel counts it late after both.
	within("Dropped", tot.Dropped, before[soakDropped], after[soakDropped], 16*w)
	within("DroppedLate", late, before[soakDropped], after[soakDropped], 16*w)
	if tot.Goexited != 0 {
		errs = append(errs, fmt.Sprintf("pool %d: live pool goexited %d", g.n, tot.Goexited))
	}
	fin := soakSum(after)
	if fin > accepted {
		errs = append(errs, fmt.Sprintf("pool %d: %d tasks finished, %d accepted", g.n, fin, accepted))
		return 0, errs
	}
	return accepted - fin, errs
}

// retire stops producers using g, closes its pool and checks the closed
// pool's ledger exactly, folding it into the run's totals.
func (s *soak) retire(g *soakGen) {
	t := s.t
	g.mu.Lock()
	g.retired = true
	g.mu.Unlock()
	r := closeWithin(t, g.pool, 2*long)
	if g.pending.Add(-1) == 0 { // the live pool's share: see pending
		g.settle()
	}
	// Tasks of dropping channels that were suspended at Close end after it
	// returned, when their wait does; Close does not wait for them.
	select {
	case <-g.settled:
	case <-time.After(long):
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		t.Fatalf("pool %d: %d tasks without an outcome %v after Close\n%s", g.n, g.pending.Load(), long, buf.String())
	}
	out, accepted := g.counts()
	// The pool counts such a late-dropped task right after the task's own
	// deferred calls ran; wait out that instant.
	eventually(t, func() bool { return g.pool.Pool().Stats().Total().Dropped >= out[soakDropped] })
	final := g.pool.Pool().Stats().Total()
	rt := r.Total()
	var errs []string
	if fin := soakSum(out); fin != accepted {
		errs = append(errs, fmt.Sprintf("accepted %d, finished %d", accepted, fin))
	}
	if rt.Ran != out[soakRan] || rt.Panicked != out[soakPanicked] || rt.Goexited != 0 {
		errs = append(errs, fmt.Sprintf("report ran %d panicked %d goexited %d, ledger ran %d panicked %d", rt.Ran, rt.Panicked, rt.Goexited, out[soakRan], out[soakPanicked]))
	}
	if final.Dropped != out[soakDropped] || rt.Dropped > final.Dropped {
		errs = append(errs, fmt.Sprintf("dropped: report %d, Stats after settling %d, ledger %d", rt.Dropped, final.Dropped, out[soakDropped]))
	}
	late := g.droppedLate()
	if late > out[soakDropped] {
		errs = append(errs, fmt.Sprintf("DropLate counted %d, more than the %d drops of the ledger", late, out[soakDropped]))
	}
	// OnEnd's books: a task's OnEnd follows its own record of its run (and
	// the panic handler's of its panic), so wait out that instant.
	endsMatch := func() bool {
		return g.ends[smartpool.Ran].Load() == out[soakRan] && g.ends[smartpool.Panicked].Load() == out[soakPanicked]
	}
	for until := time.Now().Add(long); !endsMatch() && time.Now().Before(until); {
		runtime.Gosched()
	}
	if !endsMatch() || g.ends[smartpool.Goexited].Load() != 0 || g.ends[smartpool.Cancelled].Load() != 0 {
		errs = append(errs, fmt.Sprintf("OnEnd: ran %d panicked %d goexited %d cancelled %d, ledger ran %d panicked %d", g.ends[smartpool.Ran].Load(),
			g.ends[smartpool.Panicked].Load(), g.ends[smartpool.Goexited].Load(), g.ends[smartpool.Cancelled].Load(), out[soakRan], out[soakPanicked]))
	}
	if rt.Queued != 0 || r.Suspended != 0 || g.pool.Pool().State() != smartpool.Closed {
		errs = append(errs, fmt.Sprintf("report queued %d suspended %d, state %v", rt.Queued, r.Suspended, g.pool.Pool().State()))
	}
	if len(errs) > 0 {
		t.Errorf("pool %d (%s) ledger after Close:\n  %s", g.n, g.sched, strings.Join(errs, "\n  "))
	}
	for i, v := range out {
		s.totals[i] += v
	}
	s.lateTotal += late
	s.acceptedN += accepted
	t.Logf("soak %5.1fs pool %d (%s) closed: accepted %d = ran %d + panicked %d + dropped %d (late %d of them); report dropped %d, %d more dropped after Close returned (suspended in Yield)",
		s.since().Seconds(), g.n, g.sched, accepted, out[soakRan], out[soakPanicked], out[soakDropped], late, rt.Dropped, final.Dropped-rt.Dropped)
}

// soakQueued lists the channels of g's pool that hold tasks.
func soakQueued(g *soakGen) string {
	var b strings.Builder
	for _, c := range g.pool.Pool().Stats().Channels {
		if c.Queued > 0 {
			fmt.Fprintf(&b, "%s=%d ", c.Key, c.Queued)
		}
	}
	return b.String()
}

// soakCPU reads the runtime's estimates of CPU time since the start, in
// seconds: Go code, garbage collection, idle Ps, and all available.
func soakCPU() (user, gc, idle, total float64) {
	sample := []metrics.Sample{
		{Name: "/cpu/classes/user:cpu-seconds"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/cpu/classes/idle:cpu-seconds"},
		{Name: "/cpu/classes/total:cpu-seconds"},
	}
	metrics.Read(sample)
	return sample[0].Value.Float64(), sample[1].Value.Float64(), sample[2].Value.Float64(), sample[3].Value.Float64()
}

// soakGoroutineBytes measures the live heap that a goroutine leaves behind
// for the rest of the process: the runtime keeps the descriptor of every
// goroutine it ever ran at once, for reuse, so the live heap follows the
// goroutine high-water mark, which bursts of suspended tasks raise. It runs
// 2,048 goroutines at once, more than the process ran before, and returns
// the heap each added and the goroutine count they raised the mark to.
func soakGoroutineBytes(t *testing.T) (perG float64, hw int) {
	const n = 2048
	before := runtime.NumGoroutine()
	live := soakLiveHeap()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { <-stop })
	}
	hw = runtime.NumGoroutine()
	close(stop)
	wg.Wait()
	eventually(t, func() bool { return runtime.NumGoroutine() <= before })
	if after := soakLiveHeap(); after > live {
		perG = float64(after-live) / n
	}
	return perG, hw
}

// soakLiveHeap returns the live heap after a forced GC.
func soakLiveHeap() uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

func soakEnv(t *testing.T) (d time.Duration, rate float64, workers int, sched string) {
	v := os.Getenv("SMARTPOOL_SOAK")
	if v == "" {
		t.Skip("soak: set SMARTPOOL_SOAK to a duration (60s, 30m) to run it")
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 20*time.Second {
		t.Fatalf("SMARTPOOL_SOAK=%q: want a duration of at least 20s", v)
	}
	rate = 20_000
	if v := os.Getenv("SMARTPOOL_SOAK_RATE"); v != "" {
		if rate, err = strconv.ParseFloat(v, 64); err != nil || rate <= 0 {
			t.Fatalf("SMARTPOOL_SOAK_RATE=%q: want a positive number", v)
		}
	}
	workers = runtime.GOMAXPROCS(0)
	if v := os.Getenv("SMARTPOOL_SOAK_WORKERS"); v != "" {
		if workers, err = strconv.Atoi(v); err != nil || workers <= 0 {
			t.Fatalf("SMARTPOOL_SOAK_WORKERS=%q: want a positive integer", v)
		}
	}
	switch sched = os.Getenv("SMARTPOOL_SOAK_SCHED"); sched {
	case "", "highest-first", "round-robin":
	default:
		t.Fatalf("SMARTPOOL_SOAK_SCHED=%q: want highest-first or round-robin", sched)
	}
	return d, rate, workers, sched
}

func TestSoak_Mixed(t *testing.T) {
	d, rate, workers, sched := soakEnv(t)
	defer goleak.VerifyNone(t)
	rng := seeded(t)
	replaceEvery := min(soakReplace, d/3)
	perG, hw := soakGoroutineBytes(t)
	baseline := runtime.NumGoroutine()
	s := &soak{t: t, epoch: time.Now(), rate: rate, sched: sched, workers: workers, layout: soakLayout(),
		phase: (replaceEvery + 5*time.Second) % soakBurstEvery}
	s.follow, s.byLevel = soakFollow(s.layout), soakByLevel(s.layout)
	t.Logf("soak: %v at %.0f tasks/s (x%d bursts of %v every %v), %d producers, %d workers, pool replaced every %v",
		d, rate, soakBurstFactor, soakBurstLen, soakBurstEvery, soakProducers, workers, replaceEvery)
	s.cur.Store(s.newGen(0))

	stop := make(chan struct{})
	var producers sync.WaitGroup
	stopProducers := sync.OnceFunc(func() { close(stop); producers.Wait() })
	defer stopProducers() // also on a Fatal
	for p := range soakProducers {
		seed := rng.Uint64()
		producers.Go(func() { s.produce(p, seed, stop) })
	}

	check := time.NewTicker(soakCheckEvery)
	defer check.Stop()
	// The goroutine high-water mark, for the heap check; peaks of
	// suspended tasks last seconds, so a sample every 100 ms sees them.
	sample := time.NewTicker(100 * time.Millisecond)
	defer sample.Stop()
	nextReplace := replaceEvery
	replace := time.NewTimer(replaceEvery)
	defer replace.Stop()
	end := time.NewTimer(d + soakCheckEvery/100) // after the last check
	defer end.Stop()
	// F6: the live heap is read after each replacement (the old pool closed
	// and unreachable). The value after warm-up is the first reading after
	// the first burst.
	var heaps []uint64
	warm, hwWarm := -1, 0
	maxG := 0
	lastCheck, lastAccepted := s.since(), uint64(0)
	lastBehind := false // the last check found a round-robin pool past capacity (see "Level-0 latency")
	var lastCPU [4]float64
	lastCPU[0], lastCPU[1], lastCPU[2], lastCPU[3] = soakCPU()
run:
	for {
		select {
		case <-end.C:
			break run
		case <-sample.C:
			hw = max(hw, runtime.NumGoroutine())
		case <-replace.C:
			now := s.since()
			if _, end := s.burst(now); end >= 0 && now < end+soakBurstClear {
				replace.Reset(end + soakBurstClear - now)
				continue
			}
			for nextReplace <= now {
				nextReplace += replaceEvery
			}
			replace.Reset(nextReplace - now)
			if now+replaceEvery/2 > d {
				continue // the run ends first: no pool for a moment
			}
			old := s.cur.Load()
			s.cur.Store(s.newGen(old.n + 1))
			s.retire(old)
			heaps = append(heaps, soakLiveHeap())
			hw = max(hw, runtime.NumGoroutine())
			if _, end := s.burst(s.since()); warm < 0 && end >= 0 {
				warm, hwWarm = len(heaps)-1, hw
			}
			t.Logf("soak %5.1fs live heap after GC %.2f MB", s.since().Seconds(), float64(heaps[len(heaps)-1])/(1<<20))
		case <-check.C:
			now := s.since()
			window := now - lastCheck
			g := s.cur.Load()
			inPool, errs := s.checkLive(g)
			// Run totals: closed pools plus the live one.
			out, acc := g.counts()
			for i := range out {
				out[i] += s.totals[i]
			}
			acc += s.acceptedN
			ng := runtime.NumGoroutine()
			susp := s.suspended.Load()
			limit := baseline + g.workers + soakProducers + int(susp) + g.workers + soakGoroutineSlack
			maxG = max(maxG, ng)
			hw = max(hw, ng)
			if ng > limit {
				errs = append(errs, fmt.Sprintf("%d goroutines, limit %d (baseline %d + workers %d + producers %d + suspended %d + slack %d)",
					ng, limit, baseline, g.workers, soakProducers, susp, g.workers+soakGoroutineSlack))
			}
			var p99 [soakLevels]time.Duration
			var n0 uint64
			for l := range soakLevels {
				snap := s.lat[l].take(&s.totalLat[l])
				var n uint64
				p99[l], n = soakPercentile(&snap, 0.99)
				if l == 0 {
					n0 = n
				}
			}
			util0 := float64(s.held[0].Swap(0)) / (float64(window) * float64(g.workers))
			for l := 1; l < soakLevels; l++ {
				s.held[l].Store(0)
			}
			// See "Level-0 latency" at the top of the file.
			burst := s.burstIn(lastCheck, now)
			asserted := util0 < soakHalf && !burst && !lastBehind
			if asserted && p99[0] >= soakLatency {
				errs = append(errs, fmt.Sprintf("level-0 p99 start latency %v over %d tasks (level 0 held the workers %.0f%% of the time), want < %v", p99[0], n0, 100*util0, soakLatency))
			}
			why := ""
			switch {
			case burst:
				why = ", burst: not asserted"
			case lastBehind:
				why = ", round-robin past capacity at the start: not asserted"
			case !asserted:
				why = ", not asserted"
			}
			var cpu [4]float64
			cpu[0], cpu[1], cpu[2], cpu[3] = soakCPU()
			share := func(i int) float64 { return 100 * (cpu[i] - lastCPU[i]) / max(cpu[3]-lastCPU[3], 1e-9) }
			t.Logf("soak %5.1fs pool %d (%s): %.0f tasks/s; accepted %d = ran %d + panicked %d + dropped %d (late %d of them) + in pool %d; p99 start l0 %v (%d tasks, util %.0f%%%s) l1 %v l2 %v l3 %v; goroutines %d <= %d, suspended %d; cpu go %.0f%% gc %.0f%% idle %.0f%%",
				now.Seconds(), g.n, g.sched, float64(acc-lastAccepted)/window.Seconds(), acc, out[soakRan], out[soakPanicked], out[soakDropped], s.lateTotal+g.droppedLate(), inPool,
				p99[0], n0, 100*util0, why, p99[1], p99[2], p99[3], ng, limit, susp,
				share(0), share(1), share(2))
			lastCheck, lastAccepted, lastCPU = now, acc, cpu
			lastBehind = g.sched == "round-robin" && inPool > uint64(s.rate*soakBehind.Seconds())
			if f := s.failed(); len(f) > 0 {
				errs = append(errs, f...)
			}
			if len(errs) > 0 {
				// Carry on: later windows tell whether it was a moment or a trend.
				t.Errorf("soak %5.1fs:\n  %s\n  queued by channel: %s", now.Seconds(), strings.Join(errs, "\n  "), soakQueued(g))
			}
		}
	}

	elapsed := s.since()
	stopProducers()
	s.retire(s.cur.Load())
	s.cur.Store(nil) // let the last pool go before the end's heap reading
	for l := range soakLevels {
		s.lat[l].take(&s.totalLat[l])
	}
	if f := s.failed(); len(f) > 0 {
		t.Errorf("soak: failures off the test goroutine:\n  %s", strings.Join(f, "\n  "))
	}
	// Checksum ledger: every accepted ID finished exactly once.
	if s.accepted.n.Load() != s.finished.n.Load() || s.accepted.sum.Load() != s.finished.sum.Load() || s.accepted.xor.Load() != s.finished.xor.Load() {
		t.Errorf("soak: checksums differ: accepted %v, finished %v", &s.accepted, &s.finished)
	}
	if s.acceptedN != soakSum(s.totals) || s.acceptedN != s.accepted.n.Load() {
		t.Errorf("soak: accepted %d (checksum count %d), finished %d", s.acceptedN, s.accepted.n.Load(), soakSum(s.totals))
	}
	// A closed pool's goroutines that outlive its Close (spare carriers end
	// once they see it finished) keep its memory live until they end.
	eventually(t, func() bool { return runtime.NumGoroutine() <= baseline })
	endHeap := soakLiveHeap()
	var heapMsg string
	if warm >= 0 {
		w, last := heaps[warm], heaps[len(heaps)-1]
		// Descriptors of goroutines beyond the count reached by warm-up are
		// the runtime's, not the pool's: allowed on top of the 10%.
		extra := perG * float64(max(hw-hwWarm, 0))
		heapMsg = fmt.Sprintf("live heap after GC: %.2f MB after warm-up (replacement %d), %.2f MB at the last replacement, %.2f MB at the end; goroutine high-water %d at warm-up, %d at the end (%.0f B each: %.2f MB allowed on top)",
			float64(w)/(1<<20), warm+1, float64(last)/(1<<20), float64(endHeap)/(1<<20), hwWarm, hw, perG, extra/(1<<20))
		limit := uint64(float64(w)*(1+soakHeapSlack) + extra)
		if last > limit || endHeap > limit {
			t.Errorf("soak: heap grew more than %.0f%%: %s", 100*soakHeapSlack, heapMsg)
		}
	}
	var p99s []string
	for l := range soakLevels {
		p, n := soakPercentile(&s.totalLat[l], 0.99)
		p999, _ := soakPercentile(&s.totalLat[l], 0.999)
		p99s = append(p99s, fmt.Sprintf("l%d %v (p99.9 %v, %d tasks)", l, p, p999, n))
	}
	var l0 []string
	for i, name := range []string{"highest-first", "round-robin"} {
		c := s.lat0[i].take(nil)
		p, n := soakPercentile(&c, 0.99)
		l0 = append(l0, fmt.Sprintf("%s %v (%d tasks)", name, p, n))
	}
	tt := s.totals
	t.Logf("soak done: %v, %d pools, %d tasks (%.0f/s): ran %d, panicked %d, dropped %d (late %d of them); p99 submit-to-start %s; level-0 p99 by scheduler: %s; goroutines max %d (baseline %d); %s",
		elapsed.Round(time.Millisecond), s.pools, s.acceptedN, float64(s.acceptedN)/elapsed.Seconds(),
		tt[soakRan], tt[soakPanicked], tt[soakDropped], s.lateTotal, strings.Join(p99s, ", "), strings.Join(l0, ", "), maxG, baseline, heapMsg)
}
