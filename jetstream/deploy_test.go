package jetstream

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// A rolling deploy caught midway: process A runs the old code (no handler
// "new"), B and C the new, and a backlog flows. Every "new" task that A
// fetched starts on B or C within UnknownDelay plus one fetch (fetchWait,
// the most a long poll lasts) of A's parking it (ahead of the backlog, not behind it), A is not the next
// taker of the copies it passes on (at most one pass per task on
// average), and A never holds more than its Prefetch, parked messages
// included.
func TestRollingDeployDelayBounded(t *testing.T) {
	srv := embedded(t, t.TempDir(), true)
	const (
		prefetch = 4
		delay    = 200 * time.Millisecond
		work     = 20 * time.Millisecond // each task's run: the backlog lasts seconds
		n        = 900                   // one in three "new"
	)
	opts := ChannelOptions{Prefetch: prefetch, UnknownDelay: delay}
	var mu sync.Mutex
	parked := map[string]time.Time{}  // payload: when A first parked it
	started := map[string]time.Time{} // payload: when B or C started it
	ty := newTally()
	run := func(ctx context.Context, p []byte) error {
		mu.Lock()
		if _, ok := started[string(p)]; !ok {
			started[string(p)] = time.Now()
		}
		mu.Unlock()
		time.Sleep(work) // the task's work
		return ty.handler(ctx, p)
	}
	var ids, newIDs []string
	for i := range n {
		h := "old"
		if i%3 == 0 {
			h = "new"
		}
		id := fmt.Sprintf("%s-%d", h, i)
		if h == "new" {
			newIDs = append(newIDs, id)
		}
		ids = append(ids, id)
		if _, err := srv.Publish(testCtx(t), "roll", h, []byte(id), WithMsgID(id)); err != nil {
			t.Fatal(err)
		}
	}
	open := func(handlers ...string) *Channel {
		c, err := Connect(testCtx(t), srv.URL(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		reg := NewRegistry()
		for _, h := range handlers {
			if err := reg.Handle(h, run); err != nil {
				t.Fatal(err)
			}
		}
		ch, err := c.Channel(testCtx(t), "roll", reg, opts)
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	chA := open("old")
	chA.onPark = func(m *message) {
		mu.Lock()
		if _, ok := parked[string(m.msg.Data())]; !ok {
			parked[string(m.msg.Data())] = time.Now()
		}
		mu.Unlock()
	}
	chB, chC := open("old", "new"), open("old", "new")
	for _, ch := range []*Channel{chA, chB, chC} {
		onePool(t, ch, 2)
	}
	ty.waitAll(t, ids)

	mu.Lock()
	var delays []time.Duration
	for id, at := range parked {
		delays = append(delays, started[id].Sub(at))
	}
	mu.Unlock()
	slices.Sort(delays)
	ran, twice, lost := ty.summary(ids)
	sa, sb, sc := chA.Stats(), chB.Stats(), chC.Stats()
	passes := sa.PassedOn + sb.PassedOn + sc.PassedOn
	chA.mu.Lock()
	peak := chA.peak
	chA.mu.Unlock()
	if len(delays) == 0 {
		t.Fatal("A parked no message: the test tests nothing")
	}
	limit := delay + fetchWait + 500*time.Millisecond // one fetch: a long poll's end at most, and a little for -race
	t.Logf("A parked %d of %d new tasks; delay from A's park to a start elsewhere p50 %v, p90 %v, max %v (limit %v); passes %d (%.2f per new task); A's peak window %d of %d; ran %d (twice %d), lost %d",
		len(delays), len(newIDs), delays[len(delays)/2], delays[len(delays)*9/10], delays[len(delays)-1], limit,
		passes, float64(passes)/float64(len(newIDs)), peak, prefetch, ran, twice, lost)
	if lost != 0 {
		t.Fatalf("lost %d", lost)
	}
	if d := delays[len(delays)-1]; d > limit {
		t.Errorf("a new task waited %v after A parked it, want at most UnknownDelay plus one fetch (%v)", d, limit)
	}
	if passes > uint64(len(newIDs)) {
		t.Errorf("%d passes for %d new tasks: want at most one per task on average", passes, len(newIDs))
	}
	if peak > prefetch {
		t.Errorf("A held %d messages at once (queued and parked), want at most Prefetch %d", peak, prefetch)
	}
}
