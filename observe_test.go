package smartpool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"expvar"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/stretchr/testify/require"
)

// observed is a test behavior with the observability settings.
type observed struct {
	*behavior
	every int
	log   *slog.Logger
}

func (o observed) Config() smartpool.Config[string] {
	c := o.behavior.Config()
	c.TimingEvery, c.Logger = o.every, o.log
	return c
}

func startObserved(t testing.TB, b observed) *smartpool.OwnedPool[string] {
	t.Helper()
	o, err := smartpool.New[string](b)
	require.NoError(t, err)
	t.Cleanup(func() { closeWithin(t, o, 2*long) })
	return o
}

// hold returns a task that signals started and runs until release closes.
func hold(started chan<- struct{}, release <-chan struct{}) func(context.Context) {
	return func(context.Context) { started <- struct{}{}; <-release }
}

// With every task timed, a task queued behind a running one reports the
// wait it had, and the running one its run time, within a bucket's width.
func TestTiming_WaitAndRun(t *testing.T) {
	const d = 20 * time.Millisecond // long enough to measure on a loaded machine
	o := startObserved(t, observed{behavior: &behavior{workers: 1, levels: [][]ch{{fifo("a")}}}, every: 1})
	started, release := make(chan struct{}), make(chan struct{})
	submit(t, o, "a", hold(started, release))
	waitFor(t, started, "first task")
	queued := time.Now()
	var waited time.Duration
	done := make(chan struct{})
	submit(t, o, "a", func(context.Context) { waited = time.Since(queued); close(done) })
	<-time.After(d) // the delay being measured, not a synchronisation
	close(release)
	waitFor(t, done, "second task")
	r := closeWithin(t, o, long)
	a := r.Channels[0]
	require.EqualValues(t, 2, a.Wait.Count)
	require.EqualValues(t, 2, a.Run.Count)
	require.GreaterOrEqual(t, a.Wait.Max, d)
	require.LessOrEqual(t, a.Wait.Max, waited)
	require.GreaterOrEqual(t, a.Run.Max, d, "the first task ran at least as long as the second waited")
	require.LessOrEqual(t, a.Wait.P99, a.Wait.Max)
	require.NotEmpty(t, a.Wait.Buckets)
	require.EqualValues(t, 2, a.Wait.Buckets[len(a.Wait.Buckets)-1].Count)
}

// A task that yields and re-enters through its followup channel behind
// other work reports that re-entry's wait as well.
func TestTiming_ReentryWait(t *testing.T) {
	o := startObserved(t, observed{behavior: &behavior{workers: 1, levels: [][]ch{{fifo("a")}}}, every: 1})
	event, yielded := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	submit(t, o, "a", func(ctx context.Context) {
		smartpool.Yield(ctx, func() { close(yielded); <-event })
		close(done)
	})
	waitFor(t, yielded, "yield")
	started, release := make(chan struct{}), make(chan struct{})
	submit(t, o, "a", hold(started, release))
	waitFor(t, started, "blocking task")
	close(event) // re-enters while the only worker is busy: queued
	eventually(t, func() bool { return o.Pool().Stats().Channels[0].Queued == 1 })
	close(release)
	waitFor(t, done, "yielded task")
	r := closeWithin(t, o, long)
	require.EqualValues(t, 3, r.Channels[0].Wait.Count, "two submits and one re-entry")
}

// Timing is off with a negative TimingEvery and sampled by default.
func TestTiming_OffAndSampled(t *testing.T) {
	run := func(every, n int) smartpool.ChannelStats[string] {
		o := startObserved(t, observed{behavior: &behavior{workers: 2, levels: [][]ch{{fifo("a")}}}, every: every})
		var wg sync.WaitGroup
		wg.Add(n)
		for range n {
			submit(t, o, "a", func(context.Context) { wg.Done() })
		}
		wg.Wait()
		return closeWithin(t, o, long).Channels[0]
	}
	off := run(-1, 1000)
	require.Zero(t, off.Wait.Count)
	require.Zero(t, off.Run.Count)
	n := 64 * 100
	def := run(0, n)
	require.EqualValues(t, n, def.Ran)
	// Runs: every 64th on each worker; waits: each task with probability 1/64.
	require.InDelta(t, n/smartpool.DefaultTimingEvery, def.Run.Count, 2)
	require.InDelta(t, n/smartpool.DefaultTimingEvery, def.Wait.Count, 50) // 100 ± 5 standard deviations
}

// Stats counts the workers busy and each channel's running tasks.
func TestStats_BusyAndRunning(t *testing.T) {
	o := startObserved(t, observed{behavior: &behavior{workers: 2, levels: [][]ch{{fifo("a")}, {fifo("b")}}}})
	started, release := make(chan struct{}), make(chan struct{})
	submit(t, o, "b", hold(started, release))
	waitFor(t, started, "task")
	s := o.Pool().Stats()
	require.Equal(t, 1, s.Busy)
	require.Equal(t, 0, s.Channels[0].Running)
	require.Equal(t, 1, s.Channels[1].Running)
	close(release)
	eventually(t, func() bool { return o.Pool().Stats().Busy == 0 })
}

// String prints a table: the pool line, a header, a row per channel.
func TestStats_String(t *testing.T) {
	o := startObserved(t, observed{behavior: &behavior{workers: 1, levels: [][]ch{{fifo("urgent")}, {{key: "bulk", c: fifo("x").c, maxRunning: 1}}}}, every: 1})
	done := make(chan struct{})
	submit(t, o, "urgent", func(context.Context) { close(done) })
	waitFor(t, done, "task")
	r := closeWithin(t, o, long)
	out := r.String()
	t.Log("\n" + out)
	lines := strings.Split(out, "\n")
	require.Len(t, lines, 4)
	require.Contains(t, lines[0], "workers 1")
	require.Contains(t, lines[1], "channel")
	require.Regexp(t, `^\s*0\s+urgent\s+complete\s+-\s+0\s+0\s+-\s+1\s`, lines[2])
	require.Regexp(t, `^\s*1\s+bulk\s+drop\s+-\s+0\s+0\s+0/1\s+0\s.*-\s+-\s+-\s+-$`, lines[3])
}

// The pool logs its lifecycle at Info, drops at Warn and panics at Error,
// with the panic's value and its stack as separate attributes, the stack
// frame by frame from the panicking function.
func TestLogging_Lifecycle(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	o := startObserved(t, observed{behavior: &behavior{workers: 1, levels: [][]ch{{fifo("a")}, {{key: "b", c: fifo("x").c}}}}, log: log})
	started, release := make(chan struct{}), make(chan struct{})
	submit(t, o, "a", hold(started, release))
	waitFor(t, started, "task")
	submit(t, o, "a", panickingTask)
	for range 3 {
		submit(t, o, "b", func(context.Context) {})
	}
	closed := make(chan *smartpool.Report[string])
	go func() { closed <- closeWithin(t, o, long) }()
	eventually(t, func() bool { return o.Pool().State() != smartpool.Running })
	close(release)
	r := <-closed
	require.EqualValues(t, 3, r.Channels[1].Dropped)

	type line struct {
		Level, Msg        string
		Channel           any
		Panic             string
		Stack             map[string]string
		Ran, Dropped      uint64
		Workers, Panicked int
		Queued, Suspended *int
	}
	var got []line
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var v line
		require.NoError(t, json.Unmarshal([]byte(l), &v), l)
		got = append(got, v)
	}
	msgs := make([]string, len(got))
	for i, l := range got {
		msgs[i] = l.Level + " " + l.Msg
	}
	require.Equal(t, []string{
		"INFO smartpool: pool started",
		"INFO smartpool: close begun",
		"ERROR smartpool: task panicked",
		"INFO smartpool: pool closed",
		"WARN smartpool: tasks dropped",
	}, msgs)
	require.Equal(t, 1, got[0].Workers)
	require.Equal(t, "a", got[2].Channel)
	require.Contains(t, got[2].Panic, "boom")
	require.Contains(t, got[2].Stack["0"], "panickingTask", "the first frame is the function that panicked")
	require.Contains(t, got[2].Stack["0"], "panic_test.go:")
	require.EqualValues(t, 1, got[3].Ran)
	require.Equal(t, 1, got[3].Panicked)
	require.EqualValues(t, 3, got[3].Dropped)
	require.Equal(t, "b", got[4].Channel)
	require.EqualValues(t, 3, got[4].Dropped)
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Publish exposes live stats through expvar and refuses a name twice.
var publishRuns atomic.Int64

func TestPublish(t *testing.T) {
	o := startObserved(t, observed{behavior: &behavior{workers: 1, levels: [][]ch{{fifo("a")}}}})
	// expvar names live as long as the process: a name of its own per run
	// (-count, -cpu).
	name := fmt.Sprintf("smartpool-test-publish-%d", publishRuns.Add(1))
	require.NoError(t, o.Pool().Publish(name))
	require.ErrorContains(t, o.Pool().Publish(name), "already published")
	require.Error(t, o.Pool().Publish(""))
	done := make(chan struct{})
	submit(t, o, "a", func(context.Context) { close(done) })
	waitFor(t, done, "task")
	eventually(t, func() bool { return o.Pool().Stats().Channels[0].Ran == 1 })
	var s struct {
		Workers  int
		Channels []struct {
			Key string
			Ran uint64
		}
	}
	require.NoError(t, json.Unmarshal([]byte(expvar.Get(name).String()), &s))
	require.Equal(t, 1, s.Workers)
	require.Equal(t, "a", s.Channels[0].Key)
	require.EqualValues(t, 1, s.Channels[0].Ran)
}

// discardLog drops every line, for benchmarks.
var discardLog = slog.New(slog.DiscardHandler)
