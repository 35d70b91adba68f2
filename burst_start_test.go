package smartpool_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// A burst of submits to a pool with k idle workers starts k tasks before
// the submits return: each submit hands a task to the next idle worker,
// whether it is parked or not created yet. It runs on one processor in a
// bubble, so that a woken worker does not run before the test goroutine
// blocks: what started was handed over by the submits themselves.
func TestBurst_EveryIdleWorkerStartsATask(t *testing.T) {
	const workers, burst = 5, 20
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, parkedFirst := range []bool{false, true} {
		name := map[bool]string{false: "workers not created yet", true: "workers parked"}[parkedFirst]
		t.Run("dropping FIFO closed at once/"+name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				jobs := channels.NewFIFO()
				o, err := smartpool.New[string](&behavior{workers: workers, idle: -1, levels: [][]ch{{{key: "jobs", c: jobs}}}})
				require.NoError(t, err)
				if parkedFirst {
					parkAll(t, o, jobs, workers)
				}
				g := newGate()
				for i := range burst {
					require.NoError(t, jobs.Submit(g.task(fmt.Sprint(i))))
				}
				require.Equal(t, burst-workers, jobs.Len(), "queued after the burst: the submits handed one task to each idle worker")
				closed := make(chan *smartpool.Report[string], 1)
				go func() {
					r, err := o.Close(context.Background())
					if err != nil {
						panic(err)
					}
					closed <- r
				}()
				released := false
				defer func() { // a failed check: let the pool close, or the bubble reports a deadlock
					if !released {
						close(g.release)
						<-closed
					}
				}()
				synctest.Wait() // Close began: it waits for the running tasks
				require.Len(t, g.started, workers, "tasks started when Close began")
				close(g.release)
				released = true
				r := <-closed
				before := uint64(0)
				if parkedFirst {
					before = workers
				}
				require.Equal(t, [2]uint64{before + workers, burst - workers}, [2]uint64{r.Total().Ran, r.Total().Dropped},
					"ran, dropped: each idle worker was handed a task of the burst")
			})
		})
	}
	t.Run("Bounded(3) as the only channel takes 3 + idle workers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := channels.NewBounded(3)
			o, err := smartpool.New[string](&behavior{workers: workers, idle: -1, levels: [][]ch{{{key: "b", c: b, coc: true}}}})
			require.NoError(t, err)
			g := newGate()
			for i := range 3 + workers {
				require.NoError(t, b.Submit(g.task(fmt.Sprint(i))), "submit %d", i)
			}
			require.ErrorIs(t, b.Submit(g.task("one too many")), smartpool.ErrFull)
			close(g.release)
			r, err := o.Close(context.Background())
			require.NoError(t, err)
			require.Equal(t, uint64(3+workers), r.Total().Ran)
		})
	})
}

// parkAll makes n workers exist and park: n tasks that each wait until all
// n run, then end.
func parkAll(t *testing.T, o *smartpool.OwnedPool[string], c *channels.FIFO, n int) {
	t.Helper()
	var all sync.WaitGroup
	all.Add(n)
	for range n {
		require.NoError(t, c.Submit(func(context.Context) { all.Done(); all.Wait() }))
	}
	synctest.Wait()
	created, parked, orphans := smartpool.WorkerCounts(o.Pool())
	require.Equal(t, [3]int{n, n, 0}, [3]int{created, parked, orphans}, "created, parked goroutines, orphans")
}
