// Package benchsubmit mirrors the root BenchmarkSubmitRun with the public
// API only, so that it builds against any base (the root package's external
// tests do not build at this base): compare a pool before and after a change
// with benchstat.
package benchsubmit

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

func BenchmarkSubmitRun(b *testing.B) {
	for _, producers := range []int{1, 8} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			o, err := smartpool.New(smartpool.Levels[string]{{{Key: "a", Channel: channels.NewFIFO()}}})
			if err != nil {
				b.Fatal(err)
			}
			defer o.Close(context.Background())
			p := o.Pool()
			var ran sync.WaitGroup
			task := func(context.Context) { ran.Done() }
			b.ReportAllocs()
			b.ResetTimer()
			ran.Add(b.N)
			var wg sync.WaitGroup
			for w := range producers {
				n := b.N / producers
				if w == 0 {
					n += b.N % producers
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range n {
						for p.Submit("a", task) != nil {
						}
					}
				}()
			}
			wg.Wait()
			ran.Wait()
		})
	}
}
