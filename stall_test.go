package smartpool_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/stretchr/testify/require"
)

// stallBehavior is a test behavior with Config.StallAfter set.
type stallBehavior struct {
	*behavior
	after time.Duration
}

func (b stallBehavior) Config() smartpool.Config[string] {
	c := b.behavior.Config()
	c.StallAfter = b.after
	return c
}

// logRecords is a slog.Handler that keeps every record, for a test to read.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecords) WithGroup(string) slog.Handler            { return l }

func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}

// lines returns the records whose message starts with prefix, each as its
// message and its attributes resolved and flattened ("a.b.c" keys).
func (l *logRecords) lines(prefix string) []map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]string
	for _, r := range l.recs {
		if !strings.HasPrefix(r.Message, prefix) {
			continue
		}
		m := map[string]string{"level": r.Level.String()}
		r.Attrs(func(a slog.Attr) bool { flatten(m, "", a); return true })
		out = append(out, m)
	}
	return out
}

func flatten(m map[string]string, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		for _, g := range v.Group() {
			flatten(m, prefix+a.Key+".", g)
		}
		return
	}
	m[prefix+a.Key] = v.String()
}

// stalledPool starts a pool of workers workers that logs into a fresh
// logRecords, with StallAfter after: channels "jobs" and "capped"
// (MaxRunning 1) on one level. It returns a release channel that free
// closes; free is called, and the pool closed, at cleanup if the test has
// not, so that a failing test still ends its bubble.
func stalledPool(t *testing.T, workers int, after time.Duration) (*smartpool.OwnedPool[string], *logRecords, <-chan struct{}, func()) {
	t.Helper()
	logs := &logRecords{}
	capped := fifo("capped")
	capped.maxRunning = 1
	b := stallBehavior{&behavior{workers: workers, levels: [][]ch{{fifo("jobs"), capped}}, logger: slog.New(logs)}, after}
	o, err := smartpool.New[string](b)
	require.NoError(t, err)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(func() {
		free()
		_, _ = o.Close(context.Background())
	})
	return o, logs, release, free
}

// blockOnPlainChannel is a task stuck outside the pool until release: it
// keeps its worker.
func blockOnPlainChannel(release <-chan struct{}) func(context.Context) {
	return func(context.Context) { <-release }
}

// A pool whose every worker is blocked outside the pool while work waits
// says so once, at Warn, with where the tasks are blocked, after StallAfter
// (the default here), counts the stall, and says when it moves on.
func TestStall_ReportedOnceThenOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, logs, release, free := stalledPool(t, 2, 0)
		for range 2 {
			submit(t, o, "jobs", blockOnPlainChannel(release))
		}
		submit(t, o, "jobs", func(context.Context) {}) // queued behind them
		synctest.Wait()

		time.Sleep(smartpool.DefaultStallAfter - time.Second)
		synctest.Wait()
		require.Empty(t, logs.lines("smartpool: stall"), "reported before StallAfter")
		require.Zero(t, o.Pool().Stats().Stalls)

		time.Sleep(smartpool.DefaultStallAfter / 2) // a check falls in this stretch
		synctest.Wait()
		warns := logs.lines("smartpool: stalled")
		require.Len(t, warns, 1)
		w := warns[0]
		require.Equal(t, "WARN", w["level"])
		require.Equal(t, "1", w["queued"])
		require.Equal(t, "2", w["workers"])
		require.Equal(t, "2", w["running.jobs"])
		stacks := 0
		for k, v := range w {
			if strings.HasPrefix(k, "tasks.") && strings.HasSuffix(k, ".0") {
				stacks++
				require.Contains(t, v, "blockOnPlainChannel", "top frame: the task's own")
				require.Contains(t, v, "stall_test.go:")
			}
			if strings.HasPrefix(k, "tasks.") && strings.HasSuffix(k, ".state") {
				require.Contains(t, v, "chan receive")
			}
			require.NotContains(t, v, "(*worker).loop", "frames below the task are trimmed")
		}
		require.Equal(t, 2, stacks, "one stack per busy worker: %v", w)
		s := o.Pool().Stats()
		require.EqualValues(t, 1, s.Stalls)
		require.True(t, s.Stalled)
		require.Contains(t, s.String(), "stalls 1 (stalled now)")

		time.Sleep(10 * smartpool.DefaultStallAfter) // still stalled: no second line
		synctest.Wait()
		require.Len(t, logs.lines("smartpool: stalled"), 1)
		require.EqualValues(t, 1, o.Pool().Stats().Stalls)

		free()
		synctest.Wait()
		time.Sleep(smartpool.DefaultStallAfter / 4)
		synctest.Wait()
		over := logs.lines("smartpool: stall over")
		require.Len(t, over, 1)
		require.Equal(t, "INFO", over[0]["level"])
		require.Equal(t, "a task ended", over[0]["reason"])
		require.False(t, o.Pool().Stats().Stalled)

		r, err := o.Close(context.Background())
		require.NoError(t, err)
		require.EqualValues(t, 1, r.Stalls)
		require.False(t, r.Stalled)
	})
}

// The stall line stays bounded however many workers are stuck.
func TestStall_StacksBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers = 40
		o, logs, release, free := stalledPool(t, workers, time.Second)
		for range workers + 1 {
			submit(t, o, "jobs", blockOnPlainChannel(release))
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		warns := logs.lines("smartpool: stalled")
		require.Len(t, warns, 1)
		stacks := 0
		for k := range warns[0] {
			if strings.HasPrefix(k, "tasks.") && strings.HasSuffix(k, ".state") {
				stacks++
			}
		}
		require.Equal(t, 16, stacks)
		require.Equal(t, "24", warns[0]["tasks.omitted"])
		free()
		_, err := o.Close(context.Background())
		require.NoError(t, err)
	})
}

// A pool that is busy but moving never reports a stall: not while its tasks
// keep ending (each longer than a check period), not while a worker is free,
// not while nothing is queued behind busy workers.
func TestStall_HealthyPoolNeverStalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const after = time.Second
		o, logs, release, free := stalledPool(t, 2, after)
		for range 40 { // 20 rounds of two tasks of 0.9 StallAfter: 18 StallAfters busy
			submit(t, o, "jobs", func(context.Context) { time.Sleep(after * 9 / 10) })
		}
		time.Sleep(20 * after)
		synctest.Wait()
		require.EqualValues(t, 40, o.Pool().Stats().Total().Ran)

		submit(t, o, "jobs", blockOnPlainChannel(release)) // one worker stuck, one free
		time.Sleep(10 * after)
		synctest.Wait()
		submit(t, o, "jobs", blockOnPlainChannel(release)) // both stuck, nothing queued
		time.Sleep(10 * after)
		synctest.Wait()
		require.Empty(t, logs.lines("smartpool: stall"))
		require.Zero(t, o.Pool().Stats().Stalls)
		free()
		r, err := o.Close(context.Background())
		require.NoError(t, err)
		require.Zero(t, r.Stalls)
	})
}

// Work queued behind a channel's cap while a worker is free is no stall: the
// pool waits on its own cap, not on blocked workers.
func TestStall_FreeWorkerIsNoStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, logs, release, free := stalledPool(t, 2, time.Second)
		submit(t, o, "capped", blockOnPlainChannel(release))
		submit(t, o, "capped", blockOnPlainChannel(release)) // queued behind the cap
		time.Sleep(10 * time.Second)
		synctest.Wait()
		s := o.Pool().Stats()
		require.Equal(t, 1, s.Busy)
		require.Equal(t, 1, s.Channels[1].Queued)
		require.Empty(t, logs.lines("smartpool: stall"))
		require.Zero(t, s.Stalls)
		free()
		_, err := o.Close(context.Background())
		require.NoError(t, err)
	})
}

// Work queued behind a channel's cap, which the pool's summary hides, counts
// as queued: a worker stuck in the capped channel's task stalls it.
func TestStall_WorkBehindACap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, logs, release, free := stalledPool(t, 1, time.Second)
		submit(t, o, "capped", blockOnPlainChannel(release))
		submit(t, o, "capped", func(context.Context) {})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		warns := logs.lines("smartpool: stalled")
		require.Len(t, warns, 1)
		require.Equal(t, "1", warns[0]["queued"])
		require.Equal(t, "1", warns[0]["running.capped"])
		free()
		_, err := o.Close(context.Background())
		require.NoError(t, err)
	})
}

// A submit that waits for a unit of Config.Limit, which the blocked tasks
// hold, is work waiting as much as a queued task: with nothing queued, the
// pool still reports the stall, and says how many submits wait.
func TestStall_SubmitWaitingForAUnit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logRecords{}
		b := stallBehavior{&behavior{workers: 1, limit: 1, levels: [][]ch{{fifo("jobs")}}, logger: slog.New(logs)}, time.Second}
		o, err := smartpool.New[string](b)
		require.NoError(t, err)
		release := make(chan struct{})
		free := sync.OnceFunc(func() { close(release) })
		defer free() // before Close, should the test fail
		submit(t, o, "jobs", blockOnPlainChannel(release))
		waited := make(chan error, 1)
		go func() {
			waited <- o.Pool().Submit("jobs", func(context.Context) {}, smartpool.WithContext(context.Background()))
		}()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		warns := logs.lines("smartpool: stalled")
		require.Len(t, warns, 1, "a submit waits for the unit a blocked task holds")
		require.Equal(t, "0", warns[0]["queued"])
		require.Equal(t, "1", warns[0]["waiting"])
		free()
		require.NoError(t, <-waited)
		_, err = o.Close(context.Background())
		require.NoError(t, err)
	})
}

// A negative StallAfter turns the watchdog off.
func TestStall_NegativeTurnsItOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, logs, release, free := stalledPool(t, 1, -1)
		submit(t, o, "jobs", blockOnPlainChannel(release))
		submit(t, o, "jobs", func(context.Context) {})
		time.Sleep(100 * smartpool.DefaultStallAfter)
		synctest.Wait()
		require.Empty(t, logs.lines("smartpool: stall"))
		require.Zero(t, o.Pool().Stats().Stalls)
		free()
		_, err := o.Close(context.Background())
		require.NoError(t, err)
	})
}
