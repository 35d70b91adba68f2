package smartpool_test

import (
	"context"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// rateBenchFor is how long BenchmarkRate measures: SMARTPOOL_RATE_BENCH
// (a time.Duration, "10s" for the figure of record), 1 s by default so
// that CI runs it short. Run it once: -benchtime=1x.
func rateBenchFor() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("SMARTPOOL_RATE_BENCH")); err == nil && d > 0 {
		return d
	}
	return time.Second
}

// BenchmarkRate: a rated channel (500/s, burst 10) kept full at level 1
// beside an unlimited channel at level 0 fed one task a millisecond.
// Reported: the rated channel's starts per second over the run and their
// error from the rate (want within 2 %), and the higher level's start
// latency (submit to start, p50 and p99), with the rated neighbour
// ("beside-rated") and without it ("alone").
func BenchmarkRate(b *testing.B) {
	const perSec, burst = 500, 10
	for _, neighbour := range []bool{false, true} {
		name := map[bool]string{false: "alone", true: "beside-rated"}[neighbour]
		b.Run(name, func(b *testing.B) {
			d := rateBenchFor()
			bh := &behavior{workers: 4, levels: [][]ch{{fifo("high")},
				{{key: "rated", c: channels.NewFIFO(), coc: true, rate: smartpool.Rate{PerSecond: perSec, Burst: burst}}}}}
			o := benchPool(b, bh)
			p := o.Pool()
			var starts atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			rated := func(context.Context) { starts.Add(1) }
			if neighbour {
				wg.Go(func() { // keep the rated channel's queue full: it never waits for work
					tick := time.NewTicker(5 * time.Millisecond)
					defer tick.Stop()
					for {
						if st, _ := p.Stats().Channel("rated"); st.Queued < 2*perSec {
							for range perSec {
								if p.Submit("rated", rated) != nil {
									return
								}
							}
						}
						select {
						case <-stop:
							return
						case <-tick.C:
						}
					}
				})
			}
			var mu sync.Mutex
			var lat []time.Duration
			b.ResetTimer()
			began := time.Now()
			tick := time.NewTicker(time.Millisecond)
			for time.Since(began) < d {
				<-tick.C
				at := time.Now()
				_ = p.Submit("high", func(context.Context) {
					l := time.Since(at)
					mu.Lock()
					lat = append(lat, l)
					mu.Unlock()
				})
			}
			tick.Stop()
			n := starts.Load()
			elapsed := time.Since(began)
			b.StopTimer()
			close(stop)
			wg.Wait()
			mu.Lock()
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "high-p50-ns")
				b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "high-p99-ns")
			}
			mu.Unlock()
			if neighbour {
				got := float64(n-burst) / elapsed.Seconds()
				b.ReportMetric(got, "rated-starts/s")
				b.ReportMetric(100*math.Abs(got-perSec)/perSec, "rate-err-%")
			}
		})
	}
}
