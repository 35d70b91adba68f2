package benchmarks_test

import (
	"context"
	"log/slog"
	"runtime"
	"testing"

	"github.com/alitto/pond/v2"
	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/sourcegraph/conc/pool"
)

// BenchmarkResultGroup: one group of 100 tasks returning an int per op,
// submitted from outside the pool and waited for, its values in submission
// order (conc's: in the order they ended): smartpool's Results on a pool of GOMAXPROCS workers, pond v2's
// result group on a result pool of as many, conc's ResultPool with as many
// goroutines at most (a fresh pool per op: conc's pools are single use).
func BenchmarkResultGroup(b *testing.B) {
	const tasks = 100
	workers := runtime.GOMAXPROCS(0)
	ctx := context.Background()
	perTask := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tasks), "ns/task")
	}
	check := func(b *testing.B, vals []int, err error) {
		if err != nil || len(vals) != tasks || vals[tasks-1] != tasks-1 {
			b.Fatalf("%d values, error %v; want %d in submission order", len(vals), err, tasks)
		}
	}
	b.Run("smartpool", func(b *testing.B) {
		owned, err := smartpool.New(smartpool.Levels[string]{{{Key: "a", Channel: channels.NewFIFO()}}}.
			With(smartpool.Config[string]{Workers: workers, Logger: slog.New(slog.DiscardHandler)}))
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _, _ = owned.Close(ctx) }()
		p := owned.Pool()
		b.ReportAllocs()
		for b.Loop() {
			g := smartpool.NewResults[int](ctx, p)
			for i := range tasks {
				g.Go("a", func(context.Context) (int, error) { return i, nil })
			}
			vals, err := g.Wait(ctx)
			check(b, vals, err)
		}
		perTask(b)
	})
	b.Run("pond", func(b *testing.B) {
		p := pond.NewResultPool[int](workers)
		defer p.StopAndWait()
		b.ReportAllocs()
		for b.Loop() {
			g := p.NewGroup()
			for i := range tasks {
				g.SubmitErr(func() (int, error) { return i, nil })
			}
			vals, err := g.Wait()
			check(b, vals, err)
		}
		perTask(b)
	})
	b.Run("conc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			g := pool.NewWithResults[int]().WithErrors().WithMaxGoroutines(workers)
			for i := range tasks {
				g.Go(func() (int, error) { return i, nil })
			}
			vals, err := g.Wait()
			if err != nil || len(vals) != tasks { // in the order the tasks ended
				b.Fatalf("%d values, error %v", len(vals), err)
			}
		}
		perTask(b)
	})
}
