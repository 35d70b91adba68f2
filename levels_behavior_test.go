package smartpool_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestLevels_OneLevelPool: the README's first pool, as written there: Close
// right after the submits runs what is queued, by channel and by key.
func TestLevels_OneLevelPool(t *testing.T) {
	jobs := channels.NewFIFO()
	owned, err := smartpool.New(smartpool.Levels[string]{{{Key: "jobs", Channel: jobs, CompleteOnClose: true}}})
	require.NoError(t, err)
	var ran atomic.Int32
	require.NoError(t, jobs.Submit(func(context.Context) { ran.Add(1) }))
	require.NoError(t, owned.Pool().Submit("jobs", func(context.Context) { ran.Add(1) }))
	report := closeWithin(t, owned, long)
	require.Equal(t, uint64(2), report.Total().Ran)
	require.Equal(t, int32(2), ran.Load())
}

// TestLevels_Methods: Config lists the levels in order with their close
// policy and nothing else; Channel and Followup answer for listed keys, and
// for others without panicking.
func TestLevels_Methods(t *testing.T) {
	urgent, batch := channels.NewFIFO(), channels.NewDeadline()
	ls := smartpool.Levels[string]{
		{{Key: "urgent", Channel: urgent, CompleteOnClose: true}},
		{{Key: "batch", Channel: batch, Followup: new("urgent")}, {Key: "misc", Channel: channels.NewFIFO()}},
	}
	cfg := ls.Config()
	require.Equal(t, smartpool.Config[string]{Levels: [][]smartpool.ChannelParams[string]{
		{{Key: "urgent", CompleteOnClose: true}},
		{{Key: "batch"}, {Key: "misc"}},
	}}, cfg)
	require.Same(t, urgent, ls.Channel("urgent"))
	require.Same(t, batch, ls.Channel("batch"))
	require.Nil(t, ls.Channel("nope"))
	require.Equal(t, "urgent", ls.Followup("batch"))
	require.Equal(t, "misc", ls.Followup("misc"))
	require.Equal(t, "nope", ls.Followup("nope"))
	require.Empty(t, smartpool.Levels[string](nil).Config().Levels)
	require.Nil(t, smartpool.Levels[string](nil).Channel("a"))
}

// TestLevels_ClosePolicyAndFollowup: a two-level Levels pool completes its
// complete-on-close channel at Close and drops the other, and a task that
// yields in the lower level re-enters through the followup it names.
func TestLevels_ClosePolicyAndFollowup(t *testing.T) {
	urgent, batch := channels.NewFIFO(), channels.NewFIFO()
	owned, err := smartpool.New(smartpool.Levels[string]{
		{{Key: "urgent", Channel: urgent, CompleteOnClose: true}},
		{{Key: "batch", Channel: batch, Followup: new("urgent")}},
	})
	require.NoError(t, err)
	p := owned.Pool()
	require.NoError(t, p.SetWorkers(1))

	// A batch task waits; the one worker is then pinned, so the task's
	// re-entry queues in its followup channel, where Stats sees it.
	waiting, wake := make(chan struct{}), make(chan struct{})
	resumed := make(chan struct{})
	require.NoError(t, batch.Submit(func(ctx context.Context) {
		smartpool.Yield(ctx, func() { close(waiting); <-wake })
		close(resumed)
	}))
	waitFor(t, waiting, "the batch task's wait")
	g := newGate()
	require.NoError(t, urgent.Submit(g.task("pin")))
	g.waitStarted(t, 1)
	close(wake)
	eventually(t, func() bool {
		st, _ := p.Stats().Channel("urgent")
		return st.Queued == 1
	})
	st, _ := p.Stats().Channel("batch")
	require.Zero(t, st.Queued, "the resumed task is not in its own channel")

	// Close while the worker is still pinned: urgent's queued tasks run,
	// batch's are dropped.
	for range 2 {
		require.NoError(t, urgent.Submit(func(context.Context) {}))
	}
	for range 3 {
		require.NoError(t, batch.Submit(func(context.Context) {}))
	}
	closed := make(chan *smartpool.Report[string])
	go func() { closed <- closeWithin(t, owned, long) }()
	eventually(t, func() bool { return p.State() != smartpool.Running })
	close(g.release)
	report := <-closed // closeWithin bounds it
	waitFor(t, resumed, "the resumed task")
	u, _ := report.Channel("urgent")
	b, _ := report.Channel("batch")
	require.Equal(t, uint64(3), u.Ran, "the pin and two queued tasks")
	require.Zero(t, u.Dropped)
	require.Equal(t, uint64(1), b.Ran, "the resumed task counts where it was submitted")
	require.Equal(t, uint64(3), b.Dropped)
}

// TestLevels_Validates: New checks a Levels value like any behavior: every
// mistake is an error wrapping ErrConfig and its rule, never a panic, and no
// goroutine is left behind.
func TestLevels_Validates(t *testing.T) {
	fifo := channels.NewFIFO
	var nilFIFO *channels.FIFO
	cases := []struct {
		name string
		ls   smartpool.Levels[string]
		rule error
	}{
		{"nil", nil, smartpool.RuleNoLevels},
		{"empty level", smartpool.Levels[string]{{{Key: "a", Channel: fifo()}}, {}}, smartpool.RuleEmptyLevel},
		{"duplicate key", smartpool.Levels[string]{{{Key: "a", Channel: fifo()}}, {{Key: "a", Channel: fifo()}}}, smartpool.RuleDuplicateKey},
		{"no channel", smartpool.Levels[string]{{{Key: "a"}}}, smartpool.RuleNilChannel},
		{"typed nil channel", smartpool.Levels[string]{{{Key: "a", Channel: nilFIFO}}}, smartpool.RuleNilChannel},
		{"unknown followup", smartpool.Levels[string]{{{Key: "a", Channel: fifo(), Followup: new("zzz")}}}, smartpool.RuleFollowup},
		{"complete-on-close into drop", smartpool.Levels[string]{
			{{Key: "a", Channel: fifo(), CompleteOnClose: true, Followup: new("b")}},
			{{Key: "b", Channel: fifo()}},
		}, smartpool.RuleFollowup},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			o, err := smartpool.New(c.ls)
			require.Nil(t, o)
			require.ErrorIs(t, err, smartpool.ErrConfig)
			require.ErrorIs(t, err, c.rule)
		})
	}
}
