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

// Every drop is counted under its cause, in its channel's DroppedBy and in
// Total, while Dropped keeps the sum, and OnEnd sees the same outcomes. One
// pool holds a channel per cause: a FIFO whose tasks Close drops, a
// DropLate Deadline whose tasks are late, a DropOldest Bounded that
// displaces, and a FIFO removed with Drop. A single worker is held busy by
// a gate task while the tasks queue, so that none runs before its drop.
func TestDropCauses(t *testing.T) {
	const n = 3
	gate, fifo, removed := channels.NewFIFO(), channels.NewFIFO(), channels.NewFIFO()
	late := channels.NewDeadline(channels.DropLate())
	full := channels.NewBounded(1, channels.DropOldest())
	var mu sync.Mutex
	ends := map[string]map[smartpool.Outcome]int{}
	onEnd := func(key string) func(smartpool.Task, smartpool.Outcome) {
		return func(_ smartpool.Task, o smartpool.Outcome) {
			mu.Lock()
			defer mu.Unlock()
			if ends[key] == nil {
				ends[key] = map[smartpool.Outcome]int{}
			}
			ends[key][o]++
		}
	}
	lv := smartpool.Levels[string]{{
		{Key: "gate", Channel: gate, CompleteOnClose: true},
		{Key: "close", Channel: fifo, OnEnd: onEnd("close")},
		{Key: "late", Channel: late, OnEnd: onEnd("late")},
		{Key: "displaced", Channel: full, OnEnd: onEnd("displaced")},
		{Key: "removed", Channel: removed, OnEnd: onEnd("removed")},
	}}
	o, err := smartpool.New(lv.With(smartpool.Config[string]{Workers: 1, Spare: []int{}}))
	require.NoError(t, err)
	started, release := make(chan struct{}), make(chan struct{})
	require.NoError(t, gate.Submit(func(context.Context) { close(started); <-release }))
	<-started // the one worker is held: nothing below runs before it is dropped
	noop := func(context.Context) {}
	past := time.Now().Add(-time.Hour)
	for range n {
		require.NoError(t, fifo.Submit(noop))
		require.NoError(t, late.Submit(past, noop))
		require.NoError(t, removed.Submit(noop))
	}
	for range n + 1 { // each submit past the first displaces the one before
		require.NoError(t, full.Submit(noop))
	}
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	// The removal waits for nothing but its drops, which run on this
	// goroutine: the worker is still held.
	st, err := o.Pool().RemoveChannel(ctx, "removed", smartpool.Drop)
	require.NoError(t, err)
	require.Equal(t, smartpool.Drops{Removed: n}, st.DroppedBy)
	require.Equal(t, uint64(n), st.Dropped)
	// Paused, the channels whose tasks Close must drop keep them queued
	// while the worker drains the late ones; Close resumes and drops them.
	require.NoError(t, o.Pool().Pause("close"))
	require.NoError(t, o.Pool().Pause("displaced"))
	close(release)
	// The worker takes the late tasks and drops them; wait for that before
	// Close, which would drop them first, as on close.
	eventually(t, func() bool { c, _ := o.Pool().Stats().Channel("late"); return c.Dropped == n })
	r := closeWithin(t, o, long)

	// The Bounded's last task, never displaced, is dropped by Close.
	want := map[string]smartpool.Drops{"close": {OnClose: n}, "late": {Late: n}, "displaced": {Displaced: n, OnClose: 1}}
	for key, by := range want {
		c, ok := r.Channel(key)
		require.True(t, ok, key)
		require.Equal(t, by, c.DroppedBy, key)
		require.Equal(t, by.OnClose+by.Late+by.Displaced+by.Removed, c.Dropped, key)
	}
	require.Equal(t, smartpool.Drops{Removed: n}, r.Removed.DroppedBy)
	tot := r.Total()
	require.Equal(t, smartpool.Drops{OnClose: n + 1, Late: n, Displaced: n, Removed: n}, tot.DroppedBy)
	require.Equal(t, uint64(4*n+1), tot.Dropped)

	// OnEnd sees the outcomes the causes name: a removal's drops end as
	// DroppedOnClose.
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[smartpool.Outcome]int{smartpool.DroppedOnClose: n}, ends["close"])
	require.Equal(t, map[smartpool.Outcome]int{smartpool.DroppedLate: n}, ends["late"])
	require.Equal(t, map[smartpool.Outcome]int{smartpool.DroppedDisplaced: n, smartpool.DroppedOnClose: 1}, ends["displaced"])
	require.Equal(t, map[smartpool.Outcome]int{smartpool.DroppedOnClose: n}, ends["removed"])

	// The string form names a cause other than Close.
	s := r.String()
	require.Contains(t, s, "3 (late 3)")
	require.Contains(t, s, "4 (close 1, displaced 3)")
}
