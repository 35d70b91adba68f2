package smartpool_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// peak tracks the most tasks inside a section at once.
type peak struct{ live, max atomic.Int32 }

func (p *peak) enter() {
	n := p.live.Add(1)
	for m := p.max.Load(); n > m && !p.max.CompareAndSwap(m, n); m = p.max.Load() {
	}
}
func (p *peak) leave() { p.live.Add(-1) }

// A cap never lets more than N of a channel's tasks run, and while the
// capped channel waits the other channels keep every worker busy.
func TestCap_NeverExceededOthersServed(t *testing.T) {
	for range 10 / raceDivisor * 2 {
		b := &behavior{workers: 4, levels: [][]ch{{{key: "db", c: channels.NewFIFO(), coc: true, maxRunning: 2}}, {fifo("cpu")}}}
		o := start(t, b)
		var db peak
		var cpuRan atomic.Int32
		g := newGate()
		for range 50 {
			submit(t, o, "db", func(ctx context.Context) {
				db.enter()
				g.started <- "db"
				<-g.release
				db.leave()
			})
		}
		g.waitStarted(t, 2) // two db tasks hold the cap
		for range 100 {
			submit(t, o, "cpu", func(context.Context) { cpuRan.Add(1) })
		}
		// The two other workers drain the lower level although the higher
		// one has 48 queued tasks: they are not eligible.
		eventually(t, func() bool { return cpuRan.Load() == 100 })
		st, _ := o.Pool().Stats().Channel("db")
		require.Equal(t, 2, st.Held)
		require.Equal(t, 2, st.Cap)
		require.Equal(t, 48, st.Queued)
		close(g.release)
		r := closeWithin(t, o, long)
		require.EqualValues(t, 2, db.max.Load())
		d, _ := r.Channel("db")
		require.Equal(t, uint64(50), d.Ran)
		require.Zero(t, d.Held)
	}
}

// SetCap lowers and raises the cap at run time; a yielded task does
// not hold a slot while it waits.
func TestCap_SetAtRunTimeAndYield(t *testing.T) {
	b := &behavior{workers: 4, levels: [][]ch{{{key: "io", c: channels.NewFIFO(), coc: true, maxRunning: 3}}}}
	o := start(t, b)
	p := o.Pool()
	require.ErrorIs(t, p.SetCap("nope", 1), smartpool.ErrUnknownKey)
	require.ErrorIs(t, p.SetCap("io", -1), smartpool.ErrBadLimit) // 0 starts none: pause_test.go

	// Yielded tasks hold no slot: 10 tasks waiting at once with a cap of 3.
	wake := make(chan struct{})
	var waiting sync.WaitGroup
	var ran atomic.Int32
	for range 10 {
		waiting.Add(1)
		submit(t, o, "io", func(ctx context.Context) {
			smartpool.Yield(ctx, func() { waiting.Done(); <-wake })
			ran.Add(1)
		})
	}
	waiting.Wait()
	// eventually: a worker looking for work holds a slot between its reserve
	// and a poll that finds the queue empty.
	eventually(t, func() bool { st, _ := p.Stats().Channel("io"); return st.Held == 0 })
	close(wake)
	eventually(t, func() bool { return ran.Load() == 10 })

	for _, limit := range []int{1, 3} {
		require.NoError(t, p.SetCap("io", limit))
		var io peak
		g := newGate()
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			submit(t, o, "io", func(ctx context.Context) {
				defer wg.Done()
				io.enter()
				g.started <- "io"
				<-g.release
				io.leave()
			})
		}
		g.waitStarted(t, limit)
		close(g.release)
		wg.Wait()
		require.EqualValues(t, limit, io.max.Load())
	}
}

func TestCap_BadConfig(t *testing.T) {
	_, err := smartpool.New[string](&behavior{levels: [][]ch{{{key: "a", c: channels.NewFIFO(), maxRunning: -1}}}})
	require.ErrorIs(t, err, smartpool.ErrConfig)
	require.ErrorIs(t, err, smartpool.ErrBadLimit)
	o := start(t, &behavior{levels: [][]ch{{fifo("a")}}})
	require.ErrorIs(t, o.Pool().SetCap("a", 2), smartpool.ErrConfig)
}

// MaxInFlight keeps a task's slot while it yields: with a cap of 2, ten
// tasks that wait on I/O are at most two in progress at once, and the rest
// stay queued; the pool's other channels are served meanwhile.
func TestCap_InFlightHoldsAcrossYield(t *testing.T) {
	b := &behavior{workers: 2, levels: [][]ch{
		{fifo("resume")},
		{{key: "fetch", c: channels.NewFIFO(), coc: true, maxInFlight: 2, followup: "resume"}, fifo("other")},
	}}
	o := start(t, b)
	var fetch peak
	wake := make(chan struct{})
	var waiting atomic.Int32
	for range 10 {
		submit(t, o, "fetch", func(ctx context.Context) {
			fetch.enter()
			smartpool.Yield(ctx, func() { waiting.Add(1); <-wake; waiting.Add(-1) })
			fetch.leave()
		})
	}
	eventually(t, func() bool { return waiting.Load() == 2 })
	var other atomic.Int32
	for range 20 {
		submit(t, o, "other", func(context.Context) { other.Add(1) })
	}
	eventually(t, func() bool { return other.Load() == 20 })
	st, _ := o.Pool().Stats().Channel("fetch")
	require.Equal(t, 2, st.Held)
	require.Equal(t, 8, st.Queued)
	close(wake)
	r := closeWithin(t, o, long)
	require.EqualValues(t, 2, fetch.max.Load())
	f, _ := r.Channel("fetch")
	require.Equal(t, uint64(10), f.Ran)
	require.Zero(t, f.Held)
}

func TestCap_InFlightConfigRules(t *testing.T) {
	for name, b := range map[string]*behavior{
		"followup into a MaxInFlight channel":  {levels: [][]ch{{{key: "a", c: channels.NewFIFO(), followup: "b"}, {key: "b", c: channels.NewFIFO(), maxInFlight: 1, followup: "a"}}}},
		"MaxInFlight channel following itself": {levels: [][]ch{{{key: "a", c: channels.NewFIFO(), maxInFlight: 1}}}},
	} {
		_, err := smartpool.New[string](b)
		require.ErrorIs(t, err, smartpool.RuleFollowup, name)
	}
	_, err := smartpool.New[string](&behavior{levels: [][]ch{{{key: "a", c: channels.NewFIFO(), maxRunning: 1, maxInFlight: 1, followup: "b"}, fifo("b")}}})
	require.ErrorIs(t, err, smartpool.RuleCapBoth)
}
