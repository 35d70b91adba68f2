package smartpool_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// endBook is an OnEnd callback that keeps books: every ending by task.
type endBook struct {
	mu   sync.Mutex
	ends map[*named][]smartpool.Outcome
	n    chan struct{}
}

func newEndBook() *endBook {
	return &endBook{ends: map[*named][]smartpool.Outcome{}, n: make(chan struct{}, 1024)}
}

func (b *endBook) onEnd(t smartpool.Task, o smartpool.Outcome) {
	b.mu.Lock()
	if n, ok := t.(*named); ok {
		b.ends[n] = append(b.ends[n], o)
	}
	b.mu.Unlock()
	b.n <- struct{}{}
}

func (b *endBook) await(t *testing.T, n int) {
	t.Helper()
	awaitN(t, b.n, n)
}

func (b *endBook) of(n *named) []smartpool.Outcome {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ends[n]
}

// runTask is a named task with a body.
func runTask(name string, body func(ctx context.Context)) *named {
	return &named{name: name, body: body}
}

// Every outcome reaches OnEnd exactly once, with its kind, whatever ended
// the task: it ran (also after a Yield, and inline in its spawner's place),
// panicked, called runtime.Goexit, was cancelled while queued, or was
// dropped on Close, late or displaced.
func TestOnEnd_EveryOutcomeOnce(t *testing.T) {
	book := newEndBook()
	late := channels.NewDeadline(channels.DropLate())
	bounded := channels.NewBounded(1, channels.DropOldest())
	owned, err := smartpool.New(smartpool.Levels[string]{{
		{Key: "run", Channel: channels.NewFIFO(), OnEnd: book.onEnd, CompleteOnClose: true},
		{Key: "late", Channel: late, OnEnd: book.onEnd, CompleteOnClose: true}, // polled at Close: dropped late
		{Key: "bounded", Channel: bounded, OnEnd: book.onEnd},
		{Key: "drop", Channel: channels.NewFIFO(), OnEnd: book.onEnd},
	}}.With(smartpool.Config[string]{Workers: 1, StallAfter: -1, PanicHandler: func(string, *smartpool.PanicError) {}}))
	require.NoError(t, err)
	pool := owned.Pool()

	ran := runTask("ran", func(context.Context) {})
	yielded := runTask("yielded", func(ctx context.Context) { smartpool.Yield(ctx, func() {}) })
	panicked := runTask("panicked", func(context.Context) { panic("boom") })
	goexited := runTask("goexited", func(context.Context) { runtime.Goexit() })
	for _, n := range []*named{ran, yielded, panicked, goexited} {
		require.NoError(t, pool.SubmitTask("run", n))
	}
	book.await(t, 4)

	// Hold the worker, then queue what will be cancelled, late, displaced
	// and dropped on Close.
	started, gate := make(chan struct{}), make(chan struct{})
	require.NoError(t, pool.Submit("run", func(context.Context) { close(started); <-gate }))
	waitClosed(t, started)
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := runTask("cancelled", func(context.Context) {})
	require.NoError(t, pool.SubmitTask("run", cancelled, smartpool.WithContext(ctx)))
	cancel()
	lateTask := runTask("late", func(context.Context) {})
	require.NoError(t, late.SubmitTask(time.Now().Add(-time.Hour), lateTask))
	displaced := runTask("displaced", func(context.Context) {})
	require.NoError(t, bounded.SubmitTask(displaced, smartpool.WithContext(context.Background())))
	newer := runTask("newer", func(context.Context) {})
	require.NoError(t, bounded.SubmitTask(newer)) // displaces the oldest
	onClose := runTask("on-close", func(context.Context) {})
	require.NoError(t, pool.SubmitTask("drop", onClose))
	book.await(t, 2) // cancelled and displaced end at once
	closed := make(chan error, 1)
	go func() { _, err := owned.Close(context.Background()); closed <- err }()
	book.await(t, 2) // Close drops what "drop" and "bounded" hold as it starts, while the gate holds the worker
	close(gate)
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(long):
		t.Fatal("Close did not return")
	}
	report, err := owned.Close(context.Background())
	require.NoError(t, err)

	want := map[*named]smartpool.Outcome{
		ran: smartpool.Ran, yielded: smartpool.Ran, panicked: smartpool.Panicked, goexited: smartpool.Goexited,
		cancelled: smartpool.Cancelled, lateTask: smartpool.DroppedLate, displaced: smartpool.DroppedDisplaced,
		onClose: smartpool.DroppedOnClose, newer: smartpool.DroppedOnClose,
	}
	for n, o := range want {
		require.Equal(t, []smartpool.Outcome{o}, book.of(n), n.name)
	}
	// The books match the report.
	tot := report.Total()
	require.EqualValues(t, 4, tot.Dropped)
	require.EqualValues(t, 1, tot.Cancelled)
	require.EqualValues(t, 1, tot.Panicked)
	require.EqualValues(t, 1, tot.Goexited)
}

// A task its spawner runs inline (a group at its limit) ends through OnEnd
// once, as Ran; a panic in OnEnd goes to the panic handler and the pool
// carries on.
func TestOnEnd_InlineAndPanickingCallback(t *testing.T) {
	var mu sync.Mutex
	var ends []smartpool.Outcome
	panics := make(chan any, 4)
	owned, err := smartpool.New(smartpool.Levels[string]{{
		{Key: "g", Channel: channels.NewFIFO(), OnEnd: func(_ smartpool.Task, o smartpool.Outcome) {
			mu.Lock()
			ends = append(ends, o)
			mu.Unlock()
		}},
		{Key: "bad", Channel: channels.NewFIFO(), OnEnd: func(smartpool.Task, smartpool.Outcome) { panic("in OnEnd") }},
	}}.With(smartpool.Config[string]{Workers: 1, StallAfter: -1,
		PanicHandler: func(_ string, p *smartpool.PanicError) { panics <- p.Value }}))
	require.NoError(t, err)
	pool := owned.Pool()

	err = smartpool.Scope(context.Background(), pool, func(g *smartpool.Group[string]) {
		g.SetLimit(1)
		g.Go("g", func(context.Context) error {
			g.Go("g", func(context.Context) error { return nil }) // at the limit: runs inline
			return nil
		})
	})
	require.NoError(t, err)
	require.NoError(t, pool.Submit("bad", func(context.Context) {}))
	select {
	case v := <-panics:
		require.Equal(t, "in OnEnd", v)
	case <-time.After(long):
		t.Fatal("OnEnd's panic did not reach the panic handler")
	}
	report, err := owned.Close(context.Background())
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []smartpool.Outcome{smartpool.Ran, smartpool.Ran}, ends)
	require.EqualValues(t, 2, chanStat(t, report, "g").Ran)
	require.EqualValues(t, 1, chanStat(t, report, "bad").Ran)
}
