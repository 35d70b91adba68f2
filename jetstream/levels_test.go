package jetstream

import (
	"context"
	"sync"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// Two JetStream channels in different levels around a local FIFO: with
// everything queued, one worker serves them highest level first, as with
// local channels only.
func TestLevelsMixJetStreamAndLocal(t *testing.T) {
	c := embedded(t, t.TempDir(), false)
	var mu sync.Mutex
	var order []string
	record := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	reg := NewRegistry()
	if err := reg.Handle("rec", func(_ context.Context, p []byte) error { record(string(p)); return nil }); err != nil {
		t.Fatal(err)
	}
	const n = 5
	hi, err := c.Channel(testCtx(t), "hi", reg, ChannelOptions{Prefetch: n})
	if err != nil {
		t.Fatal(err)
	}
	lo, err := c.Channel(testCtx(t), "lo", reg, ChannelOptions{Prefetch: n})
	if err != nil {
		t.Fatal(err)
	}
	local := channels.NewFIFO()
	p, err := smartpool.New[string](&behavior{workers: 1, levels: [][]string{{"hi"}, {"local"}, {"lo"}},
		chans: map[string]smartpool.Channel{"hi": hi, "local": local, "lo": lo}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closePool(t, p) })
	started, release := make(chan struct{}), make(chan struct{})
	if err := local.Submit(func(context.Context) { close(started); <-release }); err != nil { // holds the worker
		t.Fatal(err)
	}
	<-started
	publishN(t, c, "lo", "rec", "lo", n)
	publishN(t, c, "hi", "rec", "hi", n)
	for range n {
		if err := local.Submit(func(context.Context) { record("local") }); err != nil {
			t.Fatal(err)
		}
	}
	until(t, "both JetStream channels prefetched", func() bool {
		return hi.Stats().Queued == n && lo.Stats().Queued == n
	})
	close(release)
	until(t, "all ran", func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 3*n })
	mu.Lock()
	defer mu.Unlock()
	for i, s := range order {
		want := [...]string{"hi", "local", "lo"}[i/n]
		if len(s) < len(want) || s[:len(want)] != want {
			t.Fatalf("run %d was %q, want a %s task: order %v", i, s, want, order)
		}
	}
}
