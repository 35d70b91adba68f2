package smartpool_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/stretchr/testify/require"
)

// A pool of MaxWorkers creates no worker until work arrives, and then only
// as many as the work keeps busy.
func TestWorkers_CreatedOnFirstNeed(t *testing.T) {
	o := start(t, &behavior{workers: smartpool.MaxWorkers, idle: -1, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	created, _, _ := smartpool.WorkerCounts(p)
	require.Zero(t, created, "New created workers before any work arrived")

	g := newGate()
	for range 3 {
		submit(t, o, "a", g.task("a"))
	}
	g.waitStarted(t, 3)
	require.Equal(t, 3, p.Stats().Busy)
	created, _, _ = smartpool.WorkerCounts(p)
	// Each wake-up creates at most one worker and each submit sends at
	// most one: at most one worker more than the tasks, found idle.
	require.LessOrEqual(t, created, 4, "workers created for 3 tasks")
	close(g.release)
}

// A worker's goroutine that waited IdleTimeout for work ends; its worker
// stays, idle without a goroutine, and gets a new one when work returns.
func TestIdleTimeout_GoroutinesEndAndComeBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, err := smartpool.New[string](&behavior{workers: 3, idle: time.Second, levels: [][]ch{{fifo("a")}}})
		require.NoError(t, err)
		p := o.Pool()
		burst := func() {
			g := newGate()
			for range 3 {
				submit(t, o, "a", g.task("a"))
			}
			synctest.Wait()
			require.Equal(t, 3, p.Stats().Busy, "a burst of 3 blocking tasks on 3 workers")
			close(g.release)
			synctest.Wait()
		}

		burst()
		created, parked, orphans := smartpool.WorkerCounts(p)
		require.Equal(t, [3]int{3, 3, 0}, [3]int{created, parked, orphans}, "created, parked goroutines, orphans after the burst")

		time.Sleep(time.Second - time.Nanosecond) // the bubble's clock: no real wait
		synctest.Wait()
		_, parked, _ = smartpool.WorkerCounts(p)
		require.Equal(t, 3, parked, "goroutines ended before IdleTimeout")

		time.Sleep(time.Nanosecond)
		synctest.Wait()
		created, parked, orphans = smartpool.WorkerCounts(p)
		require.Equal(t, [3]int{3, 0, 3}, [3]int{created, parked, orphans}, "created, parked goroutines, orphans after IdleTimeout")

		burst() // the orphans get goroutines again
		r, err := o.Close(context.Background())
		require.NoError(t, err)
		require.Equal(t, uint64(6), r.Total().Ran)
	})
}

// A negative IdleTimeout keeps idle goroutines parked.
func TestIdleTimeout_NegativeKeepsGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, err := smartpool.New[string](&behavior{workers: 2, idle: -1, levels: [][]ch{{fifo("a")}}})
		require.NoError(t, err)
		submit(t, o, "a", func(context.Context) {})
		synctest.Wait()
		time.Sleep(time.Hour)
		synctest.Wait()
		created, parked, orphans := smartpool.WorkerCounts(o.Pool())
		require.Equal(t, [3]int{1, 1, 0}, [3]int{created, parked, orphans}, "created, parked goroutines, orphans an hour later")
		_, err = o.Close(context.Background())
		require.NoError(t, err)
	})
}
