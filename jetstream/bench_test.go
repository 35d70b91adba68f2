package jetstream

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// BenchmarkSafetyCost measures end-to-end throughput through an embedded
// server (8 publishers, a pool of GOMAXPROCS workers that runs and
// acknowledges each message) with each durability setting: the defaults,
// confirmed acks, a 1 s sync interval, and a sync on every write.
func BenchmarkSafetyCost(b *testing.B) {
	for _, tc := range []struct {
		name string
		ch   ChannelOptions
		emb  EmbeddedOptions
	}{
		{"defaults", ChannelOptions{}, EmbeddedOptions{}},
		{"ConfirmAcks", ChannelOptions{ConfirmAcks: true}, EmbeddedOptions{}},
		{"SyncInterval=1s", ChannelOptions{}, EmbeddedOptions{SyncInterval: time.Second}},
		{"SyncAlways", ChannelOptions{}, EmbeddedOptions{SyncAlways: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tc.emb.Dir = b.TempDir()
			c, err := Embedded(context.Background(), tc.emb)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			var ran atomic.Int64
			done := make(chan struct{})
			n := int64(b.N)
			reg := NewRegistry()
			if err := reg.Handle("h", func(context.Context, []byte) error {
				if ran.Add(1) == n {
					close(done)
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			ch, err := c.Channel(context.Background(), "bench", reg, tc.ch)
			if err != nil {
				b.Fatal(err)
			}
			p, err := smartpool.New[string](&behavior{workers: runtime.GOMAXPROCS(0), levels: [][]string{{"bench"}},
				chans: map[string]smartpool.Channel{"bench": ch}})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(context.Background())
			b.ResetTimer()
			start := time.Now()
			var next atomic.Int64
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for next.Add(1) <= n {
						if _, err := c.Publish(context.Background(), "bench", "h", nil); err != nil {
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
			if testing.Verbose() {
				fmt.Printf("%s: %+v\n", tc.name, ch.Stats())
			}
		})
	}
}

// BenchmarkPriorityBehindBacklog measures how long a high-level task waits
// to start (mean, p50, p99; b.N samples, one at a time, a pause of 0 to
// 1.8 ms between them) while the pool's GOMAXPROCS workers run a low-level
// local backlog of 2 ms tasks, each of which queues its successor:
// "local" submits the high task to a local FIFO, "jetstream" publishes it
// to a JetStream channel, and "jetstream-alone" publishes it with no
// backlog. BACKLOG_SLEEP=1 makes the backlog tasks sleep instead of using
// the CPU.
func BenchmarkPriorityBehindBacklog(b *testing.B) {
	sleep := os.Getenv("BACKLOG_SLEEP") != ""
	for _, tc := range []struct {
		name        string
		js, backlog bool
	}{{"local", false, true}, {"jetstream", true, true}, {"jetstream-alone", true, false}} {
		b.Run(tc.name, func(b *testing.B) {
			c, err := Embedded(context.Background(), EmbeddedOptions{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			lat := make(chan time.Duration, 1)
			reg := NewRegistry()
			if err := reg.Handle("h", func(_ context.Context, p []byte) error {
				lat <- time.Since(time.Unix(0, int64(binary.LittleEndian.Uint64(p))))
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			low, localHigh := channels.NewFIFO(), channels.NewFIFO()
			var high smartpool.Channel = localHigh
			if tc.js {
				if high, err = c.Channel(context.Background(), "high", reg, ChannelOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			p, err := smartpool.New[string](&behavior{workers: runtime.GOMAXPROCS(0), levels: [][]string{{"high"}, {"low"}},
				chans: map[string]smartpool.Channel{"high": high, "low": low}})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(context.Background())
			var stop atomic.Bool
			var task func(context.Context)
			task = func(context.Context) {
				if sleep {
					time.Sleep(2 * time.Millisecond)
				} else {
					for t := time.Now(); time.Since(t) < 2*time.Millisecond; {
					}
				}
				if !stop.Load() {
					_ = low.Submit(task)
				}
			}
			if tc.backlog {
				for range 4 * runtime.GOMAXPROCS(0) {
					if err := low.Submit(task); err != nil {
						b.Fatal(err)
					}
				}
			}
			defer stop.Store(true)
			samples := make([]time.Duration, 0, b.N)
			buf := make([]byte, 8)
			b.ResetTimer()
			for i := range b.N {
				time.Sleep(time.Duration(i%7) * 300 * time.Microsecond) // lands anywhere in a backlog task
				now := time.Now()
				binary.LittleEndian.PutUint64(buf, uint64(now.UnixNano()))
				if tc.js {
					if _, err := c.Publish(context.Background(), "high", "h", buf); err != nil {
						b.Fatal(err)
					}
				} else if err := localHigh.Submit(func(context.Context) { lat <- time.Since(now) }); err != nil {
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
			var sum time.Duration
			for _, s := range samples {
				sum += s
			}
			b.ReportMetric(float64(sum.Microseconds())/float64(len(samples)), "mean-µs")
			b.ReportMetric(float64(samples[len(samples)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(samples[len(samples)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkUrgentTrace is the asynqcmp module's high-priority start behind
// a low-priority backlog kept in the stream (two JetStream channels, about
// 1,000 low tasks of 20 µs, each publishing its successor), traced: for
// each high task, from the publish call to the server's store (the
// message's stream timestamp), to the fetch's return, to the local queue,
// to the handler's start. It reports each segment's median and 99th
// percentile (each taken apart: they do not add up). It runs against the
// embedded server and against nats-server as a process of its own (see
// externalServer; SMARTPOOL_NATS_SERVER names the binary, for instance one
// built with go build github.com/nats-io/nats-server/v2 in this module, the
// embedded server's version).
func BenchmarkUrgentTrace(b *testing.B) {
	for _, server := range []string{"embedded", "process"} {
		b.Run(server, func(b *testing.B) {
			var c *Client
			if server == "embedded" {
				var err error
				if c, err = Embedded(context.Background(), EmbeddedOptions{Dir: b.TempDir()}); err != nil {
					b.Fatal(err)
				}
				defer c.Close()
			} else {
				c = externalServer(b)
			}
			urgentTrace(b, c)
		})
	}
}

func urgentTrace(b *testing.B, c *Client) {
	ctx := context.Background()
	type trace struct{ publish, stored, fetched, queued, start time.Time }
	var cur trace
	var mu sync.Mutex
	started := make(chan trace, 1)
	var stop atomic.Bool
	chans := map[string]smartpool.Channel{}
	for _, q := range []string{"high", "low"} {
		reg := NewRegistry()
		if err := reg.Handle("h", func(context.Context, []byte) error {
			if q == "high" {
				mu.Lock()
				cur.start = time.Now()
				t := cur
				mu.Unlock()
				started <- t
				return nil
			}
			for t := time.Now(); time.Since(t) < 20*time.Microsecond; {
			}
			if !stop.Load() {
				_, _ = c.Publish(ctx, "low", "h", nil)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		ch, err := c.Channel(ctx, q, reg, ChannelOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if q == "high" {
			ch.onEvent = func(what string, m *message) {
				mu.Lock()
				defer mu.Unlock()
				switch what {
				case "fetched":
					cur.fetched, cur.stored = time.Now(), m.born
				case "queued":
					cur.queued = time.Now()
				}
			}
		}
		chans[q] = ch
	}
	p, err := smartpool.New[string](&behavior{workers: runtime.GOMAXPROCS(0), levels: [][]string{{"high"}, {"low"}}, chans: chans})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(ctx)
	defer stop.Store(true)
	for range 1000 {
		if _, err := c.Publish(ctx, "low", "h", nil); err != nil {
			b.Fatal(err)
		}
	}
	var segs [5][]time.Duration // publish→stored, stored→fetched, fetched→queued, queued→start, publish→start
	b.ResetTimer()
	for range b.N {
		mu.Lock()
		cur = trace{publish: time.Now()}
		mu.Unlock()
		if _, err := c.Publish(ctx, "high", "h", nil); err != nil {
			b.Fatal(err)
		}
		select {
		case t := <-started:
			for i, d := range []time.Duration{t.stored.Sub(t.publish), t.fetched.Sub(t.stored), t.queued.Sub(t.fetched),
				t.start.Sub(t.queued), t.start.Sub(t.publish)} {
				segs[i] = append(segs[i], d)
			}
		case <-time.After(time.Minute):
			b.Fatal("a high-priority task did not start within a minute")
		}
	}
	b.StopTimer()
	for i, name := range []string{"publish-stored", "stored-fetched", "fetched-queued", "queued-start", "publish-start"} {
		slices.Sort(segs[i])
		b.ReportMetric(float64(segs[i][len(segs[i])/2].Microseconds()), name+"-p50-µs")
		b.ReportMetric(float64(segs[i][len(segs[i])*99/100].Microseconds()), name+"-p99-µs")
	}
}
