package smartpool_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// Micro-benchmarks of the pool's own paths. Tasks are pre-built func values,
// so the figures are the pool's cost, not a closure's allocation. Each
// benchmark run builds its pool before the timer starts and closes it in a
// cleanup (goleak checks in TestMain). For comparisons with other pools see
// benchmarks/ and BENCHMARKS.md.

// benchPool starts a pool for one run of a benchmark and closes it when the
// run ends.
func benchPool(b *testing.B, bh *behavior) *smartpool.OwnedPool[string] {
	b.Helper()
	bh.logger = slog.New(slog.DiscardHandler) // no log line inside a benchmark's result line
	bh.idle = -1                              // the tests' short IdleTimeout is for tests
	o, err := smartpool.New[string](bh)
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	b.Cleanup(func() { closeWithin(b, o, long) })
	return o
}

// produce submits n tasks from p goroutines, the i-th task through
// submit(i), and fails the benchmark on the first error.
func produce(b *testing.B, producers, n int, submit func(i int) error) {
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := p; i < n; i += producers {
				if err := submit(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// benchSubmitRun submits b.N empty tasks to the given keys, spread round
// robin, from the given number of producers, and waits for all to run.
func benchSubmitRun(b *testing.B, bh *behavior, keys []string, producers int) {
	o := benchPool(b, bh)
	p := o.Pool()
	var ran sync.WaitGroup
	task := func(context.Context) { ran.Done() }
	b.ReportAllocs()
	b.ResetTimer()
	ran.Add(b.N)
	produce(b, producers, b.N, func(i int) error { return p.Submit(keys[i%len(keys)], task) })
	ran.Wait()
	b.StopTimer()
	b.ReportMetric(float64(p.Stats().Wakeups)/float64(b.N), "wakeups/task")
}

// BenchmarkSubmitRun: empty tasks through one FIFO channel of a pool of
// GOMAXPROCS workers, from 1 and 8 producers.
func BenchmarkSubmitRun(b *testing.B) {
	for _, producers := range []int{1, 8} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			benchSubmitRun(b, &behavior{levels: [][]ch{{fifo("a")}}}, []string{"a"}, producers)
		})
	}
}

// BenchmarkSubmitRunControls: BenchmarkSubmitRun/producers=1 with each
// resource control switched on but never binding, to measure what it costs
// per task: compare with benchstat -col /control.
func BenchmarkSubmitRunControls(b *testing.B) {
	const never = 1 << 40
	controls := []struct {
		name string
		bh   func() *behavior
	}{
		{"none", func() *behavior { return &behavior{levels: [][]ch{{fifo("a")}}} }},
		{"maxRunning", func() *behavior {
			return &behavior{levels: [][]ch{{{key: "a", c: channels.NewFIFO(), coc: true, maxRunning: never}}}}
		}},
		{"maxInFlight", func() *behavior {
			return &behavior{levels: [][]ch{{{key: "a", c: channels.NewFIFO(), coc: true, maxInFlight: never, followup: "r"}, fifo("r")}}}
		}},
		{"limit", func() *behavior { return &behavior{limit: never, levels: [][]ch{{fifo("a")}}} }},
		{"bounded", func() *behavior {
			return &behavior{levels: [][]ch{{{key: "a", c: channels.NewBounded(never), coc: true}}}}
		}},
		{"spare", func() *behavior { // room for channels added at run time, never used
			return &behavior{spare: []int{4}, levels: [][]ch{{fifo("a")}}}
		}},
	}
	for _, c := range controls {
		b.Run("control="+c.name, func(b *testing.B) { benchSubmitRun(b, c.bh(), []string{"a"}, 1) })
	}
}

// BenchmarkSubmitRunLevels: the same over 4 levels of one FIFO each, tasks
// spread round robin over the levels.
func BenchmarkSubmitRunLevels(b *testing.B) {
	keys := []string{"L0", "L1", "L2", "L3"}
	for _, producers := range []int{1, 8} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			bh := &behavior{}
			for _, k := range keys {
				bh.levels = append(bh.levels, []ch{fifo(k)})
			}
			benchSubmitRun(b, bh, keys, producers)
		})
	}
}

// BenchmarkPick: submit+run per task with many queues, tasks spread evenly
// over all of them; the cost must not grow with the number of queues. Tasks
// go straight to their FIFO's Submit, so no key lookup is measured.
func BenchmarkPick(b *testing.B) {
	cases := []struct{ levels, perLevel int }{{1, 1}, {1, 64}, {1, 4096}, {16, 256}}
	for _, c := range cases {
		name := fmt.Sprintf("queues=%d", c.perLevel)
		if c.levels > 1 {
			name = fmt.Sprintf("levels=%dx%d", c.levels, c.perLevel)
		}
		b.Run(name, func(b *testing.B) {
			bh := &behavior{}
			var fifos []*channels.FIFO
			for l := range c.levels {
				var lv []ch
				for q := range c.perLevel {
					f := channels.NewFIFO()
					fifos = append(fifos, f)
					lv = append(lv, ch{key: fmt.Sprintf("%d/%d", l, q), c: f, coc: true})
				}
				bh.levels = append(bh.levels, lv)
			}
			benchPool(b, bh)
			var ran sync.WaitGroup
			task := func(context.Context) { ran.Done() }
			b.ReportAllocs()
			b.ResetTimer()
			ran.Add(b.N)
			produce(b, 1, b.N, func(i int) error { return fifos[i%len(fifos)].Submit(task) })
			ran.Wait()
			b.StopTimer()
		})
	}
}

// BenchmarkYieldRoundTrip: one task on a 1-worker pool yields b.N times with
// an empty wait: suspend, re-enter through its channel, resume.
func BenchmarkYieldRoundTrip(b *testing.B) {
	o := benchPool(b, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	done := make(chan struct{})
	wait := func() {}
	b.ReportAllocs()
	b.ResetTimer()
	submit(b, o, "a", func(ctx context.Context) {
		for range b.N {
			smartpool.Yield(ctx, wait)
		}
		close(done)
	})
	<-done
	b.StopTimer()
}

// BenchmarkYieldRoundTripQueued: two tasks on a 1-worker pool yield in
// turn, b.N times in all, with an empty wait: each re-entry finds the other
// task's resumption queued, so it queues too (no idle worker to take), and
// the worker hands itself to the resumption it polls, a goroutine switch
// per yield.
func BenchmarkYieldRoundTripQueued(b *testing.B) {
	o := benchPool(b, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	var done sync.WaitGroup
	wait := func() {}
	b.ReportAllocs()
	b.ResetTimer()
	for range 2 {
		done.Add(1)
		submit(b, o, "a", func(ctx context.Context) {
			defer done.Done()
			for range b.N / 2 {
				smartpool.Yield(ctx, wait)
			}
		})
	}
	done.Wait()
	b.StopTimer()
}

// BenchmarkYieldRoundTripBackground is BenchmarkYieldRoundTrip with
// context.Background() passed to Yield: the task is found by its goroutine
// (the carrier registry) instead of its context.
func BenchmarkYieldRoundTripBackground(b *testing.B) {
	o := benchPool(b, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	done := make(chan struct{})
	wait := func() {}
	b.ReportAllocs()
	b.ResetTimer()
	submit(b, o, "a", func(context.Context) {
		for range b.N {
			smartpool.Yield(context.Background(), wait)
		}
		close(done)
	})
	<-done
	b.StopTimer()
	if o.Pool().Stats().Total().Yielded != 0 {
		b.Fatal("a task is still yielded")
	}
}

// BenchmarkFutureSubmitWait: Go(...).Wait from outside the pool, one at a
// time: a submit, a run, and a wake-up of the waiting goroutine.
func BenchmarkFutureSubmitWait(b *testing.B) {
	o := benchPool(b, &behavior{levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	fn := func(context.Context) (int, error) { return 1, nil }
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := goWait(ctx, p, "a", fn); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGroup: one Scope of 100 empty tasks per op, from outside the pool.
func BenchmarkGroup(b *testing.B) {
	const tasks = 100
	o := benchPool(b, &behavior{levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	fn := func(context.Context) error { return nil }
	body := func(g *smartpool.Group[string]) {
		for range tasks {
			g.Go("a", fn)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := smartpool.Scope(ctx, p, body); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tasks), "ns/task")
}

// BenchmarkDrain: the workers' side alone. b.N empty tasks are queued while
// every worker is held by a blocked task; the timer runs from their release
// until the backlog has run (1 worker: no contention; 2: two workers
// draining one FIFO).
func BenchmarkDrain(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			o := benchPool(b, &behavior{workers: workers, levels: [][]ch{{fifo("a")}}})
			g := newGate()
			for range workers {
				submit(b, o, "a", g.task("hold"))
			}
			g.waitStarted(b, workers)
			var ran sync.WaitGroup
			task := func(context.Context) { ran.Done() }
			ran.Add(b.N)
			for range b.N {
				submit(b, o, "a", task)
			}
			b.ReportAllocs()
			b.ResetTimer()
			close(g.release)
			ran.Wait()
			b.StopTimer()
		})
	}
}

// BenchmarkChunks: 2 workers run chunks of 64 empty tasks, each chunk
// submitted and waited for before the next, so a queue holds at most 64:
// the regime where batch polls apply. A FIFO batches; a Priority does not
// (see BatchPoller): compare with benchstat -col /channel to bound what
// batching a keyed channel could save.
func BenchmarkChunks(b *testing.B) {
	const chunk = 64
	for _, kind := range []string{"fifo", "priority"} {
		b.Run("channel="+kind, func(b *testing.B) {
			c := fifo("a")
			if kind == "priority" {
				c.c = channels.NewPriority()
			}
			p := benchPool(b, &behavior{workers: 2, levels: [][]ch{{c}}}).Pool()
			var ran sync.WaitGroup
			task := func(context.Context) { ran.Done() }
			b.ReportAllocs()
			for b.Loop() {
				ran.Add(chunk)
				for range chunk {
					if err := p.Submit("a", task); err != nil {
						b.Fatal(err)
					}
				}
				ran.Wait()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunk), "ns/task")
		})
	}
}

// BenchmarkNew: New and Close of an unused pool of one FIFO, by Workers.
func BenchmarkNew(b *testing.B) {
	for _, workers := range []int{2, smartpool.MaxWorkers} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				o, err := smartpool.New[string](&behavior{workers: workers, idle: -1, logger: slog.New(slog.DiscardHandler), levels: [][]ch{{fifo("a")}}})
				if err != nil {
					b.Fatal(err)
				}
				closeWithin(b, o, long)
			}
		})
	}
}
