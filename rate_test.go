package smartpool_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// startLog records when each task started, in a synctest bubble's time.
type startLog struct {
	mu    sync.Mutex
	epoch time.Time
	at    []time.Duration
}

func newStartLog() *startLog { return &startLog{epoch: time.Now()} }

func (l *startLog) task(context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = append(l.at, time.Since(l.epoch))
}

func (l *startLog) starts() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Duration(nil), l.at...)
}

// requireRate checks that no stretch of starts ran faster than burst at
// once plus rate after: the k-th start after start i came no sooner than
// (k - burst + 1) intervals after it.
func requireRate(t *testing.T, at []time.Duration, perSec float64, burst int) {
	t.Helper()
	iv := time.Duration(float64(time.Second) / perSec)
	for i := range at {
		for j := i + burst; j < len(at); j++ {
			if min := time.Duration(j-i-burst+1) * iv; at[j]-at[i] < min {
				t.Fatalf("starts %d and %d %v apart, at %v/s burst %d at least %v: %v", i, j, at[j]-at[i], perSec, burst, min, at)
			}
		}
	}
}

// A rated channel's queued tasks start Burst at once, then one a token,
// on time; Stats shows the rate and the throttled takes.
func TestRate_Honoured(t *testing.T) {
	for _, burst := range []int{1, 3} {
		t.Run(map[int]string{1: "burst 1", 3: "burst 3"}[burst], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := smartpool.Rate{PerSecond: 10, Burst: burst}
				o := start(t, &behavior{workers: 4, levels: [][]ch{{{key: "api", c: channels.NewFIFO(), coc: true, rate: r}}}})
				l := newStartLog()
				const n = 30
				for range n {
					submit(t, o, "api", l.task)
				}
				synctest.Wait()
				require.Len(t, l.starts(), burst, "a full bucket's burst starts at once")
				time.Sleep(time.Duration(n-burst) * 100 * time.Millisecond)
				synctest.Wait()
				at := l.starts()
				require.Len(t, at, n, "one start a token: all by %v", time.Duration(n-burst)*100*time.Millisecond)
				requireRate(t, at, 10, burst)
				last := at[n-1]
				require.Equal(t, time.Duration(n-burst)*100*time.Millisecond, last, "the timer reopens the channel when its token is due")
				st, _ := o.Pool().Stats().Channel("api")
				require.Equal(t, r, st.Rate)
				require.NotZero(t, st.Throttled)
				require.Contains(t, o.Pool().Stats().String(), "10/s")
			})
		})
	}
}

// A rated channel waiting for a token holds no worker: a lower level's
// tasks run meanwhile, and a higher level's are not delayed by it.
func TestRate_OtherLevelsGoOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := ch{key: "slow", c: channels.NewFIFO(), coc: true, rate: smartpool.Rate{PerSecond: 1, Burst: 1}}
		o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("high")}, {slow}, {fifo("low")}}})
		slowLog, highLog, lowLog := newStartLog(), newStartLog(), newStartLog()
		for range 5 {
			submit(t, o, "slow", slowLog.task)
		}
		for range 5 {
			submit(t, o, "low", lowLog.task)
			submit(t, o, "high", highLog.task)
		}
		synctest.Wait()
		require.Len(t, slowLog.starts(), 1, "one token")
		require.Len(t, highLog.starts(), 5, "the higher level ran at once")
		require.Len(t, lowLog.starts(), 5, "the lower level ran while the rated channel waits")
		for _, d := range highLog.starts() {
			require.Zero(t, d, "a higher level's task waited for the rated one")
		}
		time.Sleep(4 * time.Second)
		synctest.Wait()
		require.Len(t, slowLog.starts(), 5)
	})
}

// SetRate at run time: a lower rate spaces the starts, 0 holds them (a
// pause by rate) for as long as it stays, a rate again lets them go, and
// math.Inf(1) lifts the limit.
func TestSetRate_RunTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := start(t, &behavior{workers: 2, levels: [][]ch{{fifo("a")}}})
		p := o.Pool()
		l := newStartLog()
		require.NoError(t, p.SetRate("a", smartpool.Rate{}))
		st, _ := p.Stats().Channel("a")
		require.Equal(t, smartpool.Rate{Burst: 1}, st.Rate, "a rate of 0")
		for range 4 {
			submit(t, o, "a", l.task)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Empty(t, l.starts(), "a rate of 0 started a task")
		st, _ = p.Stats().Channel("a")
		require.Equal(t, 4, st.Queued)

		require.NoError(t, p.SetRate("a", smartpool.Rate{PerSecond: 2, Burst: 1}))
		synctest.Wait()
		require.Len(t, l.starts(), 1, "the token the channel had before the rate of 0 is kept")
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, l.starts(), 3, "then one each 500 ms")

		require.NoError(t, p.SetRate("a", smartpool.Rate{PerSecond: math.Inf(1)}))
		synctest.Wait()
		require.Len(t, l.starts(), 4, "no limit: the last task ran at once")
		for range 10 {
			submit(t, o, "a", l.task)
		}
		synctest.Wait()
		require.Len(t, l.starts(), 14)
		st, _ = p.Stats().Channel("a")
		require.Equal(t, smartpool.Rate{}, st.Rate, "no limit shows as the zero Rate")
	})
}

// Pause and a rate hold at once: the timer does not reopen a paused
// channel, Resume does not bypass the rate.
func TestRate_WithPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := smartpool.Rate{PerSecond: 1, Burst: 1}
		o := start(t, &behavior{workers: 2, levels: [][]ch{{{key: "a", c: channels.NewFIFO(), coc: true, rate: r}}}})
		p := o.Pool()
		l := newStartLog()
		for range 3 {
			submit(t, o, "a", l.task)
		}
		synctest.Wait()
		require.Len(t, l.starts(), 1)
		require.NoError(t, p.Pause("a"))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		require.Len(t, l.starts(), 1, "the rate timer reopened a paused channel")
		require.NoError(t, p.Resume("a"))
		synctest.Wait()
		require.Len(t, l.starts(), 2, "one token saved up (burst 1)")
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, l.starts(), 3)
	})
}

// Close never waits for a token: a complete-on-close channel's queued
// tasks all run at once, a dropping one's are dropped, at a rate of 0 too.
func TestRate_CloseIgnoresRate(t *testing.T) {
	for _, perSec := range []float64{0.001, 0} {
		t.Run(map[float64]string{0.001: "slow", 0: "zero"}[perSec], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := smartpool.Rate{PerSecond: 0.001, Burst: 1}
				o, err := smartpool.New[string](&behavior{workers: 2, levels: [][]ch{
					{{key: "keep", c: channels.NewFIFO(), coc: true, rate: r}, {key: "drop", c: channels.NewFIFO(), rate: r}}}})
				require.NoError(t, err)
				if perSec == 0 {
					require.NoError(t, o.Pool().SetRate("keep", smartpool.Rate{}))
					require.NoError(t, o.Pool().SetRate("drop", smartpool.Rate{}))
				}
				const n = 50
				for range n {
					submit(t, o, "keep", func(context.Context) {})
					submit(t, o, "drop", func(context.Context) {})
				}
				synctest.Wait()
				began := time.Now()
				rep := closeWithin(t, o, long)
				require.Zero(t, time.Since(began), "Close waited for a token")
				keep, _ := rep.Channel("keep")
				drop, _ := rep.Channel("drop")
				ranBefore := uint64(1)
				if perSec == 0 {
					ranBefore = 0
				}
				require.EqualValues(t, n, keep.Ran, "every queued task of a complete-on-close channel ran")
				require.EqualValues(t, n, drop.Ran+drop.Dropped)
				require.Equal(t, ranBefore, drop.Ran, "only the token's task ran")
				require.ErrorIs(t, o.Pool().SetRate("keep", r), smartpool.ErrClosed)
			})
		})
	}
}

// RemoveChannel of a throttled channel returns at once: Drain runs its
// queued tasks without tokens, Drop drops them.
func TestRate_RemoveThrottled(t *testing.T) {
	for _, policy := range []smartpool.RemovePolicy{smartpool.Drain, smartpool.Drop} {
		t.Run(map[smartpool.RemovePolicy]string{smartpool.Drain: "drain", smartpool.Drop: "drop"}[policy], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := smartpool.Rate{PerSecond: 0.01, Burst: 1}
				o := start(t, &behavior{workers: 2, spare: []int{1}, levels: [][]ch{{{key: "a", c: channels.NewFIFO(), coc: true, rate: r}, fifo("b")}}})
				const n = 20
				for range n {
					submit(t, o, "a", func(context.Context) {})
				}
				synctest.Wait()
				began := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), long)
				defer cancel()
				st, err := o.Pool().RemoveChannel(ctx, "a", policy)
				require.NoError(t, err)
				require.Less(t, time.Since(began), time.Second, "the removal waited for a token, 100 s away")
				if policy == smartpool.Drain {
					require.EqualValues(t, n, st.Ran)
				} else {
					require.EqualValues(t, [2]uint64{1, n - 1}, [2]uint64{st.Ran, st.DroppedBy.Removed})
				}
				require.ErrorIs(t, o.Pool().SetRate("a", r), smartpool.ErrUnknownKey)
			})
		})
	}
}

// A yielded task's re-entry takes no token: it waits in its queue for the
// channel's bit as any task there, but the token that lets it be polled
// goes to the next new task, at once.
func TestRate_ReentryTakesNoToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := smartpool.Rate{PerSecond: 1, Burst: 1}
		o := start(t, &behavior{workers: 1, levels: [][]ch{{{key: "a", c: channels.NewFIFO(), coc: true, rate: r}}, {fifo("b")}}})
		l := newStartLog()
		release, blocker := make(chan struct{}), make(chan struct{})
		var ended time.Duration
		submit(t, o, "a", func(ctx context.Context) {
			smartpool.Yield(ctx, func() { <-release })
			ended = time.Since(l.epoch)
		})
		synctest.Wait()                                        // started with the one token, yielded
		submit(t, o, "b", func(context.Context) { <-blocker }) // the worker is busy: the re-entry will queue
		synctest.Wait()
		submit(t, o, "a", l.task) // a new start, due at 1 s
		close(release)            // the re-entry queues behind it
		synctest.Wait()
		submit(t, o, "a", l.task) // behind the re-entry
		close(blocker)
		time.Sleep(3 * time.Second)
		synctest.Wait()
		require.Equal(t, []time.Duration{time.Second, 2 * time.Second}, l.starts(),
			"the task behind the re-entry starts with the token the re-entry was polled with")
		require.Equal(t, 2*time.Second, ended)
	})
}

// Bad rates are refused, at New and at SetRate, with errors that say so.
func TestRate_BadInput(t *testing.T) {
	for _, r := range []smartpool.Rate{{PerSecond: -1}, {PerSecond: math.NaN()}, {PerSecond: 1, Burst: -2},
		{PerSecond: 1, Burst: smartpool.MaxRateBurst + 1}, {PerSecond: 0, Burst: 3}} {
		_, err := smartpool.New[string](&behavior{workers: 1, levels: [][]ch{{{key: "a", c: channels.NewFIFO(), rate: r}}}})
		require.ErrorIs(t, err, smartpool.ErrConfig, "%+v", r)
		require.ErrorIs(t, err, smartpool.ErrBadLimit, "%+v", r)
	}
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	err := o.Pool().SetRate("a", smartpool.Rate{PerSecond: -5})
	require.ErrorIs(t, err, smartpool.ErrBadLimit)
	require.ErrorContains(t, err, "PerSecond = -5")
	require.ErrorIs(t, o.Pool().SetRate("nope", smartpool.Rate{PerSecond: 1}), smartpool.ErrUnknownKey)
	var target interface{ Unwrap() []error }
	require.False(t, errors.As(o.Pool().SetRate("a", smartpool.Rate{PerSecond: 3, Burst: 2}), &target), "a good rate is no error")
}

// SetRate flapping between a rate of 0, no limit and fast rates while
// tasks arrive and workers meet the rate: once the limit is lifted for
// good, every task runs (no block is left without its unblock).
func TestSetRate_Flapping(t *testing.T) {
	o := start(t, &behavior{workers: 2, levels: [][]ch{{fifo("a")}, {fifo("b")}}})
	p := o.Pool()
	rates := []smartpool.Rate{{}, {PerSecond: math.Inf(1)}, {PerSecond: 5000, Burst: 2}, {PerSecond: 20000}}
	n := scale(4000)
	var ran sync.WaitGroup
	ran.Add(2 * n)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			if err := p.SetRate("a", rates[i%len(rates)]); err != nil {
				t.Errorf("SetRate: %v", err)
				return
			}
		}
	}()
	for range n {
		submit(t, o, "a", func(context.Context) { ran.Done() })
		submit(t, o, "b", func(context.Context) { ran.Done() })
	}
	waitFor(t, done, "the SetRate calls")
	require.NoError(t, p.SetRate("a", smartpool.Rate{PerSecond: math.Inf(1)}))
	all := make(chan struct{})
	go func() { ran.Wait(); close(all) }()
	waitFor(t, all, "every task after the limit was lifted")
}
