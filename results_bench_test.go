package smartpool_test

import (
	"context"
	"testing"

	"github.com/smartpool-go/smartpool"
)

// BenchmarkResults: one group of 100 empty tasks per op, from outside the
// pool, through a Group (NewGroup, Go, Wait) and through a Results on the
// same workload, whose tasks also return a value: the cost of the values.
func BenchmarkResults(b *testing.B) {
	const tasks = 100
	perTask := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tasks), "ns/task")
	}
	ctx := context.Background()
	b.Run("Group", func(b *testing.B) {
		p := benchPool(b, &behavior{levels: [][]ch{{fifo("a")}}}).Pool()
		fn := func(context.Context) error { return nil }
		b.ReportAllocs()
		for b.Loop() {
			g := smartpool.NewGroup(ctx, p)
			for range tasks {
				g.Go("a", fn)
			}
			if err := g.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
		perTask(b)
	})
	b.Run("Results", func(b *testing.B) {
		p := benchPool(b, &behavior{levels: [][]ch{{fifo("a")}}}).Pool()
		fn := func(context.Context) (int, error) { return 1, nil }
		b.ReportAllocs()
		for b.Loop() {
			g := smartpool.NewResults[int](ctx, p)
			for range tasks {
				g.Go("a", fn)
			}
			vals, err := g.Wait(ctx)
			if err != nil || len(vals) != tasks || vals[tasks-1] != 1 {
				b.Fatal(len(vals), err)
			}
		}
		perTask(b)
	})
}
