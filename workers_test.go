package smartpool_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/smartpool-go/smartpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SetWorkers grows the pool at once and shrinks it after the running tasks:
// with 4 blocked tasks, growing 1 -> 4 starts the 3 waiting ones; after a
// shrink to 2, no more than 2 tasks ever run at once.
func TestSetWorkers_GrowAndShrink(t *testing.T) {
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	g := newGate()
	for range 4 {
		submit(t, o, "a", g.task("a"))
	}
	g.waitStarted(t, 1)
	require.NoError(t, p.SetWorkers(4))
	g.waitStarted(t, 3) // only new workers can start them
	require.Equal(t, 4, p.Stats().Workers)

	require.NoError(t, p.SetWorkers(2)) // every worker is inside a task
	close(g.release)
	var running peak
	var wg sync.WaitGroup
	for range scale(400) {
		wg.Add(1)
		submit(t, o, "a", func(context.Context) {
			running.enter()
			runtime.Gosched()
			running.leave()
			wg.Done()
		})
	}
	wg.Wait()
	require.LessOrEqual(t, running.max.Load(), int32(2))
	require.Equal(t, 2, p.Stats().Workers)
}

// Resizing at random while producers submit loses and duplicates nothing,
// and Close still drains everything and leaves no goroutine behind (goleak).
func TestSetWorkers_ResizeUnderLoadExactlyOnce(t *testing.T) {
	r := seeded(t)
	o := start(t, &behavior{workers: 2, levels: [][]ch{{fifo("hi")}, {fifo("lo")}}})
	p := o.Pool()
	const producers = 4
	n := scale(20000)
	l := newLedger()
	var wg sync.WaitGroup
	for i := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range n {
				id := i*n + j
				key := "lo"
				if j%3 == 0 {
					key = "hi"
				}
				var body func(ctx context.Context)
				if j%7 == 0 { // some tasks yield, and resume on whichever worker
					body = func(ctx context.Context) { smartpool.Yield(ctx, runtime.Gosched) }
				}
				err := p.SubmitTask(key, l.task(id, body))
				l.submitted(id, key, err)
				if err != nil {
					t.Errorf("Submit: %v", err)
					return
				}
			}
		}()
	}
	var stop atomic.Bool
	resized := make(chan struct{})
	go func() {
		defer close(resized)
		for !stop.Load() {
			if err := p.SetWorkers(1 + r.IntN(8)); err != nil {
				t.Errorf("SetWorkers: %v", err)
				return
			}
			runtime.Gosched()
		}
	}()
	wg.Wait()
	stop.Store(true)
	<-resized
	rep := closeWithin(t, o, long)
	require.Equal(t, uint64(producers*n), rep.Total().Ran)
	l.requireBalanced(t, rep)
}

// Bad counts are refused; so is any resize once Close started.
func TestSetWorkers_Errors(t *testing.T) {
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	require.ErrorIs(t, p.SetWorkers(0), smartpool.ErrConfig)
	require.ErrorIs(t, p.SetWorkers(smartpool.MaxWorkers+1), smartpool.ErrConfig)
	closeWithin(t, o, long)
	require.ErrorIs(t, p.SetWorkers(2), smartpool.ErrClosed)
}

// A pool shrunk to one worker and grown again serves every level: retired
// workers' numbers are reused and their counts kept.
func TestSetWorkers_ShrinkThenGrowKeepsStats(t *testing.T) {
	o := start(t, &behavior{workers: 4, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	run := func(k int) {
		var wg sync.WaitGroup
		for range k {
			wg.Add(1)
			submit(t, o, "a", func(context.Context) { wg.Done() })
		}
		wg.Wait()
	}
	run(100)
	require.NoError(t, p.SetWorkers(1))
	run(100)
	require.NoError(t, p.SetWorkers(6))
	g := newGate()
	for range 6 {
		submit(t, o, "a", g.task("a"))
	}
	g.waitStarted(t, 6)
	close(g.release)
	rep := closeWithin(t, o, long)
	st, _ := rep.Channel("a")
	require.Equal(t, uint64(206), st.Ran)
}

// Once Close started, a worker SetWorkers made surplus does not retire: it
// may host the only task still due. Found by FuzzPoolOps (input 2725618a):
// the worker below target found nothing and exited while a complete-on-close
// task still ran on the surplus worker, which then yielded and retired, and
// Close returned with the task's re-entry queued. Which task lands on which
// worker is the runtime's choice, hence the rounds.
func TestSetWorkers_SurplusWorkerDrainsOnClose(t *testing.T) {
	for range 16 {
		synctest.Test(t, func(t *testing.T) {
			o, err := smartpool.New[string](&behavior{workers: 2, levels: [][]ch{{fifo("a")}}})
			require.NoError(t, err)
			ends, yields := make(chan struct{}), make(chan struct{})
			var resumed atomic.Bool
			submit(t, o, "a", func(context.Context) { <-ends })
			submit(t, o, "a", func(ctx context.Context) {
				<-yields
				smartpool.Yield(ctx, func() {})
				resumed.Store(true)
			})
			synctest.Wait() // one task on each worker
			require.NoError(t, o.Pool().SetWorkers(1))
			closed := make(chan *smartpool.Report[string], 1)
			go func() {
				r, err := o.Close(context.Background())
				assert.NoError(t, err)
				closed <- r
			}()
			synctest.Wait()
			close(ends) // that worker finds nothing; worker 0 would exit
			synctest.Wait()
			close(yields) // the other yields while the pool closes
			r := <-closed
			require.True(t, resumed.Load(), "Close returned before the yielded task finished")
			require.Equal(t, uint64(2), r.Total().Ran)
			require.Zero(t, r.Total().Queued)
		})
	}
}
