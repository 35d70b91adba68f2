package jetstream

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// SIGTERM-like stops of a consumer while a producer publishes: each round,
// a process consumes for a while, then closes its pool (dropping) and its
// client, with a fetch likely in flight. With AckWait far beyond the test's
// bound, a message left to AckWait would make the last process's wait fail:
// every message must be handed back at once.
func TestCloseLeavesNoAckWaitTail(t *testing.T) {
	srv := embedded(t, t.TempDir(), true)
	ty := newTally()
	reg := NewRegistry()
	if err := reg.Handle("work", func(ctx context.Context, p []byte) error {
		time.Sleep(200 * time.Microsecond) // the work itself
		return ty.handler(ctx, p)
	}); err != nil {
		t.Fatal(err)
	}
	opts := ChannelOptions{AckWait: 5 * time.Minute, Prefetch: 16}
	const n = 1500
	ids := make(chan []string, 1)
	go func() { // the producer
		var out []string
		for i := range n {
			id := fmt.Sprintf("s-%d", i)
			if _, err := srv.Publish(context.Background(), "term", "work", []byte(id)); err != nil {
				t.Error(err)
				break
			}
			out = append(out, id)
		}
		ids <- out
	}()
	consumer := func() (*Client, *Channel) {
		c, err := Connect(testCtx(t), srv.URL(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		ch, err := c.Channel(testCtx(t), "term", reg, opts)
		if err != nil {
			t.Fatal(err)
		}
		return c, ch
	}
	var handedBack uint64
	for round := range 4 {
		c, ch := consumer()
		p := onePool(t, ch, 2)
		target := (round + 1) * n / 6
		ty.waitFor(t, fmt.Sprintf("%d ran", target), func(r map[string]int) bool { return len(r) >= target })
		closePool(t, p) // SIGTERM: the pool first, then the client
		start := time.Now()
		c.Close()
		s := ch.Stats()
		handedBack += s.HandedBack
		t.Logf("round %d: client Close took %v; %+v", round, time.Since(start).Round(time.Millisecond), s)
		if s.Held != 0 {
			t.Fatalf("round %d: %d messages still held after Close", round, s.Held)
		}
	}
	c, ch := consumer()
	defer c.Close()
	onePool(t, ch, 2)
	all := recv(t, ids, "the producer")
	ty.waitAll(t, all)
	ran, twice, lost := ty.summary(all)
	t.Logf("published %d, ran %d (twice %d), lost %d; handed back %d over 4 stops; last %+v", len(all), ran, twice, lost, handedBack, ch.Stats())
}

// The server stops and starts again (same port, same directory) while four
// producers publish without message IDs of their own. Every Publish that
// returned nil is stored exactly once (the stream holds exactly those
// messages, one copy each); one that returned an error is not stored; and
// with 20 s each to ride out the restart, none returns an error. A consumer
// that starts afterwards runs each once.
func TestPublishAcrossServerRestart(t *testing.T) {
	dir := t.TempDir()
	srv, err := Embedded(testCtx(t), EmbeddedOptions{Dir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(srv.URL(), "nats://")
	prod, err := Connect(testCtx(t), srv.URL(), Options{ReconnectWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ty := newTally()
	reg := NewRegistry()
	if err := reg.Handle("work", ty.handler); err != nil {
		t.Fatal(err)
	}
	const n = 600
	var mu sync.Mutex
	ok, failed := map[string]bool{}, map[string]error{}
	progress := make(chan int, n)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				id := fmt.Sprintf("r-%d", i)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				_, err := prod.Publish(ctx, "restart", "work", []byte(id))
				cancel()
				mu.Lock()
				if err == nil {
					ok[id] = true
				} else {
					failed[id] = err
				}
				mu.Unlock()
				progress <- 1
			}
		})
	}
	for k := 0; k < n/4; k += <-progress {
	}
	srv.Close()
	srv, err = Embedded(testCtx(t), EmbeddedOptions{Dir: dir, Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	wg.Wait()
	var okIDs []string
	for id := range ok {
		okIDs = append(okIDs, id)
	}
	stored, err := srv.Backlog(testCtx(t), "restart")
	if err != nil {
		t.Fatal(err)
	}
	cons, err := Connect(testCtx(t), srv.URL(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ch, err := cons.Channel(testCtx(t), "restart", reg, ChannelOptions{Prefetch: 8})
	if err != nil {
		t.Fatal(err)
	}
	onePool(t, ch, 2)
	ty.waitAll(t, okIDs)
	until(t, "the stream empty and nothing held", func() bool {
		b, err := srv.Backlog(testCtx(t), "restart")
		return err == nil && b == 0 && ch.Stats().Held == 0
	})
	ran, twice, _ := ty.summary(okIDs)
	var strays []string
	ty.mu.Lock()
	for id := range failed {
		if ty.runs[id] > 0 {
			strays = append(strays, id)
		}
	}
	ty.mu.Unlock()
	pc := prod.ConnStats()
	t.Logf("published %d: %d returned nil, %d an error; stream held %d; ran %d (twice %d); producer %+v",
		n, len(ok), len(failed), stored, ran, twice, pc)
	for id, err := range failed {
		t.Logf("%s: %v", id, err)
	}
	if len(failed) != 0 { // each had 20 s to ride out a restart of well under a second
		t.Errorf("%d publishes failed across the restart", len(failed))
	}
	if stored != uint64(len(ok)) || len(strays) != 0 || twice != 0 {
		t.Fatalf("stored %d for %d confirmed publishes, ran twice %d; failed publishes stored: %v", stored, len(ok), twice, strays)
	}
	if pc.Disconnects == 0 || pc.Reconnects == 0 {
		t.Fatalf("producer connection %+v: want the restart seen", pc)
	}
}
