package smartpool_test

import (
	"testing"

	"github.com/smartpool-go/smartpool/scheduler"
)

// BenchmarkSubmitRunStrictPriority: BenchmarkSubmitRun/producers=1 over two
// levels, with no Schedule and with scheduler.HighestFirst() given
// explicitly, which must cost the same (the pool serves both without a
// picker, and batches): compare with benchstat -col /schedule.
func BenchmarkSubmitRunStrictPriority(b *testing.B) {
	for _, s := range []struct {
		name  string
		sched scheduler.Scheduler
	}{{"default", nil}, {"HighestFirst", scheduler.HighestFirst()}} {
		b.Run("schedule="+s.name, func(b *testing.B) {
			benchSubmitRun(b, &behavior{sched: s.sched, levels: [][]ch{{fifo("hi")}, {fifo("lo")}}}, []string{"lo"}, 1)
		})
	}
}
