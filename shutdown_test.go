package smartpool_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// A13 TestShutdown_SmartpoolCloseScenario: smartpool's close_test with
// handshakes: 4 workers, 10 blocked DROP + 10 COC tasks, close, release.
func TestShutdown_SmartpoolCloseScenario(t *testing.T) {
	var ends endCounter
	b := &behavior{workers: 4, levels: [][]ch{{
		{key: "drop", c: channels.NewFIFO(), onEnd: ends.fn},
		fifo("coc"),
	}}}
	o := start(t, b)
	g := newGate()
	var ranDrop, ranCOC atomic.Int32
	for range 10 {
		submit(t, o, "drop", func(ctx context.Context) { g.task("drop")(ctx); ranDrop.Add(1) })
	}
	g.waitStarted(t, 4) // every worker holds a DROP task
	for range 10 {
		submit(t, o, "coc", func(context.Context) { ranCOC.Add(1) })
	}
	closed := make(chan *smartpool.Report[string])
	go func() { closed <- closeWithin(t, o, long) }()
	eventually(t, func() bool { return o.Pool().State() >= smartpool.Closing })
	close(g.release)
	r := <-closed
	require.EqualValues(t, 4, ranDrop.Load())
	require.EqualValues(t, 6, ends.of(smartpool.DroppedOnClose))
	require.EqualValues(t, 4, ends.of(smartpool.Ran))
	require.EqualValues(t, 10, ends.total(), "OnEnd once per DROP task")
	require.EqualValues(t, 10, ranCOC.Load())
	d, _ := r.Channel("drop")
	c, _ := r.Channel("coc")
	require.Equal(t, uint64(4), d.Ran)
	require.Equal(t, uint64(6), d.Dropped)
	require.Equal(t, uint64(10), c.Ran)
	require.Zero(t, c.Dropped)
}

// A1 TestShutdown_DrainsCompleteOnCloseExactlyOnce.
func TestShutdown_DrainsCompleteOnCloseExactlyOnce(t *testing.T) {
	for iter := range scale(20) {
		var ends endCounter // of the pins and the DROP tasks
		b := &behavior{workers: 4, levels: [][]ch{
			{fifo("coc0"), {key: "pin", c: channels.NewFIFO(), onEnd: ends.fn}},
			{fifo("coc1"), {key: "drop", c: channels.NewFIFO(), onEnd: ends.fn}},
		}}
		o := start(t, b)
		g := newGate()
		var pinsDone, cocRan, dropRan atomic.Int32
		for range 4 {
			submit(t, o, "pin", func(ctx context.Context) { g.task("pin")(ctx); pinsDone.Add(1) })
		}
		g.waitStarted(t, 4)
		runs := make([]atomic.Int32, 1000)
		for i := range 1000 {
			submit(t, o, []string{"coc0", "coc1"}[i%2], func(context.Context) { runs[i].Add(1); cocRan.Add(1) })
			submit(t, o, "drop", func(context.Context) { dropRan.Add(1) })
		}
		type result struct {
			r      *smartpool.Report[string]
			cocRan int32
		}
		res := make(chan result)
		go func() {
			r := closeWithin(t, o, long)
			res <- result{r, cocRan.Load()}
		}()
		eventually(t, func() bool { return o.Pool().State() >= smartpool.Closing })
		close(g.release)
		got := <-res
		require.EqualValues(t, 1000, got.cocRan, "iteration %d: Close returned before the drain ended", iter)
		for i := range runs {
			require.EqualValues(t, 1, runs[i].Load(), "task %d", i)
		}
		require.EqualValues(t, 4, pinsDone.Load())
		require.Zero(t, dropRan.Load())
		require.EqualValues(t, 1000, ends.of(smartpool.DroppedOnClose))
		require.EqualValues(t, 4, ends.of(smartpool.Ran))
		require.EqualValues(t, 1004, ends.total(), "OnEnd once per task")
		tot := got.r.Total()
		require.Equal(t, uint64(1004), tot.Ran)
		require.Equal(t, uint64(1000), tot.Dropped)
		require.Zero(t, tot.Queued)
	}
}

// A2 TestShutdown_DropReportIsExact: OnEnd names exactly the queued DROP
// tasks, as dropped on close, across a FIFO, a Deadline and a Multi
// channel; the callback runs outside pool locks (it may Submit and gets
// ErrClosed).
func TestShutdown_DropReportIsExact(t *testing.T) {
	type idTask struct {
		smartpool.Func
		id int
	}
	var mu sync.Mutex
	seen := map[int]int{}
	var submitErrs []error
	var others []smartpool.Outcome
	var o *smartpool.OwnedPool[string]
	onEnd := func(tk smartpool.Task, out smartpool.Outcome) {
		mu.Lock()
		if out == smartpool.DroppedOnClose {
			seen[tk.(*idTask).id]++
		} else {
			others = append(others, out)
		}
		mu.Unlock()
		err := o.Pool().Submit("fifo", func(context.Context) {})
		mu.Lock()
		submitErrs = append(submitErrs, err)
		mu.Unlock()
	}
	fifoC, sdf := channels.NewFIFO(), channels.NewDeadline()
	multi := channels.NewMulti(4, channels.NewFIFO)
	b := &behavior{workers: 1, levels: [][]ch{
		{fifo("pin")},
		{{key: "fifo", c: fifoC, onEnd: onEnd}, {key: "sdf", c: sdf, onEnd: onEnd}, {key: "multi", c: multi, onEnd: onEnd}},
	}}
	o = start(t, b)
	g := newGate()
	submit(t, o, "pin", g.task("pin"))
	g.waitStarted(t, 1)
	var ran atomic.Int32
	for id := range 1000 {
		tk := &idTask{id: id, Func: func(context.Context) { ran.Add(1) }}
		var err error
		switch id % 3 {
		case 0:
			err = src(fifoC).Push(tk, smartpool.Order{})
		case 1:
			err = sdf.SubmitTask(time.Now().Add(time.Duration(id)*time.Millisecond), tk)
		case 2:
			err = src(multi).Push(tk, smartpool.Order{})
		}
		require.NoError(t, err)
	}
	res := make(chan *smartpool.Report[string])
	go func() { res <- closeWithin(t, o, long) }()
	eventually(t, func() bool { return o.Pool().State() >= smartpool.Closing })
	close(g.release)
	r := <-res
	require.Zero(t, ran.Load())
	require.Empty(t, others, "OnEnd of a queued DROP task with another outcome than dropped on close")
	require.Len(t, seen, 1000)
	for id, n := range seen {
		require.Equal(t, 1, n, "task %d dropped %d times", id, n)
	}
	for _, err := range submitErrs {
		require.ErrorIs(t, err, smartpool.ErrClosed)
	}
	require.Equal(t, uint64(1000), r.Total().Dropped)
}

// A3 TestShutdown_Idempotent: 3 sequential and 8 concurrent Close calls all
// return the same report.
func TestShutdown_Idempotent(t *testing.T) {
	for range scale(100) {
		b := &behavior{workers: 2, levels: [][]ch{{fifo("a")}}}
		o, err := smartpool.New[string](b)
		require.NoError(t, err)
		for range 10 {
			submit(t, o, "a", func(context.Context) {})
		}
		reports := make(chan *smartpool.Report[string], 11)
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				reports <- closeWithin(t, o, long)
			}()
		}
		for range 3 {
			reports <- closeWithin(t, o, long)
		}
		wg.Wait()
		close(reports)
		first := <-reports
		require.Equal(t, uint64(10), first.Total().Ran)
		for r := range reports {
			require.Same(t, first, r)
		}
		require.Equal(t, smartpool.Closed, o.Pool().State())
	}
}

// A4 TestShutdown_RacesSubmitAccounting: producers hammer a COC and a DROP
// channel while Close fires after a random delay.
func TestShutdown_RacesSubmitAccounting(t *testing.T) {
	rng := seeded(t)
	for range scale(1000) / 4 {
		b := &behavior{workers: 2, levels: [][]ch{{fifo("coc"), {key: "drop", c: channels.NewFIFO()}}}}
		o, err := smartpool.New[string](b)
		require.NoError(t, err)
		var accepted [2]atomic.Int64
		var ran [2]atomic.Int64
		var bad atomic.Value
		var wg sync.WaitGroup
		for p := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				refused := false
				for i := 0; ; i++ {
					k := (p + i) % 2
					err := o.Pool().Submit([]string{"coc", "drop"}[k], func(context.Context) { ran[k].Add(1) })
					switch {
					case err == nil && refused:
						bad.Store(fmt.Errorf("producer %d: accepted after ErrClosed", p))
						return
					case err == nil:
						accepted[k].Add(1)
					case errors.Is(err, smartpool.ErrClosed):
						refused = true
						if i > 10 {
							return
						}
					default:
						bad.Store(err)
						return
					}
				}
			}()
		}
		// Close at a random point of the producers' run.
		for target := int64(rng.IntN(400)); accepted[0].Load()+accepted[1].Load() < target; {
			runtime.Gosched()
		}
		r := closeWithin(t, o, long)
		wg.Wait()
		if err, _ := bad.Load().(error); err != nil {
			t.Fatal(err)
		}
		c, _ := r.Channel("coc")
		d, _ := r.Channel("drop")
		require.Equal(t, accepted[0].Load(), ran[0].Load())
		require.Equal(t, uint64(accepted[0].Load()), c.Ran)
		require.Equal(t, uint64(accepted[1].Load()), d.Ran+d.Dropped)
		require.Equal(t, uint64(ran[1].Load()), d.Ran)
	}
}

// A5 TestShutdown_ImmediatelyAfterNew: a hammer submits to whichever pool is
// current while pools are created and closed at once.
func TestShutdown_ImmediatelyAfterNew(t *testing.T) {
	var cur atomic.Pointer[smartpool.OwnedPool[string]]
	stop := make(chan struct{})
	hammered := make(chan struct{})
	go func() {
		defer close(hammered)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if o := cur.Load(); o != nil {
				_ = o.Pool().Submit("a", func(context.Context) {})
			}
			runtime.Gosched()
		}
	}()
	for range scale(256) {
		o, err := smartpool.New[string](&behavior{workers: 2, levels: [][]ch{{fifo("a")}}})
		require.NoError(t, err)
		cur.Store(o)
		closeWithin(t, o, long)
	}
	close(stop)
	<-hammered
}

// A6 TestSubmit_AfterShutdownReturnsError, with the documented precedence:
// nil task, then ErrClosed, then unknown key.
func TestSubmit_AfterShutdownReturnsError(t *testing.T) {
	f, d, m, p := channels.NewFIFO(), channels.NewDeadline(), channels.NewMulti(3, channels.NewFIFO), channels.NewPriority()
	b := &behavior{workers: 2, levels: [][]ch{{{key: "f", c: f, coc: true}, {key: "d", c: d}}, {{key: "m", c: m}, {key: "p", c: p}}}}
	o, err := smartpool.New[string](b)
	require.NoError(t, err)
	closeWithin(t, o, long)
	var wg sync.WaitGroup
	var bad atomic.Value
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					bad.Store(fmt.Errorf("goroutine %d: panic %v", g, r))
				}
			}()
			task := func(context.Context) {}
			for range 1000 / raceDivisor {
				for _, err := range []error{
					f.Submit(task), d.Submit(time.Now(), task), m.Submit(task), p.Submit(1, task),
					o.Pool().Submit("f", task), o.Pool().Submit("m", task), o.Pool().Submit("nope", task),
				} {
					if !errors.Is(err, smartpool.ErrClosed) {
						bad.Store(fmt.Errorf("got %v, want ErrClosed", err))
					}
				}
				if err := o.Pool().Submit("f", nil); !errors.Is(err, smartpool.ErrNilTask) {
					bad.Store(fmt.Errorf("nil task: got %v", err))
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := bad.Load().(error); err != nil {
		t.Fatal(err)
	}
}

// A7 TestSubmit_WhileShuttingDownFromTask.
func TestSubmit_WhileShuttingDownFromTask(t *testing.T) {
	b := &behavior{workers: 10, levels: [][]ch{{fifo("a")}}}
	o := start(t, b)
	got := make(chan error, 1)
	submit(t, o, "a", func(context.Context) {
		for o.Pool().State() == smartpool.Running {
			runtime.Gosched()
		}
		got <- o.Pool().Submit("a", func(context.Context) {})
	})
	r := closeWithin(t, o, long)
	require.ErrorIs(t, <-got, smartpool.ErrClosed)
	require.Equal(t, uint64(1), r.Total().Ran)
}

// A8 TestShutdown_CalledFromInsideTask: Close with the task's context starts
// the close and returns ErrCloseFromTask; an outside Close completes.
func TestShutdown_CalledFromInsideTask(t *testing.T) {
	for _, workers := range []int{1, 4} {
		b := &behavior{workers: workers, levels: [][]ch{{fifo("a")}}}
		o, err := smartpool.New[string](b)
		require.NoError(t, err)
		got := make(chan error, 1)
		submit(t, o, "a", func(ctx context.Context) {
			_, err := o.Close(ctx)
			got <- err
		})
		require.ErrorIs(t, <-got, smartpool.ErrCloseFromTask)
		waitFor(t, o.Done(), "close started from a task")
		r := closeWithin(t, o, long)
		require.Equal(t, uint64(1), r.Total().Ran)
	}
}

// A11 (core part) TestShutdown_DeadlineWithStuckTask: a task that does not
// return holds Close past its deadline: Close returns ctx's error and cancels
// the task's context; a later Close completes. A pre-cancelled ctx returns
// at once.
func TestShutdown_DeadlineWithStuckTask(t *testing.T) {
	b := &behavior{workers: 2, levels: [][]ch{{fifo("a")}}}
	o := start(t, b)
	g := newGate()
	cancelled := make(chan struct{})
	submit(t, o, "a", func(ctx context.Context) {
		g.started <- "stuck"
		<-ctx.Done()
		close(cancelled)
		<-g.release
	})
	for range 100 {
		submit(t, o, "a", func(context.Context) {})
	}
	g.waitStarted(t, 1)
	pre, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := o.Close(pre)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, r, "the stats at that moment, not a nil report")
	a, _ := r.Channel("a")
	require.GreaterOrEqual(t, a.Running, 1, "what the close still waits for: the stuck task")
	waitFor(t, cancelled, "the task context to be cancelled")
	select {
	case <-o.Done():
		t.Fatal("closed while a task runs")
	default:
	}
	close(g.release)
	r = closeWithin(t, o, long)
	require.Equal(t, uint64(101), r.Total().Ran)
}

// A14 TestState_Monotonic: a watcher sees Running, Closing, Closed in order.
func TestState_Monotonic(t *testing.T) {
	b := &behavior{workers: 2, levels: [][]ch{{fifo("a")}}}
	o, err := smartpool.New[string](b)
	require.NoError(t, err)
	for range 1000 {
		submit(t, o, "a", func(context.Context) {})
	}
	var seen []smartpool.State
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		last := smartpool.State(-1)
		for last != smartpool.Closed {
			if s := o.Pool().State(); s != last {
				seen = append(seen, s)
				last = s
			}
		}
	}()
	closeWithin(t, o, long)
	<-watched
	for i := 1; i < len(seen); i++ {
		require.Less(t, seen[i-1], seen[i], "states %v", seen)
	}
	require.Equal(t, smartpool.Closed, seen[len(seen)-1])
	require.Equal(t, "closed", smartpool.Closed.String())
}

// A15 TestShutdown_IdlePoolIsFast and F3/F4 TestLeak_NewShutdownCycles:
// closing an idle pool is quick and leaves the goroutine count at its
// baseline. F4 asks for the baseline at the very moment Close returns; Go
// cannot promise that (a worker's last act, the signal Close waits for,
// precedes its goroutine's exit by a few instructions), so the count is
// polled, bounded by one second.
func TestShutdown_IdlePoolIsFast(t *testing.T) {
	base := runtime.NumGoroutine()
	var slowest time.Duration
	for i := range scale(1000) {
		o, err := smartpool.New[string](&behavior{workers: 4, levels: [][]ch{{fifo("a")}}})
		require.NoError(t, err)
		if i%2 == 1 {
			for range 100 {
				submit(t, o, "a", func(context.Context) {})
			}
		}
		began := time.Now()
		closeWithin(t, o, long)
		slowest = max(slowest, time.Since(began))
		deadline := time.Now().Add(time.Second)
		// <= rather than ==: a goroutine of an earlier test may still have
		// been exiting when base was read.
		for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		require.LessOrEqual(t, runtime.NumGoroutine(), base, "cycle %d", i)
	}
	t.Logf("slowest close: %v", slowest)
}
