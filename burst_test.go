package smartpool_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// Every submit of a burst is handed to an idle worker while idle workers
// remain (park.go): a Close of a dropping pool right after a burst of 20
// submits runs at least as many of them as there were idle workers, each
// handed over before its submit returned, and drops the others (or runs
// those a busy worker polled first). The pool runs on one processor in a
// synctest bubble, so no woken worker runs before Close has stopped
// admission unless the scheduler preempts the test goroutine; each idle
// state of the workers is played: not created yet, parked, and without a
// goroutine after IdleTimeout.
func TestBurst_CloseRightAfterBurstStartsOnePerIdleWorker(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const submits = 20
	for _, workers := range []int{5, submits} {
		for _, s := range idleStates {
			t.Run(fmt.Sprintf("workers=%d/%s", workers, s.name), func(t *testing.T) {
				for trial := range 20 {
					ran, dropped := burstThenClose(t, workers, submits, s.idle, s.state[0] == 1)
					require.GreaterOrEqual(t, ran, uint64(min(workers, submits)), "trial %d: tasks run", trial)
					require.Equal(t, uint64(submits), ran+dropped, "trial %d: ran + dropped", trial)
				}
			})
		}
	}
}

// burstThenClose submits n empty tasks to an idle pool of the given workers
// with one dropping FIFO, closes it at once and returns the report's counts.
// With warm, every worker is created first and left idle (parked, or without
// its goroutine after idle).
func burstThenClose(t *testing.T, workers, n int, idle time.Duration, warm bool) (ran, dropped uint64) {
	synctest.Test(t, func(t *testing.T) {
		o, err := smartpool.New[string](&behavior{workers: workers, idle: idle, levels: [][]ch{{{key: "drop", c: channels.NewFIFO()}}}})
		require.NoError(t, err)
		closed := false
		defer func() {
			if !closed { // a failed check: end the bubble's goroutines
				_, _ = o.Close(context.Background())
			}
		}()
		p := o.Pool()
		warmed := 0
		if warm { // one task per worker, all running at once: every worker is created
			var started sync.WaitGroup
			started.Add(workers)
			release := make(chan struct{})
			for range workers {
				submit(t, o, "drop", func(context.Context) { started.Done(); <-release })
			}
			started.Wait()
			close(release)
			time.Sleep(2 * time.Millisecond) // the bubble's clock: past IdleTimeout when it is 1 ms
			synctest.Wait()
			warmed = workers
			created, parked, orphans := smartpool.WorkerCounts(p)
			require.Equal(t, workers, created, "workers created")
			require.Equal(t, workers, parked+orphans, "workers idle")
		}
		var count atomic.Int64
		for range n {
			submit(t, o, "drop", func(context.Context) { count.Add(1) })
		}
		r, err := o.Close(context.Background())
		closed = true
		require.NoError(t, err)
		tot := r.Total()
		ran, dropped = tot.Ran-uint64(warmed), tot.Dropped
		require.Equal(t, ran, uint64(count.Load()), "ran as reported")
	})
	return ran, dropped
}

// A burst to an idle pool hands every task over, and the hand-off wakes no
// worker that finds nothing to do: Stats.Wakeups counts one wake-up per
// task handed over, never more than the tasks submitted.
func TestBurst_HandsEachSubmitOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		o, err := smartpool.New[string](&behavior{workers: 8, idle: -1, levels: [][]ch{{fifo("a")}}})
		require.NoError(t, err)
		p := o.Pool()
		g := newGate()
		for i := range 8 {
			submit(t, o, "a", g.task(fmt.Sprint(i)))
		}
		require.Equal(t, uint64(8), p.Stats().Wakeups, "one wake-up per submit of the burst")
		g.waitStarted(t, 8)
		close(g.release)
		_, err = o.Close(context.Background())
		require.NoError(t, err)
	})
}

// On a pool of n idle workers, a NewBounded(c) takes n tasks that run and c
// that wait: each TrySubmit of the burst hands its task to its own idle
// worker, so the channel fills only once every worker is busy.
func TestBurst_BoundedTakesOneTaskPerIdleWorker(t *testing.T) {
	const workers, capacity = 3, 2
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprintf("workers created=%v", warm), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := channels.NewBounded(capacity)
				o, err := smartpool.New[string](&behavior{workers: workers, idle: -1, levels: [][]ch{{{key: "b", c: b, coc: true}}}})
				require.NoError(t, err)
				g := newGate()
				if warm {
					w := newGate()
					for i := range workers {
						require.NoError(t, b.TrySubmit(w.task(fmt.Sprint(i))))
					}
					w.waitStarted(t, workers)
					close(w.release)
					synctest.Wait()
					_, parked, _ := smartpool.WorkerCounts(o.Pool())
					require.Equal(t, workers, parked, "parked workers")
				}
				for i := range workers + capacity {
					require.NoError(t, b.TrySubmit(g.task(fmt.Sprint(i))), "submit %d of %d", i, workers+capacity)
				}
				require.ErrorIs(t, b.TrySubmit(g.task("over")), smartpool.ErrFull)
				close(g.release)
				r, err := o.Close(context.Background())
				require.NoError(t, err)
				require.Equal(t, uint64(workers+capacity+btoi(warm)*workers), r.Total().Ran)
			})
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
