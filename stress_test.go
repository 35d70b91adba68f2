package smartpool_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/scheduler"
	"github.com/stretchr/testify/require"
)

// mixed returns a behavior of 8 channels over 4 levels: FIFO, Deadline,
// Priority and a 4-way Multi, all complete-on-close unless drop is set for
// odd channels.
func mixed(workers int, dropOdd bool) (*behavior, []func(id int, t smartpool.Task) error) {
	f0, f1 := channels.NewFIFO(), channels.NewFIFO()
	d0, d1 := channels.NewDeadline(), channels.NewDeadline()
	p0 := channels.NewPriority()
	m0 := channels.NewMulti(4, channels.NewFIFO)
	f2, f3 := channels.NewFIFO(), channels.NewFIFO()
	cs := []ch{
		{key: "f0", c: f0}, {key: "d0", c: d0},
		{key: "p0", c: p0}, {key: "m0", c: m0},
		{key: "f1", c: f1}, {key: "d1", c: d1},
		{key: "f2", c: f2}, {key: "f3", c: f3},
	}
	for i := range cs {
		cs[i].coc = !dropOdd || i%2 == 0
	}
	b := &behavior{workers: workers, levels: [][]ch{cs[0:2], cs[2:4], cs[4:6], cs[6:8]}}
	now := time.Now()
	subs := []func(int, smartpool.Task) error{
		func(_ int, t smartpool.Task) error { return src(f0).Push(t, smartpool.Order{}) },
		func(id int, t smartpool.Task) error {
			return d0.SubmitTask(now.Add(time.Duration(id%1000)*time.Microsecond), t)
		},
		func(id int, t smartpool.Task) error { return p0.SubmitTask(id%7, t) },
		func(_ int, t smartpool.Task) error { return src(m0).Push(t, smartpool.Order{}) },
		func(_ int, t smartpool.Task) error { return src(f1).Push(t, smartpool.Order{}) },
		func(id int, t smartpool.Task) error { return d1.SubmitTask(now.Add(-time.Duration(id)), t) },
		func(_ int, t smartpool.Task) error { return src(f2).Push(t, smartpool.Order{}) },
		func(_ int, t smartpool.Task) error { return src(f3).Push(t, smartpool.Order{}) },
	}
	return b, subs
}

// B1 TestStress_ExactlyOnce: 8 producers, random channels over 4 levels,
// all complete-on-close: every task runs exactly once and the pool's
// counters agree with the ledger.
func TestStress_ExactlyOnce(t *testing.T) {
	for _, sched := range []scheduler.Scheduler{nil, scheduler.RoundRobin(time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond), scheduler.Weighted(4, 3, 2, 1)} {
		b, subs := mixed(4, false)
		b.sched = sched
		o := start(t, b)
		n := scale(100_000)
		l := newLedger()
		const producers = 8
		var wg sync.WaitGroup
		rng := seeded(t)
		seeds := make([]uint64, producers)
		for p := range seeds {
			seeds[p] = rng.Uint64()
		}
		for p := range producers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := seededFrom(seeds[p])
				for id := p; id < n; id += producers {
					k := r.IntN(len(subs))
					l.submitted(id, b.key(k), subs[k](id, l.task(id, nil)))
				}
			}()
		}
		wg.Wait()
		// Close drains what is still queued, up to n tasks: at the nightly's
		// 10^8 that takes minutes, so the bound grows with n.
		r := closeWithin(t, o, long+time.Duration(n)*5*time.Microsecond)
		l.requireBalanced(t, r)
		tot := r.Total()
		require.Equal(t, uint64(n), tot.Ran)
		require.Zero(t, tot.Queued+int(tot.Dropped+tot.Panicked+tot.Goexited))
	}
}

// B3 TestStress_ExactlyOnceAcrossShutdown: half COC, half DROP; Close at a
// random point: every accepted task ran or was dropped, once; COC ones ran;
// the ledger agrees with the report channel by channel.
func TestStress_ExactlyOnceAcrossShutdown(t *testing.T) {
	rng := seeded(t)
	for range 10 {
		b, subs := mixed(4, true)
		l := newLedger()
		for _, lv := range b.levels {
			for i := range lv {
				lv[i].onEnd = l.onEnd()
			}
		}
		o := start(t, b)
		n := scale(20_000)
		closeAt := n/10 + rng.IntN(n*8/10)
		closed := make(chan *smartpool.Report[string], 1)
		for id := range n {
			if id == closeAt {
				go func() { closed <- closeWithin(t, o, long) }()
			}
			k := rng.IntN(len(subs))
			l.submitted(id, b.key(k), subs[k](id, l.task(id, nil)))
		}
		r := <-closed
		l.requireBalanced(t, r)
		for _, c := range r.Channels {
			if c.CompleteOnClose {
				require.Zero(t, c.Dropped, "complete-on-close channel %q dropped tasks", c.Key)
			}
		}
	}
}

// B5 TestStress_NeverMoreThanTRunning, with every scheduler.
func TestStress_NeverMoreThanTRunning(t *testing.T) {
	for _, workers := range []int{1, 4, 8} {
		for _, sched := range []scheduler.Scheduler{nil, scheduler.RoundRobin(time.Millisecond, time.Millisecond), scheduler.Weighted(1, 1)} {
			b := &behavior{workers: workers, sched: sched, levels: [][]ch{{fifo("a")}, {fifo("b")}}}
			o := start(t, b)
			g := newGate()
			var live, peak atomic.Int32
			for i := range 1025 {
				submit(t, o, []string{"a", "b"}[i%2], func(context.Context) {
					n := live.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					if i < workers {
						g.started <- "x"
						<-g.release // hold the first T tasks until all T run at once
					}
					live.Add(-1)
				})
			}
			g.waitStarted(t, workers)
			close(g.release)
			closeWithin(t, o, long)
			require.EqualValues(t, workers, peak.Load(), "workers %d sched %T", workers, sched)
		}
	}
}

// B6 TestStress_ReentrantSubmit: tasks submit 3 children each to depth 6
// (1,093 tasks) into equal and higher levels; all run on 1 and 2 workers.
func TestStress_ReentrantSubmit(t *testing.T) {
	for _, workers := range []int{1, 2} {
		b := &behavior{workers: workers, levels: [][]ch{{fifo("hi")}, {fifo("lo")}}}
		o := start(t, b)
		var ran atomic.Int32
		done := make(chan struct{})
		var spawn func(depth int) func(context.Context)
		spawn = func(depth int) func(context.Context) {
			return func(context.Context) {
				if ran.Add(1) == 1093 {
					close(done)
				}
				if depth == 6 {
					return
				}
				for c := range 3 {
					_ = o.Pool().Submit([]string{"hi", "lo"}[c%2], spawn(depth+1))
				}
			}
		}
		submit(t, o, "lo", spawn(0))
		waitFor(t, done, "1,093 nested tasks")
		closeWithin(t, o, long)
	}
}

// B7 TestStress_NoLostWakeup: with every worker parked, a submit starts at
// once; repeated from 8 goroutines on 8 channels at the instant workers park.
func TestStress_NoLostWakeup(t *testing.T) {
	var lv []ch
	for i := range 8 {
		lv = append(lv, fifo(fmt.Sprint(i)))
	}
	b := &behavior{workers: 4, levels: [][]ch{lv}}
	o := start(t, b)
	rounds := scale(20_000) / 8
	done := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if err := o.Pool().Submit(fmt.Sprint(p), func(context.Context) { done <- struct{}{} }); err != nil {
					panic(err)
				}
				select {
				case <-done:
				case <-time.After(long):
					panic("lost wake-up: a task did not start within LONG")
				}
			}
		}()
	}
	wg.Wait()
	closeWithin(t, o, long)
}

// B8 TestStress_EveryWorkerServes: every worker runs at least one task.
func TestStress_EveryWorkerServes(t *testing.T) {
	const workers = 4
	b := &behavior{workers: workers, levels: [][]ch{{fifo("a")}}}
	o := start(t, b)
	var mu sync.Mutex
	seen := map[any]bool{}
	g := newGate()
	for range workers { // each worker must hold one of these at the same time
		submit(t, o, "a", func(ctx context.Context) {
			mu.Lock()
			seen[ctx] = true // a task's context is its worker's
			mu.Unlock()
			g.task("x")(ctx)
		})
	}
	g.waitStarted(t, workers)
	close(g.release)
	for range scale(100_000) {
		submit(t, o, "a", func(context.Context) {})
	}
	closeWithin(t, o, long)
	require.Len(t, seen, workers)
}

// F5 TestLeak_NoTaskRetention: no task closure is retained after it ran, was
// dropped or panicked, while the pool is still open.
func TestLeak_NoTaskRetention(t *testing.T) {
	b := &behavior{workers: 2, onPanic: func(string, *smartpool.PanicError) {},
		levels: [][]ch{{fifo("pin")}, {fifo("run")}, {{key: "drop", c: channels.NewFIFO()}}}}
	o := start(t, b)
	var ptrs []weak.Pointer[[4096]byte]
	track := func(kind string) func(context.Context) {
		payload := new([4096]byte)
		ptrs = append(ptrs, weak.Make(payload))
		return func(context.Context) {
			payload[0]++
			if kind == "panic" {
				panic("retention test")
			}
		}
	}
	for range 100 {
		submit(t, o, "run", track("run"))
		submit(t, o, "run", track("panic"))
	}
	eventually(t, func() bool { return o.Pool().Stats().Total().Finished() == 200 })
	g := newGate()
	for range 2 {
		submit(t, o, "pin", g.task("pin"))
	}
	g.waitStarted(t, 2)
	for range 100 {
		submit(t, o, "drop", track("drop"))
	}
	closing := make(chan struct{})
	go func() { closeWithin(t, o, long); close(closing) }()
	eventually(t, func() bool { d, _ := o.Pool().Stats().Channel("drop"); return d.Dropped == 100 })
	alive := func() int {
		n := 0
		for _, p := range ptrs {
			if p.Value() != nil {
				n++
			}
		}
		return n
	}
	for i := 0; i < 10 && alive() > 0; i++ {
		runtime.GC()
	}
	require.Zero(t, alive(), "task closures retained")
	close(g.release)
	<-closing
}

// A batch submit to a pool whose workers all sleep wakes at most as many
// workers as it queued tasks (one wake-up, then each woken worker that
// finds more work passes the wake-up on).
func TestWake_BatchWakesOnlyTheShortfall(t *testing.T) {
	f := channels.NewFIFO()
	o := start(t, &behavior{workers: 8, levels: [][]ch{{{key: "a", c: f, coc: true}}}})
	for _, n := range []int{1, 2, 3} {
		// Whether or not all 8 workers are parked yet, a batch of n may
		// cause at most n wake-ups (a pool that woke every idle worker per
		// submit would show up to 8).
		before := o.Pool().Stats().Wakeups
		g := newGate()
		fns := make([]func(context.Context), n)
		for i := range fns {
			fns[i] = g.task("x")
		}
		require.NoError(t, f.SubmitBatch(fns...))
		g.waitStarted(t, n)
		woken := o.Pool().Stats().Wakeups - before
		close(g.release)
		require.LessOrEqual(t, woken, uint64(n), "batch of %d", n)
		eventually(t, func() bool { return o.Pool().Stats().Total().Ran == uint64(n*(n+1)/2) })
	}
}
