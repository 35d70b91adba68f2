package smartpool_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// reentryOrder runs, on one worker: task "yielder" (queued by submit with
// its key) yields; a blocker then holds the worker while "other" (queued by
// submitOther) and the yielder's re-entry wait in channel c; it returns the
// order in which the two then run.
func reentryOrder(t *testing.T, c smartpool.Channel, submit, submitOther, submitBlocker func(func(context.Context)) error) []string {
	t.Helper()
	start(t, &behavior{workers: 1, levels: [][]ch{{{key: "c", c: c, coc: true}}}})
	var mu sync.Mutex
	var order []string
	record := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	suspended, wake := make(chan struct{}), make(chan struct{})
	done := make(chan struct{}, 2)
	require.NoError(t, submit(func(ctx context.Context) {
		smartpool.Yield(ctx, func() { close(suspended); <-wake })
		record("yielder")
		done <- struct{}{}
	}))
	waitFor(t, suspended, "the task to yield")
	g := newGate()
	require.NoError(t, submitBlocker(g.task("blocker")))
	g.waitStarted(t, 1)
	require.NoError(t, submitOther(func(context.Context) { record("other"); done <- struct{}{} }))
	close(wake)
	eventually(t, func() bool { return c.Len() == 2 }) // the re-entry is queued
	close(g.release)
	for range 2 {
		select {
		case <-done:
		case <-time.After(long):
			t.Fatal("the two tasks did not both run")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return order
}

// A task that yields keeps its priority when it re-enters a Priority.
func TestReentry_KeepsPriority(t *testing.T) {
	p := channels.NewPriority()
	order := reentryOrder(t, p,
		func(fn func(context.Context)) error { return p.Submit(100, fn) },
		func(fn func(context.Context)) error { return p.Submit(50, fn) },
		func(fn func(context.Context)) error { return p.Submit(1000, fn) })
	require.Equal(t, []string{"yielder", "other"}, order, "priority 100 re-enters ahead of 50")
}

// A task that yields keeps its deadline when it re-enters a Deadline.
func TestReentry_KeepsDeadline(t *testing.T) {
	d := channels.NewDeadline()
	now := time.Now()
	order := reentryOrder(t, d,
		func(fn func(context.Context)) error { return d.Submit(now.Add(time.Hour), fn) },
		func(fn func(context.Context)) error { return d.Submit(now.Add(30*time.Minute), fn) },
		func(fn func(context.Context)) error { return d.Submit(now.Add(-time.Hour), fn) })
	require.Equal(t, []string{"other", "yielder"}, order, "a deadline an hour away re-enters behind one half an hour away")
}

// The same through a Multi of Priority shards.
func TestReentry_KeepsPriorityInMulti(t *testing.T) {
	m := channels.NewMulti(1, channels.NewPriority)
	p := m.Shards()[0]
	order := reentryOrder(t, m,
		func(fn func(context.Context)) error { return p.Submit(100, fn) },
		func(fn func(context.Context)) error { return p.Submit(50, fn) },
		func(fn func(context.Context)) error { return p.Submit(1000, fn) })
	require.Equal(t, []string{"yielder", "other"}, order, "priority 100 re-enters ahead of 50")
}
