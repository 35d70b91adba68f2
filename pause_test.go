package smartpool_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// pauseLayouts places the paused channel "a" and its sibling "b" so that
// every way a worker finds a task is tried: a above b (the search would
// choose a first), both in the lowest level (batch polls into run
// buffers), a below b, and a capped (reserve is the guard).
func pauseLayouts() map[string]*behavior {
	return map[string]*behavior{
		"above":       {workers: 2, levels: [][]ch{{fifo("a")}, {fifo("b")}}},
		"same-level":  {workers: 2, levels: [][]ch{{fifo("a"), fifo("b")}}},
		"below":       {workers: 2, levels: [][]ch{{fifo("b")}, {fifo("a")}}},
		"maxRunning":  {workers: 2, levels: [][]ch{{{key: "a", c: channels.NewFIFO(), coc: true, maxRunning: 4}}, {fifo("b")}}},
		"maxInFlight": {workers: 2, levels: [][]ch{{{key: "a", c: channels.NewFIFO(), coc: true, maxInFlight: 4, followup: "b"}}, {fifo("b")}}},
	}
}

// A paused channel accepts tasks but no worker takes them, while tasks of a
// sibling submitted after them run; Resume runs them. The pool is idle when
// the paused channel's tasks arrive, so the wake-up's hand-over is tried
// too (channels.FIFO declares Bits.WakesOutsideLock).
func TestPause_QueuesWhileSiblingRuns(t *testing.T) {
	for name, b := range pauseLayouts() {
		t.Run(name, func(t *testing.T) {
			o := start(t, b)
			p := o.Pool()
			require.NoError(t, p.Pause("a"))
			require.NoError(t, p.Pause("a"), "pausing a paused channel")
			const n = 20
			var aRan atomic.Int32
			var bDone sync.WaitGroup
			for range n {
				submit(t, o, "a", func(context.Context) { aRan.Add(1) })
			}
			bDone.Add(n)
			var seenA atomic.Int32 // a's tasks run when a b task ran: must stay 0
			for range n {
				submit(t, o, "b", func(context.Context) {
					seenA.Add(aRan.Load())
					bDone.Done()
				})
			}
			bDone.Wait()
			require.Zero(t, seenA.Load(), "a paused channel's task ran before its sibling's")
			require.Zero(t, aRan.Load())
			st, _ := p.Stats().Channel("a")
			require.True(t, st.Paused)
			require.Equal(t, n, st.Queued)
			require.Regexp(t, `(?m)^\s*\d+\s+a\s+complete\s+yes\s+20\s`, p.Stats().String())

			require.NoError(t, p.Resume("a"))
			require.NoError(t, p.Resume("a"), "resuming a running channel")
			// A task is counted after its function returns: wait for the
			// counts, not for the functions.
			eventually(t, func() bool { st, _ := p.Stats().Channel("a"); return st.Ran == n })
			require.EqualValues(t, n, aRan.Load())
			st, _ = p.Stats().Channel("a")
			require.False(t, st.Paused)
			require.Zero(t, st.Queued)
		})
	}
}

// Tasks of a channel paused while they wait behind a busy worker do not
// start, and the busy worker finds the sibling's work instead.
func TestPause_WhileQueued(t *testing.T) {
	b := &behavior{workers: 1, levels: [][]ch{{fifo("a")}, {fifo("b")}}}
	o := start(t, b)
	p := o.Pool()
	g := newGate()
	submit(t, o, "b", g.task("hold")) // the only worker is busy
	g.waitStarted(t, 1)
	var aRan atomic.Int32
	for range 5 {
		submit(t, o, "a", func(context.Context) { aRan.Add(1) })
	}
	require.NoError(t, p.Pause("a"))
	bRan := make(chan struct{})
	submit(t, o, "b", func(context.Context) { close(bRan) })
	close(g.release)
	waitFor(t, bRan, "the sibling's task")
	require.Zero(t, aRan.Load())
	require.NoError(t, p.Resume("a"))
	eventually(t, func() bool { return aRan.Load() == 5 })
}

// A task that yields and re-enters through a paused followup channel waits
// in its queue, though workers are idle (it would take one for itself), and
// goes on after Resume.
func TestPause_ReentryWaits(t *testing.T) {
	b := &behavior{workers: 2, levels: [][]ch{{{key: "a", c: channels.NewFIFO(), coc: true, followup: "r"}, fifo("r"), fifo("b")}}}
	o := start(t, b)
	p := o.Pool()
	waiting, wake := make(chan struct{}), make(chan struct{})
	var after atomic.Bool
	done := make(chan struct{})
	submit(t, o, "a", func(ctx context.Context) {
		smartpool.Yield(ctx, func() { close(waiting); <-wake })
		after.Store(true)
		close(done)
	})
	<-waiting
	require.NoError(t, p.Pause("r"))
	close(wake)
	eventually(t, func() bool { st, _ := p.Stats().Channel("r"); return st.Queued == 1 })
	bRan := make(chan struct{})
	submit(t, o, "b", func(context.Context) { close(bRan) })
	waitFor(t, bRan, "the sibling's task")
	require.False(t, after.Load(), "a task re-entering through a paused channel went on")
	require.NoError(t, p.Resume("r"))
	waitFor(t, done, "the re-entered task")
}

// Close of a pool with a paused channel: a complete-on-close channel is
// resumed for the drain and runs every queued task; a dropping one's are
// dropped and reported. A capped channel set to 0 by SetCap is raised back
// for the drain likewise. Close never waits for a Resume.
func TestPause_Close(t *testing.T) {
	const n = 7
	for _, tc := range []struct {
		name   string
		coc    bool
		capped bool
	}{{"complete", true, false}, {"drop", false, false}, {"complete-cap0", true, true}, {"drop-cap0", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			a := ch{key: "a", c: channels.NewFIFO(), coc: tc.coc}
			if tc.capped {
				a.maxRunning = 2
			}
			o := start(t, &behavior{workers: 2, levels: [][]ch{{a, fifo("b")}}})
			p := o.Pool()
			require.NoError(t, p.Pause("a"))
			if tc.capped {
				require.NoError(t, p.SetCap("a", 0))
			}
			var ran atomic.Int32
			for range n {
				submit(t, o, "a", func(context.Context) { ran.Add(1) })
			}
			if tc.capped { // the cap alone holds them
				require.NoError(t, p.Resume("a"))
			}
			r := closeWithin(t, o, long)
			st, _ := r.Channel("a")
			require.False(t, st.Paused)
			require.Zero(t, st.Queued)
			if tc.coc {
				require.EqualValues(t, n, st.Ran)
				require.Zero(t, st.Dropped)
				require.EqualValues(t, n, ran.Load())
			} else {
				require.EqualValues(t, n, st.Dropped)
				require.Zero(t, st.Ran)
				require.Zero(t, ran.Load())
			}
			if tc.capped {
				require.Equal(t, 2, st.Cap, "Close raised the cap back to New's")
			}

			if tc.capped {
				require.ErrorIs(t, p.SetCap("a", 0), smartpool.ErrClosed)
			}
			err := p.Pause("a")
			require.ErrorIs(t, err, smartpool.ErrClosed)
			require.Equal(t, "smartpool: Pause(a): the pool is closed", err.Error())
			require.ErrorIs(t, p.Resume("a"), smartpool.ErrClosed)
		})
	}
}

func TestPause_UnknownKey(t *testing.T) {
	o := start(t, &behavior{levels: [][]ch{{fifo("a")}}})
	require.ErrorIs(t, o.Pool().Pause("nope"), smartpool.ErrUnknownKey)
	require.ErrorIs(t, o.Pool().Resume("nope"), smartpool.ErrUnknownKey)
}

// SetCap(key, 0) starts none of a capped channel's tasks while its sibling
// runs; Resume does not raise it; SetCap raises it and the queued tasks
// run, within the new cap. SetCap while paused takes effect at Resume.
func TestSetCap_Zero(t *testing.T) {
	b := &behavior{workers: 4, levels: [][]ch{{{key: "a", c: channels.NewFIFO(), coc: true, maxRunning: 3}}, {fifo("b")}}}
	o := start(t, b)
	p := o.Pool()
	require.NoError(t, p.SetCap("a", 0))
	var aRan atomic.Int32
	var a peak
	g := newGate()
	for range 6 {
		submit(t, o, "a", func(context.Context) {
			a.enter()
			aRan.Add(1)
			g.started <- "a"
			<-g.release
			a.leave()
		})
	}
	bRan := make(chan struct{})
	submit(t, o, "b", func(context.Context) { close(bRan) })
	waitFor(t, bRan, "the sibling's task")
	require.Zero(t, aRan.Load())
	require.NoError(t, p.Resume("a")) // not paused: Resume leaves a cap of 0 alone
	bRan2 := make(chan struct{})
	submit(t, o, "b", func(context.Context) { close(bRan2) })
	waitFor(t, bRan2, "the sibling's second task")
	require.Zero(t, aRan.Load())
	st, _ := p.Stats().Channel("a")
	require.Equal(t, 0, st.Cap)
	require.Equal(t, 6, st.Queued)

	require.NoError(t, p.Pause("a"))
	require.NoError(t, p.SetCap("a", 2)) // paused: the cap waits for Resume
	bRan3 := make(chan struct{})
	submit(t, o, "b", func(context.Context) { close(bRan3) })
	waitFor(t, bRan3, "the sibling's third task")
	require.Zero(t, aRan.Load())
	st, _ = p.Stats().Channel("a")
	require.Equal(t, 2, st.Cap)
	require.True(t, st.Paused)

	require.NoError(t, p.Resume("a"))
	g.waitStarted(t, 2)
	close(g.release)
	eventually(t, func() bool { return aRan.Load() == 6 })
	require.EqualValues(t, 2, a.max.Load())
}

// SetLimit(0) admits nothing until raised: Submit returns ErrFull, a
// waiting submit waits, and tasks admitted before run to their end.
func TestSetLimit_Zero(t *testing.T) {
	o := start(t, &behavior{workers: 2, limit: 4, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	g := newGate()
	submit(t, o, "a", g.task("admitted"))
	g.waitStarted(t, 1)
	require.NoError(t, p.SetLimit(0))
	require.ErrorIs(t, p.Submit("a", func(context.Context) {}), smartpool.ErrFull)
	require.Equal(t, 0, p.Stats().Limit)

	waited := make(chan error, 1)
	ran := make(chan struct{})
	go func() {
		waited <- p.Submit("a", func(context.Context) { close(ran) }, smartpool.WithContext(context.Background()))
	}()
	eventually(t, func() bool { return p.Stats().Waiting == 1 })
	close(g.release) // the admitted task ends: its unit frees, yet the limit is 0
	eventually(t, func() bool { return p.Stats().Admitted == 0 })
	require.Equal(t, 1, p.Stats().Waiting, "a waiting submit was admitted at a limit of 0")
	require.ErrorIs(t, p.Submit("a", func(context.Context) {}), smartpool.ErrFull)

	require.NoError(t, p.SetLimit(1))
	require.NoError(t, <-waited)
	waitFor(t, ran, "the admitted task")
}

// A wait at SetLimit(0) ends with ErrClosed when Close starts.
func TestSetLimit_ZeroThenClose(t *testing.T) {
	o, err := smartpool.New[string](&behavior{workers: 1, limit: 1, levels: [][]ch{{fifo("a")}}})
	require.NoError(t, err)
	p := o.Pool()
	require.NoError(t, p.SetLimit(0))
	waited := make(chan error, 1)
	go func() { waited <- p.Submit("a", func(context.Context) {}, smartpool.WithContext(context.Background())) }()
	eventually(t, func() bool { return p.Stats().Waiting == 1 })
	closeWithin(t, o, long)
	require.True(t, errors.Is(<-waited, smartpool.ErrClosed))
	require.True(t, strings.Contains(p.SetLimit(1).Error(), "closed"))
}
