package smartpool_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// servedKind is a channel kind with a submit through its own method.
type servedKind struct {
	name   string
	make   func() smartpool.Channel
	submit func(c smartpool.Channel, fn func(context.Context)) error
}

func servedKinds() []servedKind {
	return []servedKind{
		{"FIFO", func() smartpool.Channel { return channels.NewFIFO() },
			func(c smartpool.Channel, fn func(context.Context)) error { return c.(*channels.FIFO).Submit(fn) }},
		{"Deadline", func() smartpool.Channel { return channels.NewDeadline() },
			func(c smartpool.Channel, fn func(context.Context)) error {
				return c.(*channels.Deadline).Submit(time.Now().Add(time.Hour), fn)
			}},
		{"Priority", func() smartpool.Channel { return channels.NewPriority() },
			func(c smartpool.Channel, fn func(context.Context)) error { return c.(*channels.Priority).Submit(1, fn) }},
		{"Bounded", func() smartpool.Channel { return channels.NewBounded(64) },
			func(c smartpool.Channel, fn func(context.Context)) error { return c.(*channels.Bounded).Submit(fn) }},
		{"Keyed", func() smartpool.Channel { k, _ := channels.NewKeyed[string](4); return k },
			func(c smartpool.Channel, fn func(context.Context)) error {
				return c.(*channels.Keyed[string]).Submit("g", fn)
			}},
		{"Multi", func() smartpool.Channel { return channels.NewMulti(3, channels.NewFIFO) },
			func(c smartpool.Channel, fn func(context.Context)) error {
				return c.(*channels.Multi[*channels.FIFO]).Submit(fn)
			}},
	}
}

func neverRuns(t *testing.T) func(context.Context) {
	return func(context.Context) { t.Error("a refused task ran") }
}

// A channel that is not in the configuration's levels belongs to no pool:
// it refuses every task with ErrNotServed, which says what to do, before
// the pool starts, while it runs and after it closed, and a Requeue or
// Close by mistake changes nothing.
func TestServing_ChannelNotInLevelsRefuses(t *testing.T) {
	for _, k := range servedKinds() {
		t.Run(k.name, func(t *testing.T) {
			stray := k.make()
			require.ErrorIs(t, k.submit(stray, neverRuns(t)), smartpool.ErrNotServed, "before New")
			o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
			require.ErrorIs(t, k.submit(stray, neverRuns(t)), smartpool.ErrNotServed, "while another pool runs")
			require.ErrorIs(t, src(stray).Push(smartpool.Func(neverRuns(t)), smartpool.Order{}), smartpool.ErrNotServed, "Push")
			require.ErrorIs(t, src(stray).Requeue(smartpool.Func(neverRuns(t))), smartpool.ErrNotServed, "Requeue")
			require.Nil(t, src(stray).Close(true))
			closeWithin(t, o, long)
			require.ErrorIs(t, k.submit(stray, neverRuns(t)), smartpool.ErrNotServed, "after Close")
			require.Zero(t, stray.Len())
		})
	}
}

// A New that fails after attaching some channels leaves them refusing, and
// free for another New, which then runs their tasks.
func TestServing_FailedNewLeavesChannelsRefusingAndReusable(t *testing.T) {
	for _, k := range servedKinds() {
		t.Run(k.name, func(t *testing.T) {
			taken := channels.NewFIFO()
			other := start(t, &behavior{workers: 1, levels: [][]ch{{{key: "x", c: taken, coc: true}}}})
			c := k.make()
			_, err := smartpool.New[string](&behavior{workers: 1, levels: [][]ch{
				{{key: "a", c: c, coc: true}, {key: "taken", c: taken}},
			}})
			require.ErrorIs(t, err, smartpool.ErrAttached)
			require.ErrorIs(t, k.submit(c, neverRuns(t)), smartpool.ErrNotServed, "a channel of a failed New")
			require.Nil(t, src(c).Close(true))

			o := start(t, &behavior{workers: 1, levels: [][]ch{{{key: "a", c: c, coc: true}}}})
			ran := make(chan struct{})
			require.NoError(t, k.submit(c, func(context.Context) { close(ran) }))
			waitFor(t, ran, "the task in the channel's next pool")
			r := closeWithin(t, o, long)
			require.Equal(t, uint64(1), r.Total().Ran)
			closeWithin(t, other, long)
		})
	}
}

// A user's Close(true) on a channel of a running pool removes nothing and
// closes nothing: every task still runs and is counted.
func TestServing_UserCloseWhilePoolRunsIsIgnored(t *testing.T) {
	for _, k := range servedKinds() {
		t.Run(k.name, func(t *testing.T) {
			c := k.make()
			o := start(t, &behavior{workers: 1, levels: [][]ch{{{key: "a", c: c}}}})
			busy, gate := make(chan struct{}), make(chan struct{})
			release := sync.OnceFunc(func() { close(gate) })
			t.Cleanup(release) // before the pool's close, even if the test fails
			var wg sync.WaitGroup
			wg.Add(5)
			require.NoError(t, k.submit(c, func(context.Context) { close(busy); <-gate; wg.Done() }))
			waitFor(t, busy, "the first task")
			for range 3 {
				require.NoError(t, k.submit(c, func(context.Context) { wg.Done() }))
			}
			require.Nil(t, src(c).Close(true), "a user's Close returned tasks")
			require.Nil(t, src(c).Close(false))
			require.Equal(t, 3, c.Len())
			require.NoError(t, k.submit(c, func(context.Context) { wg.Done() }), "admission after a user's Close")
			release()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			waitFor(t, done, "every task")
			r := closeWithin(t, o, long)
			require.Equal(t, uint64(5), r.Total().Ran)
			require.Zero(t, r.Total().Dropped)
		})
	}
}
