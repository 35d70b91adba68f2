package engine

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool/task"
)

// BenchmarkTimingHooks measures what timing adds to each task on the hot
// path, outside any pool, so the figure is not lost in the noise of a
// scheduler benchmark: a submit's stamp decision plus a worker's start and
// end of a run, with timing off, sampled (the default) and on every task.
// time.Now is measured alone for reference.
func BenchmarkTimingHooks(b *testing.B) {
	for _, c := range []struct {
		name  string
		every int
	}{{"off", -1}, {"sampled", 64}, {"sampled256", 256}, {"every", 1}} {
		b.Run("timing="+c.name, func(b *testing.B) {
			e := &Engine{}
			e.timing = newTiming(c.every, 1)
			e.timing.link()
			w := &Worker{e: e}
			tc := &taskContext{E: e}
			var t task.Task = task.Func(func(context.Context) {})
			b.ReportAllocs()
			for b.Loop() {
				s := e.timing.stamp(0, t)
				start := w.startRun(tc, 0)
				e.timing.endRun(0, start)
				_ = s
			}
		})
	}
	b.Run("time.Now", func(b *testing.B) {
		for b.Loop() {
			_ = time.Now()
		}
	})
	b.Run("rand.Uint32", func(b *testing.B) {
		for b.Loop() {
			_ = rand.Uint32()
		}
	})
}
