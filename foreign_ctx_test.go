package smartpool_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/smartpool-go/smartpool"
)

// A goroutine the task started yields with the task's context while the task
// itself blocks waiting for it, holding its worker: the child's Yield must be
// a plain wait (nothing counted as yielded, the worker not given away), so a
// second task cannot start on the one-worker pool before the first ends.
func TestYield_ForeignGoroutineWhileTaskWaits(t *testing.T) {
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	childWaits, release := make(chan struct{}), make(chan struct{})
	var running, most atomic.Int32
	track := func() func() {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		return func() { running.Add(-1) }
	}
	submit(t, o, "a", func(ctx context.Context) {
		defer track()()
		done := make(chan struct{})
		go func() {
			defer close(done)
			smartpool.Yield(ctx, func() { close(childWaits); <-release })
		}()
		<-done // a plain wait: the task keeps its worker
	})
	submit(t, o, "a", func(context.Context) { defer track()() })
	waitFor(t, childWaits, "the child's wait")
	require.Zero(t, o.Pool().Stats().Total().Yielded, "a foreign goroutine's Yield suspended the task")
	close(release)
	r := closeWithin(t, o, long)
	require.Equal(t, uint64(2), r.Total().Ran)
	require.EqualValues(t, 1, most.Load(), "two tasks ran at once on a one-worker pool")
}

// A goroutine that outlives its task yields with the task's context after
// the task returned, while the worker's goroutine has moved on: the Yield
// must be a plain wait, and the pool must go on and close normally.
func TestYield_ForeignGoroutineAfterTaskReturned(t *testing.T) {
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	taskCtx := make(chan context.Context, 1)
	submit(t, o, "a", func(ctx context.Context) { taskCtx <- ctx })
	eventually(t, func() bool { return o.Pool().Stats().Total().Ran == 1 })
	ctx := <-taskCtx
	childWaits, release, childDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(childDone)
		smartpool.Yield(ctx, func() { close(childWaits); <-release })
	}()
	waitFor(t, childWaits, "the child's wait")
	require.Zero(t, o.Pool().Stats().Total().Yielded, "a Yield after the task returned suspended the worker")
	close(release)
	waitFor(t, childDone, "the child's Yield")
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		submit(t, o, "a", func(context.Context) { wg.Done() })
	}
	wg.Wait()
	r := closeWithin(t, o, long)
	require.Equal(t, uint64(11), r.Total().Ran)
	require.Zero(t, r.Suspended)
}

// Children sleeping with their task's context while the task waits for them
// (the usual fan-out mistake), over many tasks: every task runs once, never
// two at once on one worker, and Close returns.
func TestYield_ForeignSleepsFanOut(t *testing.T) {
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	var running, most atomic.Int32
	var wg sync.WaitGroup
	const tasks = 50
	for range tasks {
		wg.Add(1)
		submit(t, o, "a", func(ctx context.Context) {
			defer wg.Done()
			n := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			var kids sync.WaitGroup
			for range 4 {
				kids.Add(1)
				go func() {
					defer kids.Done()
					_ = smartpool.Sleep(ctx, 50*time.Microsecond)
					_, _, _ = smartpool.Recv(ctx, closedChan)
				}()
			}
			kids.Wait()
		})
	}
	wg.Wait()
	r := closeWithin(t, o, long)
	require.Equal(t, uint64(tasks), r.Total().Ran)
	require.EqualValues(t, 1, most.Load())
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
