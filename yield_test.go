package smartpool_test

import (
	"bytes"
	"context"
	"errors"
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

// A yielded task gives its worker back: with one worker, a second task runs
// while the first waits, and the first then completes.
func TestYield_FreesTheWorker(t *testing.T) {
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	event := make(chan struct{})
	var order []string // written by tasks one at a time: one worker slot
	var mu sync.Mutex
	rec := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	submit(t, o, "a", func(ctx context.Context) {
		rec("first waits")
		smartpool.Yield(ctx, func() { <-event })
		rec("first resumed")
	})
	submit(t, o, "a", func(context.Context) { rec("second ran"); close(event) })
	r := closeWithin(t, o, long)
	require.Equal(t, []string{"first waits", "second ran", "first resumed"}, order)
	require.Equal(t, uint64(2), r.Total().Ran)
	require.Zero(t, r.Suspended)
}

// Yield outside a pool task just waits.
func TestYield_OutsideATask(t *testing.T) {
	called := false
	smartpool.Yield(context.Background(), func() { called = true })
	require.True(t, called)
	require.NoError(t, smartpool.Sleep(context.Background(), 0))
}

// The seed-003 deadlock: on a one-worker pool, task A awaits task B on the
// same pool; and a chain 100 deep completes.
func TestYield_TaskWaitsOnTaskOneWorker(t *testing.T) {
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	var chain func(depth int) func(context.Context) (int, error)
	chain = func(depth int) func(context.Context) (int, error) {
		return func(ctx context.Context) (int, error) {
			if depth == 0 {
				return 0, nil
			}
			v, err := goWait(ctx, p, "a", chain(depth-1))
			return v + 1, err
		}
	}
	v, err := goWait(context.Background(), p, "a", chain(100))
	require.NoError(t, err)
	require.Equal(t, 100, v)
	r := closeWithin(t, o, long)
	require.Equal(t, uint64(101), r.Total().Ran)
}

// B5 with yields: the tasks running user code never exceed the workers, and
// reach them.
func TestStress_NeverMoreThanTRunningWithYields(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		o := start(t, &behavior{workers: workers, levels: [][]ch{{fifo("hi")}, {{key: "lo", c: channels.NewFIFO(), coc: true, followup: "hi"}}}})
		var live, peak atomic.Int32
		enter := func() {
			n := live.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
		}
		var wg sync.WaitGroup
		for i := range 400 {
			wg.Add(1)
			submit(t, o, []string{"hi", "lo"}[i%2], func(ctx context.Context) {
				defer wg.Done()
				enter()
				for range i % 3 {
					live.Add(-1)
					_ = smartpool.Sleep(ctx, time.Duration(i%5)*time.Microsecond) // simulated I/O
					enter()
				}
				live.Add(-1)
			})
		}
		wg.Wait()
		closeWithin(t, o, long)
		require.LessOrEqual(t, peak.Load(), int32(workers))
		require.Positive(t, peak.Load())
	}
}

// A9 TestShutdown_AwaitsSuspendedCompleteOnClose (synctest): COC tasks
// suspended on a timer firing at 100 ms; Close at t=0 returns at t>=100 ms
// with all of them completed. Variants: woken before Close, self-wake, and
// a followup into a higher level.
func TestShutdown_AwaitsSuspendedCompleteOnClose(t *testing.T) {
	for _, variant := range []string{"timer", "before close", "self-wake", "higher followup"} {
		t.Run(variant, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := &behavior{workers: 4, levels: [][]ch{
					{fifo("top")},
					{{key: "a", c: channels.NewFIFO(), coc: true, followup: "top"}, fifo("b")},
					{fifo("c"), {key: "d", c: channels.NewDeadline(), coc: true}},
				}}
				o, err := smartpool.New[string](b)
				require.NoError(t, err)
				var done, sleepErrs atomic.Int32
				for i := range 100 {
					key := []string{"a", "b", "c", "d"}[i%4]
					submit(t, o, key, func(ctx context.Context) {
						for s := range 1 + i%3 {
							switch variant {
							case "self-wake":
								smartpool.Yield(ctx, func() {})
							case "before close":
								if smartpool.Sleep(ctx, time.Millisecond) != nil {
									sleepErrs.Add(1)
								}
							default:
								if smartpool.Sleep(ctx, time.Duration(100/(s+1))*time.Millisecond) != nil {
									sleepErrs.Add(1)
								}
							}
						}
						done.Add(1)
					})
				}
				if variant == "before close" {
					time.Sleep(time.Second)
					synctest.Wait()
					require.EqualValues(t, 100, done.Load())
				}
				began := time.Now()
				r, err := o.Close(context.Background())
				require.NoError(t, err)
				require.EqualValues(t, 100, done.Load())
				require.Zero(t, sleepErrs.Load())
				require.Equal(t, uint64(100), r.Total().Ran)
				require.Zero(t, r.Suspended)
				if variant == "timer" || variant == "higher followup" {
					require.GreaterOrEqual(t, time.Since(began), 100*time.Millisecond)
				}
			})
		})
	}
}

// A10 TestShutdown_SuspendedDropTaskWokenLate: a DROP task suspended before
// Close and woken after it is reported dropped once and never runs again;
// its deferred calls run.
func TestShutdown_SuspendedDropTaskWokenLate(t *testing.T) {
	o, err := smartpool.New[string](&behavior{workers: 2, levels: [][]ch{{{key: "drop", c: channels.NewFIFO()}}}})
	require.NoError(t, err)
	wake := make(chan struct{})
	var suspended sync.WaitGroup
	var resumed, deferred atomic.Int32
	for range 50 {
		suspended.Add(1)
		submit(t, o, "drop", func(ctx context.Context) {
			defer deferred.Add(1)
			smartpool.Yield(ctx, func() { suspended.Done(); <-wake })
			resumed.Add(1)
		})
	}
	suspended.Wait()
	r := closeWithin(t, o, long) // does not wait for suspended DROP tasks
	require.Zero(t, r.Total().Dropped)
	require.Equal(t, 50, r.Total().Yielded, "the report names the tasks still yielded")
	close(wake)
	eventually(t, func() bool { return deferred.Load() == 50 })
	require.Zero(t, resumed.Load())
	d, _ := o.Pool().Stats().Channel("drop")
	require.Equal(t, uint64(50), d.Dropped)
	require.Zero(t, d.Ran)
	require.Zero(t, d.Yielded)
}

// A11 TestShutdown_DeadlineWithStuckTask (synctest): a COC task suspends and
// is not woken; Close with a 100 ms deadline returns ctx's error at exactly
// 100 ms and the stats show 1 suspended; once woken, a second Close
// completes.
func TestShutdown_DeadlineWithSuspendedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, err := smartpool.New[string](&behavior{workers: 2, levels: [][]ch{{fifo("a")}}})
		require.NoError(t, err)
		wake := make(chan struct{})
		submit(t, o, "a", func(ctx context.Context) { smartpool.Yield(ctx, func() { <-wake }) })
		for range 100 {
			submit(t, o, "a", func(context.Context) {})
		}
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		began := time.Now()
		r, err := o.Close(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, 100*time.Millisecond, time.Since(began))
		require.Equal(t, 1, r.Suspended, "the stats at that moment: the close waits for the yielded task")
		require.Equal(t, uint64(100), r.Total().Ran, "not the final report: the yielded task has not run to its end")
		close(wake)
		r, err = o.Close(context.Background())
		require.NoError(t, err)
		require.Equal(t, uint64(101), r.Total().Ran)
	})
}

// A12 TestShutdown_WakeFromDropPath: a dropped task's OnEnd wakes a
// suspended COC task during Close: no deadlock, one outcome each.
func TestShutdown_WakeFromDropPath(t *testing.T) {
	for range scale(1000) / 10 {
		wake := make(chan struct{})
		var drops, others atomic.Int32
		b := &behavior{workers: 1, levels: [][]ch{{fifo("coc"), {key: "drop", c: channels.NewFIFO(), onEnd: func(_ smartpool.Task, o smartpool.Outcome) {
			if o != smartpool.DroppedOnClose {
				others.Add(1)
				return
			}
			drops.Add(1)
			close(wake)
		}}}}}
		o, err := smartpool.New[string](b)
		require.NoError(t, err)
		suspended := make(chan struct{})
		var resumed atomic.Int32
		submit(t, o, "coc", func(ctx context.Context) {
			smartpool.Yield(ctx, func() { close(suspended); <-wake })
			resumed.Add(1)
		})
		<-suspended
		g := newGate()
		submit(t, o, "coc", g.task("pin"))
		g.waitStarted(t, 1)
		submit(t, o, "drop", func(context.Context) {})
		go func() {
			eventually(t, func() bool { return o.Pool().State() >= smartpool.Closing })
			close(g.release)
		}()
		r := closeWithin(t, o, long)
		require.EqualValues(t, 1, drops.Load())
		require.Zero(t, others.Load(), "OnEnd of the dropped task with another outcome")
		require.EqualValues(t, 1, resumed.Load())
		c, _ := r.Channel("coc")
		require.Equal(t, uint64(2), c.Ran)
	}
}

// B2 TestStress_ExactlyOnceWithSuspension and B4 TestStress_WakeIsIdempotent:
// 20% of tasks suspend 1 to 3 times, woken by 4 outside goroutines that
// each send the wake-up 2 to 4 times; each task runs suspensions+1 times in
// pieces and completes once; followups go to another level.
func TestStress_ExactlyOnceWithSuspension(t *testing.T) {
	rng := seeded(t)
	b := &behavior{workers: 4, levels: [][]ch{
		{fifo("hi")},
		{{key: "mid", c: channels.NewFIFO(), coc: true, followup: "hi"}},
		{{key: "lo", c: channels.NewMulti(4, channels.NewFIFO), coc: true, followup: "mid"}},
	}}
	o := start(t, b)
	n := scale(50_000)
	pieces := make([]atomic.Int32, n)
	completions := make([]atomic.Int32, n)
	yields := make([]int, n)
	wakes := make(chan chan struct{}, 1024)
	var wakers sync.WaitGroup
	for range 4 {
		wakers.Add(1)
		go func() {
			defer wakers.Done()
			for w := range wakes {
				// 2 to 4 wake-ups for one suspension: only the first is taken.
				for range 2 + len(w)%3 {
					select {
					case w <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	for id := range n {
		if rng.IntN(5) == 0 {
			yields[id] = 1 + rng.IntN(3)
		}
		ys := yields[id]
		submit(t, o, []string{"hi", "mid", "lo"}[id%3], func(ctx context.Context) {
			pieces[id].Add(1)
			for range ys {
				w := make(chan struct{}, 1)
				smartpool.Yield(ctx, func() { wakes <- w; <-w })
				pieces[id].Add(1)
			}
			completions[id].Add(1)
		})
	}
	eventually(t, func() bool { return o.Pool().Stats().Total().Ran == uint64(n) })
	r := closeWithin(t, o, long)
	close(wakes)
	wakers.Wait()
	for id := range n {
		require.EqualValues(t, yields[id]+1, pieces[id].Load(), "task %d", id)
		require.EqualValues(t, 1, completions[id].Load(), "task %d", id)
	}
	require.Equal(t, uint64(n), r.Total().Ran)
}

// C14 TestOrder_FollowupResumesAtItsLevel: T=1, a suspended level-2 task
// whose followup is level 0 resumes after the level-0 tasks already queued
// and before any queued level-1 or level-2 task.
func TestOrder_FollowupResumesAtItsLevel(t *testing.T) {
	b := &behavior{workers: 1, levels: [][]ch{{fifo("L0")}, {fifo("L1")}, {{key: "L2", c: channels.NewFIFO(), coc: true, followup: "L0"}}}}
	o := start(t, b)
	var rec recorder
	wake := make(chan struct{})
	suspended := make(chan struct{})
	submit(t, o, "L2", func(ctx context.Context) {
		smartpool.Yield(ctx, func() { close(suspended); <-wake })
		rec.task("resumed")(ctx)
	})
	<-suspended
	g := newGate()
	submit(t, o, "L0", g.task("pin"))
	g.waitStarted(t, 1)
	for i := range 100 {
		submit(t, o, "L0", rec.task("L0"))
		submit(t, o, "L1", rec.task("L1"))
		submit(t, o, "L2", rec.task("L2"))
		if i == 49 {
			close(wake) // the resumption queues behind 50 level-0 tasks
			eventually(t, func() bool { return o.Pool().Stats().Total().Queued == 3*50+1 })
		}
	}
	close(g.release)
	closeWithin(t, o, long)
	require.Equal(t, "resumed", rec.order[50], "order: %v", rec.order[:60])
	for i := range 50 {
		require.Equal(t, "L0", rec.order[i])
	}
	for i := 51; i < 101; i++ {
		require.Equal(t, "L0", rec.order[i])
	}
}

// D8 TestPanic_OnResumeAfterSuspension: tasks panic on their second run;
// the suspended count is released and Close does not hang.
func TestPanic_OnResumeAfterSuspension(t *testing.T) {
	var log panicLog
	o := start(t, &behavior{workers: 2, onPanic: log.handle, levels: [][]ch{{fifo("a")}}})
	for range 100 {
		submit(t, o, "a", func(ctx context.Context) {
			smartpool.Yield(ctx, func() {})
			panic(errBoom)
		})
	}
	r := closeWithin(t, o, long)
	require.Equal(t, uint64(100), r.Total().Panicked)
	require.Zero(t, r.Suspended)
	require.Len(t, log.panics, 100)
	require.ErrorIs(t, log.panics[0], errBoom)
}

// Goexit after a yield is counted as goexited and releases its host.
func TestYield_GoexitAfterResume(t *testing.T) {
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	submit(t, o, "a", func(ctx context.Context) {
		smartpool.Yield(ctx, func() {})
		runtimeGoexit()
	})
	submit(t, o, "a", func(context.Context) {})
	r := closeWithin(t, o, long)
	require.Equal(t, uint64(1), r.Total().Goexited)
	require.Equal(t, uint64(1), r.Total().Ran)
}

// Close from a yielded task with its context still starts the close and
// returns ErrCloseFromTask.
func TestYield_CloseFromResumedTask(t *testing.T) {
	o, err := smartpool.New[string](&behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	require.NoError(t, err)
	got := make(chan error, 1)
	submit(t, o, "a", func(ctx context.Context) {
		smartpool.Yield(ctx, func() {})
		_, err := o.Close(ctx)
		got <- err
	})
	require.True(t, errors.Is(<-got, smartpool.ErrCloseFromTask))
	closeWithin(t, o, long)
}

// A task that re-enters a pool with nothing else to do takes an idle worker
// and runs on at once, on its own goroutine, which then carries the worker
// on (yield.go, step 3): the worker runs the next task whatever way the
// resumed task ended, and the outcome is counted once. synctest makes the
// pool idle (the worker has no goroutine: it went idle when the task
// yielded) before the task wakes, so the path is taken every time.
func TestYield_ResumeTakesIdleWorker(t *testing.T) {
	for _, end := range []string{"return", "panic", "goexit", "yield again"} {
		t.Run(end, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var log panicLog
				o, err := smartpool.New[string](&behavior{workers: 1, onPanic: log.handle, levels: [][]ch{{fifo("a")}}})
				require.NoError(t, err)
				wake := make(chan struct{})
				var after atomic.Int32
				submit(t, o, "a", func(ctx context.Context) {
					smartpool.Yield(ctx, func() { <-wake })
					switch end {
					case "panic":
						panic(errBoom)
					case "goexit":
						runtimeGoexit()
					case "yield again":
						smartpool.Yield(ctx, func() {})
					}
				})
				synctest.Wait()
				woken := o.Pool().Stats().Wakeups
				close(wake)
				synctest.Wait()
				require.Equal(t, woken, o.Pool().Stats().Wakeups, "no worker was woken: the task took the idle one")
				submit(t, o, "a", func(context.Context) { after.Add(1) })
				synctest.Wait()
				require.EqualValues(t, 1, after.Load(), "the worker carried on")
				r := closeWithin(t, o, long)
				a, _ := r.Channel("a")
				want := [3]uint64{2, 0, 0}
				switch end {
				case "panic":
					want = [3]uint64{1, 1, 0}
				case "goexit":
					want = [3]uint64{1, 0, 1}
				}
				require.Equal(t, want, [3]uint64{a.Ran, a.Panicked, a.Goexited})
				require.Zero(t, r.Suspended)
			})
		})
	}
}

// However often tasks yield and resume in an idle pool, each worker has at
// most one goroutine: a task that takes a worker whose goroutine is parked
// only borrows it, and a worker left idle by a yield keeps none. Goroutines
// freed by the tasks that ended wait as spare carriers and are hired again
// by the next round's carry-ons, so the count never grows past one per
// worker plus one per task of a round (the three yielded tasks each hold a
// goroutine at once, and all three may end as spares: CI saw 5 once in
// about 300 runs, against a bound of 4 written when spares were capped at
// one per worker).
func TestYield_AtMostOneGoroutinePerWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := bubbleGoroutines(t)
		o, err := smartpool.New[string](&behavior{workers: 2, levels: [][]ch{{fifo("a")}}})
		require.NoError(t, err)
		for range 50 {
			wake := make(chan struct{})
			for range 3 {
				submit(t, o, "a", func(ctx context.Context) { smartpool.Yield(ctx, func() { <-wake }) })
			}
			synctest.Wait()
			close(wake)
			synctest.Wait()
			require.LessOrEqual(t, bubbleGoroutines(t)-base, 2+3) // workers + the round's tasks
		}
		r := closeWithin(t, o, long)
		require.Equal(t, uint64(150), r.Total().Ran)
		synctest.Wait()
		require.Equal(t, base, bubbleGoroutines(t), "spare carriers end with the pool")
	})
}

// bubbleGoroutines counts the goroutines in the caller's synctest bubble.
// runtime.NumGoroutine counts the whole process, and CI once saw a goroutine
// from outside the bubble (an earlier test's or the runtime's) in it.
func bubbleGoroutines(t *testing.T) int {
	t.Helper()
	buf := make([]byte, 1<<20)
	for {
		if n := runtime.Stack(buf, true); n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	header := func(g []byte) []byte { h, _, _ := bytes.Cut(g, []byte("\n")); return h }
	goroutines := bytes.Split(buf, []byte("\n\n"))
	self := header(goroutines[0]) // runtime.Stack lists the caller first
	i := bytes.Index(self, []byte("synctest bubble "))
	if i < 0 {
		t.Fatal("bubbleGoroutines called outside a synctest bubble")
	}
	bubble := self[i : i+bytes.IndexByte(self[i:], ']')+1] // "synctest bubble 4]", not 44
	n := 0
	for _, g := range goroutines {
		if bytes.Contains(header(g), bubble) {
			n++
		}
	}
	return n
}

// A task that panics or calls runtime.Goexit inside a Yield's wait, where it
// holds no worker, is still counted once in the report: counted before the
// task stops holding Close back, so Close cannot report without it. Many
// rounds, since the window between the two was a few instructions wide.
func TestYield_EndInsideWaitIsCounted(t *testing.T) {
	for round := range scale(300) {
		var log panicLog
		o, err := smartpool.New[string](&behavior{workers: 1, onPanic: log.handle, levels: [][]ch{{fifo("a")}}})
		require.NoError(t, err)
		submit(t, o, "a", func(ctx context.Context) { smartpool.Yield(ctx, func() { panic(errBoom) }) })
		submit(t, o, "a", func(ctx context.Context) { smartpool.Yield(ctx, runtimeGoexit) })
		r := closeWithin(t, o, long)
		a, _ := r.Channel("a")
		require.Equal(t, [3]uint64{0, 1, 1}, [3]uint64{a.Ran, a.Panicked, a.Goexited}, "round %d", round)
		require.Zero(t, r.Suspended)
		require.Len(t, log.panics, 1)
	}
}
