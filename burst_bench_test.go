package smartpool_test

import (
	"context"
	"sync"
	"testing"
)

// BenchmarkBurst: bursts of 64 empty tasks, each submitted once the
// previous burst ran, into a pool of 64 workers that is idle between
// bursts: the cost of waking many idle workers at once (each submit hands
// its task to an idle worker; before that rule, one wake-up chain), per
// task, and the wake-ups per task.
func BenchmarkBurst(b *testing.B) {
	const workers = 64
	o := benchPool(b, &behavior{workers: workers, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	var ran sync.WaitGroup
	task := func(context.Context) { ran.Done() }
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += workers {
		n := min(workers, b.N-i)
		ran.Add(n)
		for range n {
			if err := p.Submit("a", task); err != nil {
				b.Fatal(err)
			}
		}
		ran.Wait()
	}
	b.StopTimer()
	b.ReportMetric(float64(p.Stats().Wakeups)/float64(b.N), "wakeups/task")
}
