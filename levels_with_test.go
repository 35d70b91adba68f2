package smartpool_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/scheduler"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Levels.With passes every pool-wide field of its Config through and lists
// the levels' channels, with their callbacks and caps.
func TestLevels_WithConfig(t *testing.T) {
	onPanic := func(string, *smartpool.PanicError) {}
	var onEndGot smartpool.Outcome
	onEnd := func(_ smartpool.Task, o smartpool.Outcome) { onEndGot = o }
	logger := slog.New(slog.DiscardHandler)
	sched := scheduler.HighestFirst()
	b := smartpool.Levels[string]{
		{{Key: "a", Channel: channels.NewFIFO(), CompleteOnClose: true, MaxRunning: 2}},
		{{Key: "b", Channel: channels.NewFIFO(), OnEnd: onEnd, MaxInFlight: 3}},
	}.With(smartpool.Config[string]{Workers: 3, Schedule: sched, Limit: 10, PanicHandler: onPanic, Logger: logger,
		TimingEvery: 1, IdleTimeout: time.Minute, StallAfter: -1})
	cfg := b.Config()
	require.Equal(t, 3, cfg.Workers)
	require.Equal(t, sched, cfg.Schedule)
	require.Equal(t, 10, cfg.Limit)
	require.NotNil(t, cfg.PanicHandler)
	require.Same(t, logger, cfg.Logger)
	require.Equal(t, 1, cfg.TimingEvery)
	require.Equal(t, time.Minute, cfg.IdleTimeout)
	require.Equal(t, time.Duration(-1), cfg.StallAfter)
	require.Len(t, cfg.Levels, 2)
	require.Equal(t, 2, cfg.Levels[0][0].MaxRunning)
	require.True(t, cfg.Levels[0][0].CompleteOnClose)
	require.Equal(t, 3, cfg.Levels[1][0].MaxInFlight)
	require.NotNil(t, cfg.Levels[1][0].OnEnd)
	cfg.Levels[1][0].OnEnd(nil, smartpool.Cancelled)
	require.Equal(t, smartpool.Cancelled, onEndGot, "the level channel's own OnEnd")
	require.Equal(t, "b", b.Followup("b"))
}

// A pool grown from the four-line form: workers, a limit, a panic handler,
// a logger, an OnEnd callback and a cap all take effect.
func TestLevels_WithRunsThePool(t *testing.T) {
	jobs, bulk := channels.NewFIFO(), channels.NewFIFO()
	var mu sync.Mutex
	var panics []string
	ends := map[smartpool.Outcome]int{}
	var logs bytes.Buffer
	owned, err := smartpool.New(smartpool.Levels[string]{
		{{Key: "jobs", Channel: jobs, CompleteOnClose: true, MaxRunning: 1}},
		{{Key: "bulk", Channel: bulk, OnEnd: func(_ smartpool.Task, o smartpool.Outcome) { mu.Lock(); ends[o]++; mu.Unlock() }}},
	}.With(smartpool.Config[string]{
		Workers: 2,
		Limit:   5,
		PanicHandler: func(key string, p *smartpool.PanicError) {
			mu.Lock()
			panics = append(panics, key)
			mu.Unlock()
		},
		Logger:      slog.New(slog.NewTextHandler(&syncWriter{w: &logs, mu: &mu}, nil)),
		IdleTimeout: -1,
	}))
	require.NoError(t, err)
	p := owned.Pool()
	s := p.Stats()
	require.Equal(t, 2, s.Workers)
	require.Equal(t, 5, s.Limit)
	st, _ := s.Channel("jobs")
	require.Equal(t, 1, st.Cap)

	require.NoError(t, jobs.Submit(func(context.Context) { panic("boom") }))
	eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(panics) == 1 })
	require.Equal(t, []string{"jobs"}, panics)

	// Pin both workers (the cap lets one jobs task run: the other pin is
	// bulk), queue a bulk task, and close: the queued bulk task is dropped.
	g := newGate()
	require.NoError(t, jobs.Submit(g.task("jobs")))
	require.NoError(t, bulk.Submit(g.task("bulk")))
	g.waitStarted(t, 2)
	require.NoError(t, bulk.Submit(func(context.Context) {}))
	closed := make(chan *smartpool.Report[string], 1)
	go func() { closed <- closeWithin(t, owned, long) }()
	eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return ends[smartpool.DroppedOnClose] == 1 })
	close(g.release)
	r := <-closed
	b, _ := r.Channel("bulk")
	require.Equal(t, uint64(1), b.Dropped)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[smartpool.Outcome]int{smartpool.DroppedOnClose: 1, smartpool.Ran: 1}, ends, "bulk's OnEnd: the pin ran, the queued task was dropped")
	require.Contains(t, logs.String(), "pool started")
}

// syncWriter serialises writes to w under mu.
type syncWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// Levels.With's mistakes are errors wrapping ErrConfig and their rule, never
// a panic, and leave no goroutine: a Config that lists levels of its own, a
// bad setting, a bad cap.
func TestLevels_WithValidates(t *testing.T) {
	one := func() smartpool.Levels[string] {
		return smartpool.Levels[string]{{{Key: "a", Channel: channels.NewFIFO()}}}
	}
	cases := []struct {
		name string
		b    smartpool.PoolBehavior[string]
		rule error
	}{
		{"Config lists a level's channel again", one().With(smartpool.Config[string]{
			Levels: [][]smartpool.ChannelParams[string]{{{Key: "a"}}}}), smartpool.RuleDuplicateKey},
		{"Config lists a channel of its own", one().With(smartpool.Config[string]{
			Levels: [][]smartpool.ChannelParams[string]{{{Key: "z"}}}}), smartpool.RuleNilChannel},
		{"negative workers", one().With(smartpool.Config[string]{Workers: -1}), smartpool.RuleWorkers},
		{"negative limit", one().With(smartpool.Config[string]{Limit: -1}), smartpool.ErrBadLimit},
		{"both caps", smartpool.Levels[string]{{{Key: "a", Channel: channels.NewFIFO(), MaxRunning: 1, MaxInFlight: 1}}}, smartpool.RuleCapBoth},
		{"negative cap", smartpool.Levels[string]{{{Key: "a", Channel: channels.NewFIFO(), MaxRunning: -1}}}.With(smartpool.Config[string]{}), smartpool.ErrBadLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			o, err := smartpool.New(c.b)
			require.Nil(t, o)
			require.ErrorIs(t, err, smartpool.ErrConfig)
			require.ErrorIs(t, err, c.rule)
		})
	}
}
