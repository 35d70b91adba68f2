package smartpool_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/smartpool-go/smartpool"
)

// yieldRound drives one worker through a carry-on: task a starts, then b is
// queued, then a yields, so the worker must carry on without a's goroutine
// to run b; then a resumes and ends, freeing its goroutine. Call it inside a
// synctest bubble; it returns once every goroutine of the bubble is blocked.
type yieldRound struct {
	o          *smartpool.OwnedPool[string]
	start, wok chan struct{}
	a, b       func(context.Context)
}

func newYieldRound(o *smartpool.OwnedPool[string]) *yieldRound {
	r := &yieldRound{o: o, start: make(chan struct{}), wok: make(chan struct{})}
	wait := func() { <-r.wok }
	r.a = func(ctx context.Context) {
		<-r.start
		smartpool.Yield(ctx, wait)
	}
	r.b = func(context.Context) {}
	return r
}

func (r *yieldRound) run(t testing.TB) {
	submit(t, r.o, "a", r.a)
	submit(t, r.o, "a", r.b)
	r.start <- struct{}{} // a runs: b waits behind it
	synctest.Wait()       // a waits in its Yield; b ran on the carried-on worker
	r.wok <- struct{}{}
	synctest.Wait() // a ended; its goroutine is a spare, or gone
}

// A goroutine freed by a yielded task that ended carries the next carry-on:
// once the pool has a spare, a carry-on allocates no goroutine, context or
// channels (it was about three allocations each before).
func TestYield_SpareCarrierReused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, err := smartpool.New[string](&behavior{workers: 1, idle: -1, levels: [][]ch{{fifo("a")}}})
		require.NoError(t, err)
		r := newYieldRound(o)
		allocs := testing.AllocsPerRun(50, func() { r.run(t) })
		t.Logf("%.2f allocations per round", allocs)
		require.Less(t, allocs, 1.0, "allocations per carry-on")
		rep := closeWithin(t, o, long)
		require.Equal(t, uint64(2*51), rep.Total().Ran)
	})
}

// Spares hold no worker, and all end when the pool has closed.
func TestYield_SpareCarriersEndAtClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := bubbleGoroutines(t)
		o, err := smartpool.New[string](&behavior{workers: 1, idle: -1, levels: [][]ch{{fifo("a")}}})
		require.NoError(t, err)
		newYieldRound(o).run(t)
		require.Equal(t, base+2, bubbleGoroutines(t), "a parked worker and a spare")
		closeWithin(t, o, long)
		synctest.Wait()
		require.Equal(t, base, bubbleGoroutines(t), "no goroutine left")
	})
}

// A spare unused for Config.IdleTimeout ends, like a parked worker's
// goroutine; a later carry-on finds the spare gone and starts a goroutine.
func TestYield_SpareCarriersEndAfterIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := bubbleGoroutines(t)
		o, err := smartpool.New[string](&behavior{workers: 1, idle: time.Second, levels: [][]ch{{fifo("a")}}})
		require.NoError(t, err)
		r := newYieldRound(o)
		r.run(t)
		require.Equal(t, base+2, bubbleGoroutines(t), "a parked worker and a spare")
		time.Sleep(2 * time.Second) // the bubble's clock: both time out
		synctest.Wait()
		require.Equal(t, base, bubbleGoroutines(t), "the spare and the parked goroutine ended")
		r.run(t)
		r.run(t)
		rep := closeWithin(t, o, long)
		require.Equal(t, uint64(6), rep.Total().Ran)
		synctest.Wait()
		require.Equal(t, base, bubbleGoroutines(t))
	})
}
