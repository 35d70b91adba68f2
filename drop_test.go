package smartpool_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// The drop rule, for every way a task is dropped: counted once in Dropped,
// passed once to ChannelParams.OnEnd with its drop outcome (and counted by
// the channel when the channel dropped it), its Future resolved with
// ErrDropped, its unit of Config.Limit released.

// bounded returns a context that ends after long: a Future or Group that
// never resolves fails the test instead of hanging it.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), long)
	t.Cleanup(cancel)
	return ctx
}

// A task of a dropping channel yielded before Close and woken after it is
// counted as dropped, and no longer as yielded, before its deferred calls
// run, and reaches OnEnd once, as dropped on close.
func TestDrop_YieldedTaskCountedBeforeDefers(t *testing.T) {
	const tasks = 5
	var onEnd endCounter
	o, err := smartpool.New[string](&behavior{workers: 1, levels: [][]ch{{{key: "drop", c: channels.NewFIFO(), onEnd: onEnd.fn}}}})
	require.NoError(t, err)
	wake := make(chan struct{})
	var suspended, ended sync.WaitGroup
	var deferred atomic.Uint64
	for range tasks {
		suspended.Add(1)
		ended.Add(1)
		submit(t, o, "drop", func(ctx context.Context) {
			defer ended.Done()
			defer func() {
				// Every task whose deferred call started so far, this one
				// included, was counted before its deferred calls ran.
				n := deferred.Add(1)
				d, _ := o.Pool().Stats().Channel("drop")
				if d.Dropped < n {
					t.Errorf("deferred call %d saw Dropped=%d", n, d.Dropped)
				}
			}()
			smartpool.Yield(ctx, func() { suspended.Done(); <-wake })
			t.Error("a dropped task resumed")
		})
	}
	suspended.Wait()
	r := closeWithin(t, o, long)
	require.Zero(t, r.Total().Dropped)
	close(wake)
	ended.Wait()
	d, _ := o.Pool().Stats().Channel("drop")
	require.Equal(t, uint64(tasks), d.Dropped)
	require.Zero(t, d.Yielded)
	require.Equal(t, int32(tasks), onEnd.of(smartpool.DroppedOnClose), "OnEnd once per dropped yielded task")
	require.Equal(t, int32(tasks), onEnd.total(), "OnEnd once per task")
}

// The same, one task at a time, through Go: its Future resolves with
// ErrDropped, and by then Stats counts it.
func TestDrop_YieldedFutureSeesCount(t *testing.T) {
	var onEnd endCounter
	o, err := smartpool.New[string](&behavior{workers: 1, limit: 4, levels: [][]ch{{{key: "drop", c: channels.NewFIFO(), onEnd: onEnd.fn}}}})
	require.NoError(t, err)
	wake := make(chan struct{})
	yielded := make(chan struct{})
	f := goF(smartpool.Go(o.Pool(), "drop", func(ctx context.Context) (int, error) {
		smartpool.Yield(ctx, func() { close(yielded); <-wake })
		return 1, nil
	}))
	waitFor(t, yielded, "the task to yield")
	closeWithin(t, o, long)
	close(wake)
	_, err = f.Wait(bounded(t))
	require.ErrorIs(t, err, smartpool.ErrDropped)
	s := o.Pool().Stats()
	d, _ := s.Channel("drop")
	require.Equal(t, uint64(1), d.Dropped)
	require.Zero(t, d.Yielded)
	require.Zero(t, s.Admitted, "the unit is released")
	require.Equal(t, int32(1), onEnd.of(smartpool.DroppedOnClose))
	require.Equal(t, int32(1), onEnd.total())
}

// A late task that DropLate drops ends like a task Close drops: Dropped,
// OnEnd (as dropped late) and the channel's DroppedLate once each, Future
// resolved, unit released. By-key submits into the same channel are never
// dropped as late: OnEnd sees it run.
func TestDrop_DropLateEndsTheTask(t *testing.T) {
	var onEnd endCounter
	d := channels.NewDeadline(channels.DropLate())
	o := start(t, &behavior{workers: 1, limit: 8, levels: [][]ch{{{key: "dl", c: d, onEnd: onEnd.fn}}}})
	p := o.Pool()

	task, late := smartpool.NewFuture(func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, d.SubmitTask(time.Now().Add(-time.Hour), task))
	_, err := late.Wait(bounded(t))
	require.ErrorIs(t, err, smartpool.ErrDropped)

	byKey := goF(smartpool.Go(p, "dl", func(context.Context) (int, error) { return 2, nil }))
	v, err := byKey.Wait(bounded(t))
	require.NoError(t, err)
	require.Equal(t, 2, v)

	// The worker counts the run and hands it to OnEnd after the Futures
	// resolved.
	eventually(t, func() bool {
		c, _ := p.Stats().Channel("dl")
		return c.Ran == 1 && p.Stats().Admitted == 0 && onEnd.of(smartpool.Ran) == 1
	})
	c, _ := p.Stats().Channel("dl")
	require.Equal(t, uint64(1), c.Dropped)
	require.Equal(t, int32(1), onEnd.of(smartpool.DroppedLate))
	require.Equal(t, int32(2), onEnd.total(), "OnEnd once per task")
	require.Equal(t, uint64(1), d.Stats().DroppedLate)
}

// A task DropOldest displaces ends like a task Close drops, and a Group
// waiting for it gets ErrDropped. OnEnd sees both displaced, and the task
// that displaced the last run.
func TestDrop_DropOldestEndsTheTask(t *testing.T) {
	var onEnd endCounter
	b := channels.NewBounded(1, channels.DropOldest())
	o := start(t, &behavior{workers: 1, limit: 8, levels: [][]ch{{fifo("busy")}, {{key: "b", c: b, onEnd: onEnd.fn}}}})
	p := o.Pool()
	g := newGate()
	submit(t, o, "busy", g.task("blocker"))
	g.waitStarted(t, 1)

	task, oldest := smartpool.NewFuture(func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, b.SubmitTask(task))
	group := smartpool.NewGroup(context.Background(), p)
	group.Go("b", func(context.Context) error { return nil }) // displaces the future's task
	_, err := oldest.Wait(bounded(t))
	require.ErrorIs(t, err, smartpool.ErrDropped)
	require.NoError(t, b.Submit(func(context.Context) {})) // displaces the group's task
	require.ErrorIs(t, group.Wait(bounded(t)), smartpool.ErrDropped)
	close(g.release)

	eventually(t, func() bool { return p.Stats().Admitted == 0 && onEnd.of(smartpool.Ran) == 1 })
	c, _ := p.Stats().Channel("b")
	require.Equal(t, uint64(2), c.Dropped)
	require.Equal(t, int32(2), onEnd.of(smartpool.DroppedDisplaced))
	require.Equal(t, int32(3), onEnd.total(), "OnEnd once per task")
	require.Equal(t, uint64(2), b.Stats().Dropped)
}

// A task submitted by key into a DropLate Deadline is due when it is
// submitted but is never dropped as late, however long it waits.
func TestDrop_ByKeyDeadlineIsNeverLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := channels.NewDeadline(channels.DropLate())
		o, err := smartpool.New[string](&behavior{workers: 1, levels: [][]ch{{fifo("busy")}, {{key: "dl", c: d}}}})
		require.NoError(t, err)
		release := make(chan struct{})
		submit(t, o, "busy", func(context.Context) { <-release })
		var ran atomic.Bool
		submit(t, o, "dl", func(context.Context) { ran.Store(true) })
		time.Sleep(time.Hour) // the fake clock: the task is an hour late
		close(release)
		synctest.Wait() // the worker ran or dropped the task
		r, err := o.Close(context.Background())
		require.NoError(t, err)
		require.True(t, ran.Load())
		c, _ := r.Channel("dl")
		require.Equal(t, uint64(1), c.Ran)
		require.Zero(t, c.Dropped)
		require.Zero(t, d.Stats().DroppedLate)
	})
}
