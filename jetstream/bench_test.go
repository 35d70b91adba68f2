package jetstream

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
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
