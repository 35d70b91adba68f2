package smartpool_test

import (
	"context"
	"errors"
	"fmt"
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

// E TestNew_RejectsBadConfig: every mistake is an error wrapping ErrConfig and
// its rule's sentinel; no goroutine is started.
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
	cases := []struct {
		name string
		b    *behavior
		rule error
	}{
		{"zero levels", &behavior{}, smartpool.ErrNoLevels},
		{"empty level", &behavior{levels: [][]ch{{fifo("a")}, {}}}, smartpool.ErrEmptyLevel},
		{"duplicate key in a level", &behavior{levels: [][]ch{{fifo("a"), fifo("a")}}}, smartpool.ErrDuplicateKey},
		{"duplicate key across levels", &behavior{levels: [][]ch{{fifo("a")}, {fifo("a")}}}, smartpool.ErrDuplicateKey},
		{"negative workers", &behavior{workers: -1, levels: [][]ch{{fifo("a")}}}, smartpool.ErrNegativeWorker},
		{"too many workers", &behavior{workers: smartpool.MaxWorkers + 1, levels: [][]ch{{fifo("a")}}}, smartpool.ErrTooManyWorkers},
		{"round robin slice count", &behavior{sched: scheduler.RoundRobin(time.Millisecond), levels: [][]ch{{fifo("a")}, {fifo("b")}}}, scheduler.ErrBadPolicy},
		{"round robin zero slice", &behavior{sched: scheduler.RoundRobin(0), levels: [][]ch{{fifo("a")}}}, scheduler.ErrBadPolicy},
		{"round robin negative slice", &behavior{sched: scheduler.RoundRobin(-time.Second), levels: [][]ch{{fifo("a")}}}, scheduler.ErrBadPolicy},
		{"zero weight", &behavior{sched: scheduler.Weighted(0), levels: [][]ch{{fifo("a")}}}, scheduler.ErrBadPolicy},
		{"multi of zero shards", &behavior{levels: [][]ch{{{key: "m", c: channels.NewMulti(0, channels.NewFIFO)}}}}, smartpool.ErrNoQueues},
		{"unknown followup", &behavior{levels: [][]ch{{{key: "a", c: channels.NewFIFO(), followup: "zzz"}}}}, smartpool.ErrFollowup},
		{"coc follows up into drop", &behavior{levels: [][]ch{{{key: "a", c: channels.NewFIFO(), coc: true, followup: "b"}, {key: "b", c: channels.NewFIFO()}}}}, smartpool.ErrFollowup},
		{"nil channel", &behavior{levels: [][]ch{{{key: "a"}}}}, smartpool.ErrNilChannel},
		{"typed nil channel", &behavior{levels: [][]ch{{{key: "a", c: nilFIFO}}}}, smartpool.ErrNilChannel},
		{"too many queues", tooMany, smartpool.ErrTooManyQueues},
		{"too many levels", manyLevels, smartpool.ErrTooManyQueues},
		{"channel already attached", &behavior{levels: [][]ch{{{key: "x", c: attached}}}}, smartpool.ErrAttached},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			o, err := smartpool.New[string](c.b)
			require.Nil(t, o)
			require.ErrorIs(t, err, smartpool.ErrConfig)
			require.ErrorIs(t, err, c.rule)
		})
	}
	o, err = smartpool.New[string](nil)
	require.Nil(t, o)
	require.ErrorIs(t, err, smartpool.ErrConfig)
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
	b := &behavior{workers: 2, levels: [][]ch{{fifo("a")}}}
	o := start(t, b)
	require.ErrorIs(t, o.Pool().Submit("a", nil), smartpool.ErrNilTask)
	require.ErrorIs(t, o.Pool().SubmitTask("a", nil), smartpool.ErrNilTask)
	require.ErrorIs(t, o.Pool().Submit("nope", nil), smartpool.ErrNilTask)
	require.ErrorIs(t, o.Pool().Submit("nope", func(context.Context) {}), smartpool.ErrUnknownKey)
	g := newGate()
	for range 2 {
		submit(t, o, "a", g.task("pin"))
	}
	g.waitStarted(t, 2)
	n := scale(1_000_000)
	for range n {
		submit(t, o, "a", func(context.Context) {})
	}
	require.Equal(t, n, o.Pool().Stats().Total().Queued)
	close(g.release)
	r := closeWithin(t, o, long)
	require.Equal(t, uint64(n+2), r.Total().Ran)
	require.False(t, errors.Is(smartpool.ErrClosed, smartpool.ErrConfig))
}
