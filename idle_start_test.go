package smartpool_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// idleStates are the three ways a one-worker pool can be idle when a task
// arrives: its worker not created yet, parked with its goroutine, or left
// without one after IdleTimeout; forEachIdleState brings a pool to each.
var idleStates = []struct {
	name  string
	idle  time.Duration // Config.IdleTimeout
	state [3]int        // WorkerCounts: created, parked goroutines, orphans
}{
	{"no worker yet", -1, [3]int{0, 0, 0}},
	{"worker parked", -1, [3]int{1, 1, 0}},
	{"worker without goroutine", time.Millisecond, [3]int{1, 0, 1}},
}

// forEachIdleState runs test on a one-worker pool with the channels levels
// returns, made idle in each of idleStates; then it closes the pool and
// checks that the tasks test reports it submitted ran, and none was dropped.
// It runs on one processor, so that a woken worker does not start before
// the test goroutine blocks unless the wake-up handed it its task.
func forEachIdleState(t *testing.T, levels func() [][]ch, test func(t *testing.T, o *smartpool.OwnedPool[string], levels [][]ch) (submitted uint64)) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, s := range idleStates {
		t.Run(s.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lv := levels()
				o, err := smartpool.New[string](&behavior{workers: 1, idle: s.idle, levels: lv})
				require.NoError(t, err)
				closed := false
				defer func() {
					if !closed { // a failed check: end the bubble's goroutines
						_, _ = o.Close(context.Background())
					}
				}()
				p := o.Pool()
				if s.state[0] == 1 { // run a task first, so that the worker exists
					done := make(chan struct{})
					submit(t, o, lv[0][0].key, func(context.Context) { close(done) })
					<-done
					time.Sleep(2 * time.Millisecond) // the bubble's clock: past IdleTimeout when it is 1 ms
					synctest.Wait()
				}
				created, parked, orphans := smartpool.WorkerCounts(p)
				require.Equal(t, s.state, [3]int{created, parked, orphans}, "created, parked goroutines, orphans")
				n := test(t, o, lv) + uint64(s.state[0])
				r, err := o.Close(context.Background())
				closed = true
				require.NoError(t, err)
				require.Equal(t, [2]uint64{n, 0}, [2]uint64{r.Total().Ran, r.Total().Dropped}, "ran, dropped")
			})
		})
	}
}

// On an idle one-worker pool, the first task is running by the time its
// submit returns, so a Bounded(1) takes a second one (pond's queue-size
// semantics) and refuses only the third.
func TestIdleStart_BoundedOneTakesASecondTask(t *testing.T) {
	levels := func() [][]ch { return [][]ch{{{key: "b", c: channels.NewBounded(1), coc: true}}} }
	forEachIdleState(t, levels, func(t *testing.T, o *smartpool.OwnedPool[string], lv [][]ch) uint64 {
		b := lv[0][0].c.(*channels.Bounded)
		g := newGate()
		defer close(g.release)
		require.NoError(t, b.Submit(g.task("first")))
		require.NoError(t, b.Submit(g.task("second")), "the first task had not started when TrySubmit returned")
		require.ErrorIs(t, b.Submit(g.task("third")), smartpool.ErrFull)
		return 2
	})
}

// A task submitted to an idle pool has started: a Close right after its
// submit runs it even from a channel that drops on close.
func TestIdleStart_CloseRightAfterSubmitRunsTheTask(t *testing.T) {
	levels := func() [][]ch { return [][]ch{{{key: "drop", c: channels.NewFIFO()}}} }
	forEachIdleState(t, levels, func(t *testing.T, o *smartpool.OwnedPool[string], _ [][]ch) uint64 {
		submit(t, o, "drop", func(context.Context) {})
		return 1 // Close, right after, must run it
	})
}

// The task an idle worker is woken with is the scheduler's choice, not
// the submitted one: a task queued in the higher level without a wake-up
// (its submitter descheduled) runs before the low task whose submit woke
// the worker.
func TestIdleStart_WakesWithTheHighestLevelsTask(t *testing.T) {
	levels := func() [][]ch {
		return [][]ch{{{key: "high", c: plugForgetful(&forgetful{}), coc: true}}, {{key: "low", c: channels.NewFIFO(), coc: true}}}
	}
	forEachIdleState(t, levels, func(t *testing.T, o *smartpool.OwnedPool[string], lv [][]ch) uint64 {
		high := lv[0][0].c.(*forgetful)
		queued, gate := make(chan struct{}), make(chan struct{})
		defer close(gate)
		high.beforeWake = func() { close(queued); <-gate }
		order := make(chan string, 2)
		go func() { _ = high.Add(func(context.Context) { order <- "high" }) }()
		<-queued
		submit(t, o, "low", func(context.Context) { order <- "low" })
		require.Equal(t, "high", <-order, "the worker woken by the low submit ran the low task first")
		require.Equal(t, "low", <-order)
		return 2
	})
}

// A channel that calls Bits.Wake with its lock held, not having declared
// WakesOutsideLock, is only woken for: the wake-up does not search on the
// worker's behalf, which would call the channel's Poll and take that lock
// again. (Not in a synctest bubble: a goroutine blocked on a mutex is not
// durably blocked, so a deadlock would only end with the test binary.)
func TestIdleStart_ChannelWakingUnderItsLock(t *testing.T) {
	c := plugForgetful(&forgetful{wakeUnderLock: true})
	o := start(t, &behavior{workers: 1, idle: -1, levels: [][]ch{{{key: "locked", c: c, coc: true}}}})
	for round := range 3 { // no worker yet, then a parked one
		ran := make(chan struct{})
		added := make(chan error, 1)
		go func() { added <- c.Add(func(context.Context) { close(ran) }) }()
		require.NoError(t, fzRecv(t, added, "Add returning"), "round %d", round)
		fzRecv(t, ran, "the task running")
		eventually(t, func() bool { _, parked, _ := smartpool.WorkerCounts(o.Pool()); return parked == 1 })
	}
}
