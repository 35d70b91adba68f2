package smartpool_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/scheduler"
	"github.com/stretchr/testify/require"
)

// Round-robin tests (TESTPLAN C7, C9, C10). All run in a synctest bubble: a
// task "costs" 1 ms by sleeping on the bubble's fake clock, so the slice
// clock the workers read is the same clock the tasks spend, and the figures
// are exact rather than statistical. Tasks only write to atomics; the test
// goroutine asserts once the bubble is quiet. (B5 with RoundRobin and 4
// workers is TestStress_NeverMoreThanTRunning.)

// rrSlices are the slices of levels 0, 1 and 2; one rotation is their sum.
var rrSlices = []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 60 * time.Millisecond}

const rrRotation = 120 * time.Millisecond

// rrBehavior is three one-FIFO levels L0, L1, L2 under RoundRobin(rrSlices).
func rrBehavior(workers int) *behavior {
	return &behavior{
		workers: workers,
		sched:   scheduler.RoundRobin(rrSlices...),
		levels:  [][]ch{{fifo("L0")}, {fifo("L1")}, {fifo("L2")}},
	}
}

// saturator keeps one channel full: n tasks that each cost 1 ms of fake time
// and resubmit themselves until over reports true. ran counts the runs that
// began before over; failed counts resubmits the pool refused (expected 0:
// every test stops its saturators before Close).
type saturator struct {
	ran, failed atomic.Int64
}

func (s *saturator) start(t *testing.T, o *smartpool.OwnedPool[string], key string, n int, over func() bool) {
	t.Helper()
	var task func(context.Context)
	task = func(context.Context) {
		if over() {
			return
		}
		s.ran.Add(1)
		time.Sleep(time.Millisecond) // fake time: the task's cost
		if o.Pool().Submit(key, task) != nil {
			s.failed.Add(1)
		}
	}
	for range n {
		submit(t, o, key, task)
	}
}

// C7 TestOrder_RoundRobinShares: three saturated levels under slices
// 20/40/60 ms share the executed tasks 1/6, 2/6, 3/6, each within 5%, after
// 2 s of fake time, for 1, 2 and 4 workers (one shared slice clock: every
// worker serves the level whose turn it is).
func TestOrder_RoundRobinShares(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("T=%d", workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := start(t, rrBehavior(workers))
				end := time.Now().Add(2 * time.Second)
				over := func() bool { return !time.Now().Before(end) }
				var lv [3]saturator
				for l := range lv {
					lv[l].start(t, o, fmt.Sprintf("L%d", l), 8, over)
				}
				time.Sleep(time.Until(end))
				synctest.Wait() // the last runs have returned and every worker is parked

				var ran [3]int64
				var total int64
				for l := range lv {
					ran[l] = lv[l].ran.Load()
					total += ran[l]
					require.Zero(t, lv[l].failed.Load(), "level %d: resubmits refused", l)
				}
				// Every worker is busy for the whole 2 s: one 1 ms task at a time.
				require.EqualValues(t, 2000*workers, total, "runs per level %v", ran)
				for l := range lv {
					share := float64(ran[l]) / float64(total)
					want := float64(rrSlices[l]) / float64(rrRotation)
					ratio := share / want
					t.Logf("level %d: %d runs, share %.4f, expected %.4f, ratio %.3f", l, ran[l], share, want, ratio)
					require.InDelta(t, 1.0, ratio, 0.05, "level %d: runs per level %v", l, ran)
				}
				closeWithin(t, o, long)
			})
		})
	}
}

// C9 TestOrder_RoundRobinSkipsEmptyLevels: with only level 2 loaded (1,000
// tasks of 1 ms fake), it gets all the work, and the batch finishes in the
// same fake time as on a single-level pool: no slice is spent on the empty
// levels.
func TestOrder_RoundRobinSkipsEmptyLevels(t *testing.T) {
	const n = 1000
	// run submits n tasks of 1 ms to key and returns the fake time until the
	// last one finished, with the pool's report.
	run := func(t *testing.T, b *behavior, key string) (time.Duration, *smartpool.Report[string]) {
		o := start(t, b)
		var left atomic.Int64
		left.Store(n)
		finished := make(chan struct{})
		task := func(context.Context) {
			time.Sleep(time.Millisecond) // fake time: the task's cost
			if left.Add(-1) == 0 {
				close(finished)
			}
		}
		began := time.Now()
		for range n {
			submit(t, o, key, task)
		}
		waitFor(t, finished, "the batch")
		took := time.Since(began)
		return took, closeWithin(t, o, long)
	}
	for _, workers := range []int{1, 4} {
		t.Run(fmt.Sprintf("T=%d", workers), func(t *testing.T) {
			var rr, single time.Duration
			synctest.Test(t, func(t *testing.T) {
				var r *smartpool.Report[string]
				rr, r = run(t, rrBehavior(workers), "L2")
				for l, want := range []uint64{0, 0, n} {
					c, _ := r.Channel(fmt.Sprintf("L%d", l))
					require.Equal(t, want, c.Ran, "level %d", l)
				}
			})
			synctest.Test(t, func(t *testing.T) {
				var r *smartpool.Report[string]
				single, r = run(t, &behavior{workers: workers, levels: [][]ch{{fifo("only")}}}, "only")
				require.EqualValues(t, n, r.Total().Ran)
			})
			t.Logf("round robin %v, single level %v", rr, single)
			require.Equal(t, single, rr)
			require.Equal(t, time.Duration((n+workers-1)/workers)*time.Millisecond, rr)
		})
	}
}

// C10 TestOrder_RoundRobinBoundedWait: while levels 1 and 2 are saturated, a
// trickle into level 0 (one 1 ms task every 50 ms fake, 40 tasks) starts
// within one rotation (120 ms) plus one task's cost (1 ms) of its submission.
func TestOrder_RoundRobinBoundedWait(t *testing.T) {
	const trickle = 40
	const bound = rrRotation + time.Millisecond
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("T=%d", workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := start(t, rrBehavior(workers))
				var stop atomic.Bool
				var lv [3]saturator
				for l := 1; l <= 2; l++ {
					lv[l].start(t, o, fmt.Sprintf("L%d", l), 8, stop.Load)
				}
				var waits [trickle]atomic.Int64 // fake ns from submit to start
				var started atomic.Int32
				allStarted := make(chan struct{})
				for i := range trickle {
					time.Sleep(50 * time.Millisecond)
					submitted := time.Now()
					submit(t, o, "L0", func(context.Context) {
						waits[i].Store(int64(time.Since(submitted)))
						if started.Add(1) == trickle {
							close(allStarted)
						}
						time.Sleep(time.Millisecond) // fake time: the task's cost
					})
				}
				waitFor(t, allStarted, "the trickle")
				stop.Store(true)
				synctest.Wait()

				var worst time.Duration
				for i := range waits {
					w := time.Duration(waits[i].Load())
					worst = max(worst, w)
					require.LessOrEqual(t, w, bound, "trickle task %d waited %v", i, w)
				}
				t.Logf("worst wait %v; saturated levels ran %d and %d tasks", worst, lv[1].ran.Load(), lv[2].ran.Load())
				for l := 1; l <= 2; l++ {
					require.Zero(t, lv[l].failed.Load(), "level %d: resubmits refused", l)
					require.Positive(t, lv[l].ran.Load(), "level %d starved", l)
				}
				r := closeWithin(t, o, long)
				c, _ := r.Channel("L0")
				require.EqualValues(t, trickle, c.Ran)
			})
		})
	}
}
