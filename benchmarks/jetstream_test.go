package benchmarks_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/jetstream"
)

// jsPool is a pool over a JetStream channel ("high", level 0) and a local
// FIFO ("low", level 1).
type jsPool struct {
	high *jetstream.Channel
	low  *channels.FIFO
}

func (p *jsPool) Config() smartpool.Config[string] {
	return smartpool.Config[string]{Workers: runtime.GOMAXPROCS(0), Levels: [][]smartpool.ChannelParams[string]{
		{{Key: "high"}}, {{Key: "low"}},
	}}
}

func (p *jsPool) Channel(k string) smartpool.Channel {
	if k == "high" {
		return p.high
	}
	return p.low
}

func (p *jsPool) Followup(k string) string { return k }

// startJS starts an embedded server in a temporary directory and a pool
// whose JetStream channel runs h.
func startJS(b *testing.B, h jetstream.Handler) (*jetstream.Client, *jsPool, *smartpool.OwnedPool[string]) {
	ctx := context.Background()
	c, err := jetstream.Embedded(ctx, jetstream.EmbeddedOptions{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	reg := jetstream.NewRegistry()
	if err := reg.Handle("h", h); err != nil {
		b.Fatal(err)
	}
	jp := &jsPool{low: channels.NewFIFO()}
	if jp.high, err = c.Channel(ctx, "high", reg, jetstream.ChannelOptions{}); err != nil {
		b.Fatal(err)
	}
	p, err := smartpool.New[string](jp)
	if err != nil {
		b.Fatal(err)
	}
	return c, jp, p
}

func closeJS(b *testing.B, c *jetstream.Client, p *smartpool.OwnedPool[string]) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := p.Close(ctx); err != nil {
		b.Error(err)
	}
	c.Close()
}

// BenchmarkJetStreamThroughput measures tasks per second end to end through
// the embedded server, from one process: 8 producers publish (each publish
// waits for the stream to store the message) while the pool fetches, runs
// and acknowledges.
func BenchmarkJetStreamThroughput(b *testing.B) {
	var ran atomic.Int64
	done := make(chan struct{})
	n := int64(b.N)
	c, _, p := startJS(b, func(context.Context, []byte) error {
		if ran.Add(1) == n {
			close(done)
		}
		return nil
	})
	defer closeJS(b, c, p)
	b.ResetTimer()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for next.Add(1) <= n {
				if _, err := c.Publish(context.Background(), "high", "h", nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(time.Minute):
		b.Fatalf("ran %d of %d", ran.Load(), n)
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "tasks/s")
}

// BenchmarkJetStreamPriorityLatency measures how long a task published to a
// high-level JetStream channel waits to start (from the Publish call to its
// handler) while every worker is busy with a low-level local backlog of
// 20 µs tasks: b.N samples, one at a time.
func BenchmarkJetStreamPriorityLatency(b *testing.B) {
	lat := make(chan time.Duration, 1)
	c, jp, p := startJS(b, func(_ context.Context, payload []byte) error {
		lat <- time.Since(time.Unix(0, int64(binary.LittleEndian.Uint64(payload))))
		return nil
	})
	defer closeJS(b, c, p)
	var stop atomic.Bool
	var spin func(context.Context)
	spin = func(context.Context) { // a backlog task: 20 µs of work, then it queues its successor
		for t := time.Now(); time.Since(t) < 20*time.Microsecond; {
		}
		if !stop.Load() {
			_ = jp.low.Submit(spin)
		}
	}
	for range 4 * runtime.GOMAXPROCS(0) {
		if err := jp.low.Submit(spin); err != nil {
			b.Fatal(err)
		}
	}
	defer stop.Store(true)
	samples := make([]time.Duration, 0, b.N)
	buf := make([]byte, 8)
	b.ResetTimer()
	for range b.N {
		binary.LittleEndian.PutUint64(buf, uint64(time.Now().UnixNano()))
		if _, err := c.Publish(context.Background(), "high", "h", buf); err != nil {
			b.Fatal(err)
		}
		select {
		case d := <-lat:
			samples = append(samples, d)
		case <-time.After(time.Minute):
			b.Fatal("a high-level task did not start within a minute")
		}
	}
	b.StopTimer()
	slices.Sort(samples)
	q := func(f float64) float64 { return float64(samples[int(f*float64(len(samples)-1))].Microseconds()) }
	b.ReportMetric(q(0.5), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	if testing.Verbose() {
		fmt.Printf("start latency over %d samples: p50 %v µs, p99 %v µs, p99.9 %v µs, max %v\n", len(samples), q(0.5), q(0.99), q(0.999), samples[len(samples)-1])
	}
}
