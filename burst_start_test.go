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
// the submits return, k up to the processors the pool saw at New: each
// submit hands a task to the next idle worker, whether it is parked or not
// created yet. It runs on one processor in a bubble, so that a woken worker
// does not run before the test goroutine blocks: what started was handed
// over by the submits themselves.
func TestBurst_EveryIdleWorkerStartsATask(t *testing.T) {
	const workers, burst = 5, 20
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, parkedFirst := range []bool{false, true} {
		name := map[bool]string{false: "workers not created yet", true: "workers parked"}[parkedFirst]
		t.Run("dropping FIFO closed at once/"+name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				jobs := channels.NewFIFO()
				o := newWithProcs(t, workers, &behavior{workers: workers, idle: -1, levels: [][]ch{{{key: "jobs", c: jobs}}}})
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
			o := newWithProcs(t, workers, &behavior{workers: workers, idle: -1, levels: [][]ch{{{key: "b", c: b, coc: true}}}})
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

// Past the processors, a burst's submits hand over no more tasks: with 5
// idle workers and 2 processors at New, 2 tasks start with the submits and
// the rest wait for the wake-up chain. The chain takes tasks too if a woken
// worker runs during the burst (the test's goroutine may be preempted, more
// so under -race on a busy machine), so the burst is tried until one ran
// undisturbed: without the bound, every submit up to the fifth would hand
// its task over, and no burst would leave more than 15 queued.
func TestBurst_BoundedByProcessors(t *testing.T) {
	const workers, procs, burst, tries = 5, 2, 20, 20
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var queued []int
	for range tries {
		synctest.Test(t, func(t *testing.T) {
			jobs := channels.NewFIFO()
			o := newWithProcs(t, procs, &behavior{workers: workers, idle: -1, levels: [][]ch{{{key: "jobs", c: jobs, coc: true}}}})
			g := newGate()
			for i := range burst {
				require.NoError(t, jobs.Submit(g.task(fmt.Sprint(i))))
			}
			queued = append(queued, jobs.Len())
			close(g.release)
			r, err := o.Close(context.Background())
			require.NoError(t, err)
			require.Equal(t, uint64(burst), r.Total().Ran)
		})
		if queued[len(queued)-1] == burst-procs {
			break
		}
	}
	for _, n := range queued {
		require.GreaterOrEqual(t, n, burst-workers, "queued after a burst: %v", queued)
	}
	require.Equal(t, burst-procs, queued[len(queued)-1], "queued after the burst: one task handed per processor (tries: %v)", queued)
}

// newWithProcs starts a pool of b with GOMAXPROCS procs while New runs (the
// pool bounds a burst's hand-overs by it), then gives back the one
// processor the burst tests run on.
func newWithProcs(t *testing.T, procs int, b *behavior) *smartpool.OwnedPool[string] {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	o, err := smartpool.New[string](b)
	require.NoError(t, err)
	return o
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
