package smartpool_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/scheduler"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// nilFIFO is a typed nil, as a behavior's switch easily returns.
var nilFIFO *channels.FIFO

// E TestNew_RejectsBadConfig: every mistake is an error wrapping ErrConfig
// and its rule, whose message says what is wrong once ("smartpool:" appears
// once) and names the value; no goroutine is started.
func TestNew_RejectsBadConfig(t *testing.T) {
	attached := channels.NewFIFO()
	o, err := smartpool.New[string](&behavior{workers: 1, levels: [][]ch{{{key: "x", c: attached}}}})
	require.NoError(t, err)
	closeWithin(t, o, long)

	manyLevels := &behavior{}
	for i := range scheduler.MaxLevels + 1 {
		manyLevels.levels = append(manyLevels.levels, []ch{fifo(fmt.Sprint(i))})
	}
	tooMany := &behavior{levels: [][]ch{{{key: "m", c: channels.NewMulti(4097, channels.NewFIFO)}}}}
	one := func(c ch) *behavior { return &behavior{levels: [][]ch{{c}}} }
	cases := []struct {
		name string
		b    smartpool.PoolBehavior[string]
		rule error
		msg  string // the message, after "smartpool: bad configuration: "
	}{
		{"nil behavior", nil, smartpool.RuleNilBehavior, "New(nil): the PoolBehavior is nil"},
		{"nil pointer behavior", (*behavior)(nil), smartpool.RuleNilBehavior, "New(*smartpool_test.behavior(nil)): the PoolBehavior is a nil pointer"},
		{"zero levels", &behavior{}, smartpool.RuleNoLevels, "Config.Levels is empty: a pool needs at least one level"},
		{"empty level", &behavior{levels: [][]ch{{fifo("a")}, {}}}, smartpool.RuleEmptyLevel, "level 1 has no channels"},
		{"duplicate key in a level", &behavior{levels: [][]ch{{fifo("a"), fifo("a")}}}, smartpool.RuleDuplicateKey, "key a is listed twice"},
		{"duplicate key across levels", &behavior{levels: [][]ch{{fifo("a")}, {fifo("a")}}}, smartpool.RuleDuplicateKey, "key a is listed twice"},
		{"negative workers", &behavior{workers: -1, levels: [][]ch{{fifo("a")}}}, smartpool.RuleWorkers, "Workers = -1: want 0 (GOMAXPROCS) to 65536"},
		{"too many workers", &behavior{workers: smartpool.MaxWorkers + 1, levels: [][]ch{{fifo("a")}}}, smartpool.RuleWorkers, "Workers = 65537: want 0 (GOMAXPROCS) to 65536"},
		{"negative quantum", &behavior{quantum: -1, levels: [][]ch{{fifo("a")}}}, smartpool.RuleQuantum, "Quantum = -1: want 0 to 8"},
		{"quantum too big", &behavior{quantum: smartpool.MaxQuantum + 1, levels: [][]ch{{fifo("a")}}}, smartpool.RuleQuantum, "Quantum = 9: want 0 to 8"},
		{"negative limit", &behavior{limit: -1, levels: [][]ch{{fifo("a")}}}, smartpool.ErrBadLimit, "Limit = -1: want 0 (no limit) or more"},
		{"negative MaxRunning", one(ch{key: "a", c: channels.NewFIFO(), maxRunning: -1}), smartpool.ErrBadLimit, "channel a: MaxRunning = -1: want 0 (no cap) or more"},
		{"negative MaxInFlight", one(ch{key: "a", c: channels.NewFIFO(), maxInFlight: -2, followup: "a"}), smartpool.ErrBadLimit, "channel a: MaxInFlight = -2: want 0 (no cap) or more"},
		{"MaxRunning and MaxInFlight", &behavior{levels: [][]ch{{{key: "a", c: channels.NewFIFO(), maxRunning: 1, maxInFlight: 2, followup: "b"}, fifo("b")}}},
			smartpool.RuleCapBoth, "channel a sets both MaxRunning (1) and MaxInFlight (2): set at most one"},
		{"round robin slice count", &behavior{sched: scheduler.RoundRobin(time.Millisecond), levels: [][]ch{{fifo("a")}, {fifo("b")}}}, scheduler.ErrBadPolicy,
			"Schedule refused 2 levels: scheduler: bad policy: RoundRobin has 1 slices for 2 levels, want one per level"},
		{"round robin zero slice", &behavior{sched: scheduler.RoundRobin(0), levels: [][]ch{{fifo("a")}}}, scheduler.ErrBadPolicy, ""},
		{"round robin negative slice", &behavior{sched: scheduler.RoundRobin(-time.Second), levels: [][]ch{{fifo("a")}}}, scheduler.ErrBadPolicy, ""},
		{"zero weight", &behavior{sched: scheduler.Weighted(0), levels: [][]ch{{fifo("a")}}}, scheduler.ErrBadPolicy, ""},
		{"multi of zero shards", one(ch{key: "m", c: channels.NewMulti(0, channels.NewFIFO)}), smartpool.ErrNoQueues, "channel m has 0 queues, at least 1 needed"},
		{"unknown followup", one(ch{key: "a", c: channels.NewFIFO(), followup: "zzz"}), smartpool.RuleFollowup, "followup of a is zzz, which no level lists"},
		{"followup into MaxInFlight", one(ch{key: "a", c: channels.NewFIFO(), maxInFlight: 1}), smartpool.RuleFollowup, "followup of a is a, which has a MaxInFlight cap: a yielded task would queue behind the cap it holds (name an uncapped channel as the Followup)"},
		{"coc follows up into drop", &behavior{levels: [][]ch{{{key: "a", c: channels.NewFIFO(), coc: true, followup: "b"}, {key: "b", c: channels.NewFIFO()}}}},
			smartpool.RuleFollowup, "a completes on close but its followup b does not"},
		{"nil channel", one(ch{key: "a"}), smartpool.RuleNilChannel, "Channel(a) returned nil"},
		{"typed nil channel", one(ch{key: "a", c: nilFIFO}), smartpool.RuleNilChannel, "Channel(a) returned nil"},
		{"too many queues", tooMany, smartpool.RuleTooManyQueues, "more than 4096 queues"},
		{"too many levels", manyLevels, smartpool.RuleTooManyQueues, "65 levels, at most 64"},
		{"channel already attached", one(ch{key: "x", c: attached}), smartpool.ErrAttached, "channel x already belongs to a pool"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			o, err := smartpool.New(c.b)
			require.Nil(t, o)
			require.ErrorIs(t, err, smartpool.ErrConfig)
			require.ErrorIs(t, err, c.rule)
			msg := err.Error()
			require.Equal(t, 1, strings.Count(msg, "smartpool:"), "the prefix is repeated: %q", msg)
			if c.msg != "" {
				require.Equal(t, "smartpool: bad configuration: "+c.msg, msg)
			}
		})
	}
}

// E TestSetters_RejectBadValues: the run-time setters refuse what they
// cannot do with an error that wraps ErrConfig and says which setter, which
// value and why: a worker count is not called a limit, and a pool or
// channel without the feature says so.
func TestSetters_RejectBadValues(t *testing.T) {
	o := start(t, &behavior{workers: 1, limit: 4, levels: [][]ch{{{key: "capped", c: channels.NewFIFO(), maxRunning: 2}, fifo("plain")}}})
	unlimited := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	cases := []struct {
		name string
		err  error
		rule error
		msg  string
	}{
		{"SetWorkers(0)", p.SetWorkers(0), smartpool.RuleWorkers, "SetWorkers(0): want 1 to 65536 workers"},
		{"SetWorkers(-3)", p.SetWorkers(-3), smartpool.RuleWorkers, "SetWorkers(-3): want 1 to 65536 workers"},
		{"SetWorkers(MaxWorkers+1)", p.SetWorkers(smartpool.MaxWorkers + 1), smartpool.RuleWorkers, "SetWorkers(65537): want 1 to 65536 workers"},
		{"SetCap(-1)", p.SetCap("capped", -1), smartpool.ErrBadLimit, "SetCap(capped, -1): a cap must be at least 0"},
		{"SetCap without a cap", p.SetCap("plain", 2), smartpool.RuleNotConfigured, "SetCap(plain, 2): channel plain has no cap: set MaxRunning or MaxInFlight at New"},
		{"SetLimit(-1)", p.SetLimit(-1), smartpool.ErrBadLimit, "SetLimit(-1): a limit must be at least 0"},
		{"SetLimit without a limit", unlimited.Pool().SetLimit(3), smartpool.RuleNotConfigured, "SetLimit(3): the pool has no in-flight limit: set Config.Limit at New"},
	}
	for _, c := range cases {
		require.ErrorIs(t, c.err, smartpool.ErrConfig, c.name)
		require.ErrorIs(t, c.err, c.rule, c.name)
		require.Equal(t, "smartpool: bad configuration: "+c.msg, c.err.Error(), c.name)
	}
	require.ErrorIs(t, p.SetCap("nope", 1), smartpool.ErrUnknownKey)
	require.Equal(t, 1, p.Stats().Workers, "a refused SetWorkers changes nothing")
	closeWithin(t, o, long)
	closeWithin(t, unlimited, long)
}

// E: 64 channels, 65 channels and a 4,096-queue pool all serve every queue.
func TestNew_ManyQueuesServeEveryQueue(t *testing.T) {
	for _, shape := range []struct{ levels, perLevel int }{{1, 64}, {1, 65}, {16, 256}, {1, 4096}} {
		t.Run(fmt.Sprintf("%dx%d", shape.levels, shape.perLevel), func(t *testing.T) {
			b := &behavior{workers: 2}
			for l := range shape.levels {
				var lv []ch
				for c := range shape.perLevel {
					lv = append(lv, fifo(fmt.Sprintf("%d/%d", l, c)))
				}
				b.levels = append(b.levels, lv)
			}
			o := start(t, b)
			for _, lv := range b.levels {
				for _, c := range lv {
					submit(t, o, c.key, func(context.Context) {})
				}
			}
			r := closeWithin(t, o, long)
			for _, c := range r.Channels {
				require.Equal(t, uint64(1), c.Ran, "channel %v", c.Key)
			}
		})
	}
}

// E: Workers 0 means GOMAXPROCS; a config changed after New has no effect.
func TestNew_DefaultsAndCopy(t *testing.T) {
	b := &behavior{levels: [][]ch{{fifo("a")}}}
	o := start(t, b)
	b.levels = nil
	b.workers = -5
	require.Positive(t, o.Pool().Stats().Workers)
	submit(t, o, "a", func(context.Context) {})
	r := closeWithin(t, o, long)
	require.Equal(t, uint64(1), r.Total().Ran)
}

// TestSubmit_RejectsBadCalls: nil task, then unknown key; a huge burst while
// every worker is pinned is accepted (channels are unbounded).
func TestSubmit_RejectsBadCalls(t *testing.T) {
	b := &behavior{workers: 2, limit: 1 << 20, levels: [][]ch{{fifo("a")}, {{key: "capped", c: channels.NewFIFO(), maxRunning: 1}}}}
	o := start(t, b)
	p := o.Pool()
	var nilPtr *nilRunner
	require.ErrorIs(t, p.Submit("a", nil), smartpool.ErrNilTask)
	require.ErrorIs(t, p.SubmitTask("a", nil), smartpool.ErrNilTask)
	require.ErrorIs(t, p.SubmitTask("a", smartpool.Func(nil)), smartpool.ErrNilTask, "a typed nil would panic on the worker")
	require.ErrorIs(t, p.SubmitTask("a", nilPtr), smartpool.ErrNilTask)
	require.ErrorIs(t, p.SubmitTask("a", smartpool.Func(nil), smartpool.WithContext(context.Background())), smartpool.ErrNilTask)
	require.ErrorIs(t, p.Submit("nope", nil), smartpool.ErrNilTask)
	err := p.Submit("nope", func(context.Context) {})
	require.ErrorIs(t, err, smartpool.ErrUnknownKey)
	require.ErrorContains(t, err, `"nope"`, "the error names the key")
	require.ErrorContains(t, p.SetCap("nope", 1), `"nope"`)
	g := newGate()
	for range 2 {
		submit(t, o, "a", g.task("pin"))
	}
	g.waitStarted(t, 2)
	const n = 10_000 // a deep queue; how deep does not depend on the machine's speed
	for range n {
		submit(t, o, "a", func(context.Context) {})
	}
	require.Equal(t, n, p.Stats().Total().Queued)
	close(g.release)
	r := closeWithin(t, o, long)
	require.Equal(t, uint64(n+2), r.Total().Ran)
	require.False(t, errors.Is(smartpool.ErrClosed, smartpool.ErrConfig))
	for name, err := range map[string]error{
		"SetWorkers": p.SetWorkers(1),
		"SetCap":     p.SetCap("capped", 2),
		"SetLimit":   p.SetLimit(5),
	} {
		require.ErrorIs(t, err, smartpool.ErrClosed, name)
		require.ErrorContains(t, err, "the pool is closed", name)
	}
}

// nilRunner is a Task type whose nil pointer a submit must refuse.
type nilRunner struct{ n int }

func (r *nilRunner) Run(context.Context) { r.n++ }
