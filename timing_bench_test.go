package smartpool_test

import (
	"context"
	"sync"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// BenchmarkTiming: empty tasks from one producer through one FIFO of a pool
// of GOMAXPROCS workers, with timing off, sampled (the default) and on for
// every task; submitted through the pool (Pool.Submit: waits and runs
// timed) or the FIFO's own Submit (the spawn-spam shape: runs timed). Compare
// with benchstat -col /timing.
func BenchmarkTiming(b *testing.B) {
	for _, path := range []string{"pool", "channel"} {
		for _, mode := range []struct {
			name  string
			every int
		}{{"off", -1}, {"sampled", 0}, {"every", 1}} {
			b.Run("path="+path+"/timing="+mode.name, func(b *testing.B) {
				f := channels.NewFIFO()
				o, err := smartpool.New[string](observed{behavior: &behavior{levels: [][]ch{{{key: "a", c: f, coc: true}}}}, every: mode.every, log: discardLog})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { closeWithin(b, o, long) })
				p := o.Pool()
				var ran sync.WaitGroup
				task := func(context.Context) { ran.Done() }
				submit := func() error { return p.Submit("a", task) }
				if path == "channel" {
					submit = func() error { return f.Submit(task) }
				}
				b.ReportAllocs()
				b.ResetTimer()
				ran.Add(b.N)
				for range b.N {
					if err := submit(); err != nil {
						b.Fatal(err)
					}
				}
				ran.Wait()
				b.StopTimer()
			})
		}
	}
}
