package smartpool_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/stretchr/testify/require"
)

// Stats.Live follows the worker goroutines: none after New, one per worker a
// burst needs, none again once they waited IdleTimeout, and fewer when
// SetWorkers retires some. The bubble's clock makes the timeout exact.
func TestStats_LiveFollowsWorkerGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, err := smartpool.New[string](&behavior{workers: 4, idle: time.Second, levels: [][]ch{{fifo("a")}}})
		require.NoError(t, err)
		p := o.Pool()
		require.Zero(t, p.Stats().Live, "New started no goroutine")

		burst := func(n int) *gate {
			g := newGate()
			for range n {
				submit(t, o, "a", g.task("a"))
			}
			synctest.Wait()
			return g
		}
		g := burst(3)
		s := p.Stats()
		require.Equal(t, 3, s.Busy)
		// One goroutine per busy worker, and with more processors than 3 perhaps
		// one more: a worker the wake-up chain woke, which found nothing and parked.
		require.Contains(t, []int{3, 4}, s.Live, "one goroutine per busy worker, and perhaps a parked one")
		require.Contains(t, s.String(), fmt.Sprintf("workers 4 (live %d, busy 3)", s.Live))
		close(g.release)
		synctest.Wait()
		require.Equal(t, s.Live, p.Stats().Live, "parked goroutines are live until IdleTimeout")

		time.Sleep(time.Second) // the bubble's clock: no real wait
		synctest.Wait()
		require.Zero(t, p.Stats().Live, "idle goroutines ended after IdleTimeout")

		g = burst(4)
		require.Equal(t, 4, p.Stats().Live)
		require.NoError(t, p.SetWorkers(1))
		close(g.release)
		synctest.Wait()
		require.Equal(t, 1, p.Stats().Live, "retired workers' goroutines ended")

		r, err := o.Close(context.Background())
		require.NoError(t, err)
		require.Zero(t, r.Live, "Close's report: every worker exited")
		require.Equal(t, uint64(7), r.Total().Ran)
	})
}
