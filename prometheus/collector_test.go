package prometheus_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	smartprom "github.com/smartpool-go/smartpool/prometheus"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// twoLevels is a pool of an urgent FIFO above a bulk FIFO, one worker.
type twoLevels struct {
	urgent, bulk *channels.FIFO
	every        int
}

func (b *twoLevels) Config() smartpool.Config[string] {
	return smartpool.Config[string]{Workers: 1, TimingEvery: b.every, Levels: [][]smartpool.ChannelParams[string]{
		{{Key: "urgent", CompleteOnClose: true}},
		{{Key: "bulk"}},
	}}
}

func (b *twoLevels) Channel(k string) smartpool.Channel {
	if k == "urgent" {
		return b.urgent
	}
	return b.bulk
}

func (b *twoLevels) Followup(k string) string { return k }

// closed runs 3 urgent tasks, one of which panics, then queues 2 bulk tasks
// behind a task that holds the only worker, closes the pool (dropping them)
// and returns it: its figures no longer change.
func closed(t *testing.T, every int) *smartpool.Pool[string] {
	b := &twoLevels{urgent: channels.NewFIFO(), bulk: channels.NewFIFO(), every: every}
	o, err := smartpool.New[string](b)
	if err != nil {
		t.Fatal(err)
	}
	p := o.Pool()
	ran := make(chan struct{}, 3)
	for i := range 3 {
		_ = b.urgent.Submit(func(context.Context) {
			ran <- struct{}{}
			if i == 1 {
				panic("boom")
			}
		})
	}
	for range 3 {
		<-ran
	}
	started, release := make(chan struct{}), make(chan struct{})
	_ = b.urgent.Submit(func(context.Context) { close(started); <-release })
	<-started
	_ = b.bulk.Submit(func(context.Context) {})
	_ = b.bulk.Submit(func(context.Context) {})
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := o.Close(ctx)
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() { // a bounded wait for the drop
		if s, _ := p.Stats().Channel("bulk"); s.Dropped == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Close did not drop the bulk tasks")
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return p
}

// The metrics pass client_golang's linter.
func TestLint(t *testing.T) {
	c := smartprom.NewCollector("jobs", closed(t, 1))
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// A scrape shows every outcome counted per channel, the pool's gauges, and
// the histograms of the timed tasks.
func TestCompare(t *testing.T) {
	p := closed(t, -1)
	c := smartprom.NewCollector("jobs", p)
	want := `
# HELP smartpool_tasks_total Tasks that left a channel, by outcome.
# TYPE smartpool_tasks_total counter
smartpool_tasks_total{channel="bulk",level="1",outcome="cancelled",pool="jobs"} 0
smartpool_tasks_total{channel="bulk",level="1",outcome="dropped_displaced",pool="jobs"} 0
smartpool_tasks_total{channel="bulk",level="1",outcome="dropped_late",pool="jobs"} 0
smartpool_tasks_total{channel="bulk",level="1",outcome="dropped_on_close",pool="jobs"} 2
smartpool_tasks_total{channel="bulk",level="1",outcome="dropped_removed",pool="jobs"} 0
smartpool_tasks_total{channel="bulk",level="1",outcome="goexited",pool="jobs"} 0
smartpool_tasks_total{channel="bulk",level="1",outcome="panicked",pool="jobs"} 0
smartpool_tasks_total{channel="bulk",level="1",outcome="ran",pool="jobs"} 0
smartpool_tasks_total{channel="urgent",level="0",outcome="cancelled",pool="jobs"} 0
smartpool_tasks_total{channel="urgent",level="0",outcome="dropped_displaced",pool="jobs"} 0
smartpool_tasks_total{channel="urgent",level="0",outcome="dropped_late",pool="jobs"} 0
smartpool_tasks_total{channel="urgent",level="0",outcome="dropped_on_close",pool="jobs"} 0
smartpool_tasks_total{channel="urgent",level="0",outcome="dropped_removed",pool="jobs"} 0
smartpool_tasks_total{channel="urgent",level="0",outcome="goexited",pool="jobs"} 0
smartpool_tasks_total{channel="urgent",level="0",outcome="panicked",pool="jobs"} 1
smartpool_tasks_total{channel="urgent",level="0",outcome="ran",pool="jobs"} 3
# HELP smartpool_workers Workers the pool runs.
# TYPE smartpool_workers gauge
smartpool_workers{pool="jobs"} 1
# HELP smartpool_queued_tasks Tasks waiting in a channel.
# TYPE smartpool_queued_tasks gauge
smartpool_queued_tasks{channel="bulk",level="1",pool="jobs"} 0
smartpool_queued_tasks{channel="urgent",level="0",pool="jobs"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "smartpool_tasks_total", "smartpool_workers", "smartpool_queued_tasks"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "smartpool_queue_wait_seconds", "smartpool_run_seconds"); n != 4 {
		t.Fatalf("%d histograms, want a wait and a run histogram per channel", n)
	}
}

// smartpool_channel_paused is 1 for a paused channel, 0 for the others and
// once Resume (or Close) ran.
func TestChannelPaused(t *testing.T) {
	b := &twoLevels{urgent: channels.NewFIFO(), bulk: channels.NewFIFO()}
	o, err := smartpool.New[string](b)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := o.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	p := o.Pool()
	c := smartprom.NewCollector("jobs", p)
	want := func(urgent, bulk int) string {
		return fmt.Sprintf(`
# HELP smartpool_channel_paused 1 while a channel is paused (Pool.Pause): it queues tasks and starts none.
# TYPE smartpool_channel_paused gauge
smartpool_channel_paused{channel="bulk",level="1",pool="jobs"} %d
smartpool_channel_paused{channel="urgent",level="0",pool="jobs"} %d
`, bulk, urgent)
	}
	if err := p.Pause("bulk"); err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(0, 1)), "smartpool_channel_paused"); err != nil {
		t.Fatal(err)
	}
	if err := p.Resume("bulk"); err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(0, 0)), "smartpool_channel_paused"); err != nil {
		t.Fatal(err)
	}
}

// promhttp serves the collector's metrics over HTTP, histograms included,
// with the timed tasks counted.
func TestHTTPScrape(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(smartprom.NewCollector("jobs", closed(t, 1)))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`smartpool_tasks_total{channel="urgent",level="0",outcome="ran",pool="jobs"} 3`,
		`smartpool_run_seconds_count{channel="urgent",level="0",pool="jobs"} 4`,
		`smartpool_queue_wait_seconds_count{channel="urgent",level="0",pool="jobs"} 4`,
		`smartpool_queue_wait_seconds_bucket{channel="urgent",level="0",pool="jobs",le="+Inf"} 4`,
		`smartpool_run_seconds_bucket{channel="bulk",level="1",pool="jobs",le="1.024e-06"} 0`,
		`smartpool_busy_workers{pool="jobs"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the scrape lacks %s\n%s", want, body)
		}
	}
}

// smartpool_live_workers follows the worker goroutines: one per worker a
// blocking task holds, none once the pool closed.
func TestLiveWorkers(t *testing.T) {
	b := &twoLevels{urgent: channels.NewFIFO(), bulk: channels.NewFIFO()}
	o, err := smartpool.New[string](b)
	if err != nil {
		t.Fatal(err)
	}
	c := smartprom.NewCollector("jobs", o.Pool())
	want := func(n int) string {
		return "# HELP smartpool_live_workers Workers with a goroutine now, running or parked: they start on need and end when idle.\n" +
			"# TYPE smartpool_live_workers gauge\n" +
			"smartpool_live_workers{pool=\"jobs\"} " + strconv.Itoa(n) + "\n"
	}
	started, release := make(chan struct{}), make(chan struct{})
	_ = b.urgent.Submit(func(context.Context) { close(started); <-release })
	<-started
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(1)), "smartpool_live_workers"); err != nil {
		t.Error(err)
	}
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := o.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(0)), "smartpool_live_workers"); err != nil {
		t.Error(err)
	}
}

// smartpool_start_rate_per_second and _burst show a channel's rate, only
// while it has one; smartpool_throttled_total counts the takes that found
// no token.
func TestStartRate(t *testing.T) {
	b := &twoLevels{urgent: channels.NewFIFO(), bulk: channels.NewFIFO()}
	o, err := smartpool.New[string](b)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := o.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	p := o.Pool()
	c := smartprom.NewCollector("jobs", p)
	if err := p.SetRate("bulk", smartpool.Rate{PerSecond: 0.5, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 2)
	for range 2 {
		_ = b.bulk.Submit(func(context.Context) { ran <- struct{}{} })
	}
	<-ran // the token's task; the other waits 2 s for the next
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		if s, _ := p.Stats().Channel("bulk"); s.Throttled > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no throttled take")
		}
	}
	want := `
# HELP smartpool_start_rate_per_second A channel's start rate (ChannelParams.Rate, Pool.SetRate); 0: it starts none; absent: no rate.
# TYPE smartpool_start_rate_per_second gauge
smartpool_start_rate_per_second{channel="bulk",level="1",pool="jobs"} 0.5
# HELP smartpool_start_rate_burst The burst of a channel's start rate; absent: no rate.
# TYPE smartpool_start_rate_burst gauge
smartpool_start_rate_burst{channel="bulk",level="1",pool="jobs"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "smartpool_start_rate_per_second", "smartpool_start_rate_burst"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "smartpool_throttled_total"); n != 2 {
		t.Fatalf("%d throttled_total series, want one per channel", n)
	}
}
