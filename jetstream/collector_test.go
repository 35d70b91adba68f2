package jetstream

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// The collector passes the linter, and a scrape after two acknowledged
// messages and one dead letter reads exactly what Stats and the
// dead-letter stream hold.
func TestCollectorScrape(t *testing.T) {
	c := embedded(t, t.TempDir(), false)
	reg := NewRegistry()
	if err := reg.Handle("ok", func(context.Context, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := reg.Handle("bad", func(context.Context, []byte) error { return Permanent(errors.New("bad input")) }); err != nil {
		t.Fatal(err)
	}
	ch, err := c.Channel(testCtx(t), "scraped", reg, ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	onePool(t, ch, 1)
	publishN(t, c, "scraped", "ok", "ok", 2)
	publishN(t, c, "scraped", "bad", "bad", 1)
	until(t, "two acked, one dead letter", func() bool {
		s := ch.Stats()
		return s.Acked == 2 && s.DeadLettered == 1 && s.Held == 0
	})
	col := NewCollector("workers", c)
	problems, err := testutil.CollectAndLint(col)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	want := `
# HELP smartpool_jetstream_acked_total Messages whose handler returned nil: acknowledged.
# TYPE smartpool_jetstream_acked_total counter
smartpool_jetstream_acked_total{channel="scraped",client="workers"} 2
# HELP smartpool_jetstream_connected 1 while the client is connected to the server.
# TYPE smartpool_jetstream_connected gauge
smartpool_jetstream_connected{client="workers"} 1
# HELP smartpool_jetstream_dead_lettered_total Messages moved to the dead-letter stream by this process.
# TYPE smartpool_jetstream_dead_lettered_total counter
smartpool_jetstream_dead_lettered_total{channel="scraped",client="workers"} 1
# HELP smartpool_jetstream_dead_letters Messages kept in the channel's dead-letter stream now, by every process (absent while the server does not answer).
# TYPE smartpool_jetstream_dead_letters gauge
smartpool_jetstream_dead_letters{channel="scraped",client="workers"} 1
# HELP smartpool_jetstream_disconnects_total Connections lost.
# TYPE smartpool_jetstream_disconnects_total counter
smartpool_jetstream_disconnects_total{client="workers"} 0
# HELP smartpool_jetstream_fetched_total Messages fetched from the stream.
# TYPE smartpool_jetstream_fetched_total counter
smartpool_jetstream_fetched_total{channel="scraped",client="workers"} 3
# HELP smartpool_jetstream_held_messages Messages fetched and not settled: queued, running, yielded or parked.
# TYPE smartpool_jetstream_held_messages gauge
smartpool_jetstream_held_messages{channel="scraped",client="workers"} 0
# HELP smartpool_jetstream_retried_total Runs that failed or timed out: the message is delivered again after a backoff.
# TYPE smartpool_jetstream_retried_total counter
smartpool_jetstream_retried_total{channel="scraped",client="workers"} 0
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want),
		"smartpool_jetstream_acked_total", "smartpool_jetstream_connected", "smartpool_jetstream_dead_lettered_total",
		"smartpool_jetstream_dead_letters", "smartpool_jetstream_disconnects_total", "smartpool_jetstream_fetched_total",
		"smartpool_jetstream_held_messages", "smartpool_jetstream_retried_total"); err != nil {
		t.Fatal(err)
	}
	// Every counter of Stats and of ConnStats is exported: 16 per channel,
	// 3 gauges, the dead-letter gauge, and 7 for the connection.
	if n := testutil.CollectAndCount(col); n != 16+3+1+7 {
		t.Fatalf("%d metrics, want %d", n, 16+3+1+7)
	}
	if err := prometheus.NewPedanticRegistry().Register(col); err != nil {
		t.Fatal(err)
	}
}

// A server outage shows in the scrape: connected 0 and one disconnect
// while it lasts (the dead-letter gauge left out, the scrape not waiting
// for the server), then connected 1, one reconnect and the time it was
// down.
func TestCollectorOutage(t *testing.T) {
	dir := t.TempDir()
	srv, err := Embedded(testCtx(t), EmbeddedOptions{Dir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Close() }()
	addr := strings.TrimPrefix(srv.URL(), "nats://")
	c, err := Connect(testCtx(t), srv.URL(), Options{ReconnectWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Channel(testCtx(t), "watched", NewRegistry(), ChannelOptions{}); err != nil {
		t.Fatal(err)
	}
	col := NewCollector("w", c)
	if v := scrape(t, col, "smartpool_jetstream_dead_letters"); v != 0 {
		t.Fatalf("dead letters %v, want 0", v)
	}
	srv.Close()
	until(t, "the scrape shows the outage", func() bool {
		return scrape(t, col, "smartpool_jetstream_connected") == 0 && scrape(t, col, "smartpool_jetstream_disconnects_total") == 1
	})
	start := time.Now()
	if v := scrape(t, col, "smartpool_jetstream_dead_letters"); v != -1 {
		t.Fatalf("dead letters %v during the outage, want the gauge left out", v)
	}
	if d := time.Since(start); d > deadLetterScrape/2 {
		t.Fatalf("a scrape during the outage took %v", d)
	}
	if srv, err = Embedded(testCtx(t), EmbeddedOptions{Dir: dir, Listen: addr}); err != nil {
		t.Fatal(err)
	}
	until(t, "the scrape shows the connection back", func() bool {
		return scrape(t, col, "smartpool_jetstream_connected") == 1 && scrape(t, col, "smartpool_jetstream_reconnects_total") == 1 &&
			scrape(t, col, "smartpool_jetstream_dead_letters") == 0
	})
	if v := scrape(t, col, "smartpool_jetstream_disconnected_seconds_total"); v <= 0 {
		t.Fatalf("disconnected for %v s, want more than 0", v)
	}
}

// scrape returns the value of the one metric named name that col exports,
// or -1 if it exports none.
func scrape(t *testing.T, col prometheus.Collector, name string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(col); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		if len(mf.Metric) != 1 {
			t.Fatalf("%s: %d series, want 1", name, len(mf.Metric))
		}
		return value(mf.Metric[0])
	}
	return -1
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	return -1
}
