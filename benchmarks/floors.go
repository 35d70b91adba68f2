package benchmarks

import (
	"sync"
	"sync/atomic"
	"time"
)

// A floor is the cost of a primitive every pool is built from, measured in
// the same run so that each figure can be read against the physics under it.
type floor struct {
	name string
	run  func(n int) // n operations
	n    int         // operations per run at scale 1
}

func floors() []floor {
	return []floor{
		{"uncontended mutex lock+unlock", func(n int) {
			var mu sync.Mutex
			for range n {
				mu.Lock()
				//lint:ignore SA2001 the empty section is the point
				mu.Unlock()
			}
		}, 20_000_000},
		{"atomic add", func(n int) {
			var x atomic.Int64
			for range n {
				x.Add(1)
			}
		}, 20_000_000},
		{"buffered chan send+recv", func(n int) {
			c := make(chan int, 1)
			for i := range n {
				c <- i
				<-c
			}
		}, 10_000_000},
		{"go + WaitGroup per task", func(n int) {
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go wg.Done()
			}
			wg.Wait()
		}, 1_000_000},
	}
}

// floorRun times one run of f: ns per operation.
func floorRun(f floor, n int) []float64 {
	t := time.Now()
	f.run(n)
	return []float64{since(t) / float64(n)}
}
