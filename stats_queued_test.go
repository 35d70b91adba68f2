package smartpool_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool/channels"
)

// slowLen is a FIFO whose Len gives the processor away after it reads.
type slowLen struct{ *channels.FIFO }

func (c slowLen) Len() int {
	n := c.FIFO.Len()
	runtime.Gosched()
	return n
}

// Stats.Queued counts a task once, whether it sits in its channel or in a
// worker's run buffer, even while workers poll batches and steal from each
// other as Stats reads: it never exceeds the tasks submitted and not yet
// started. Counted in the channel and then again in the buffer a batch
// poll filled meanwhile, it did in a few percent of reads. The channel's Len
// gives the processor away, to widen the read.
func TestStats_QueuedCountsEachTaskOnce(t *testing.T) {
	const workers, n = 4, 256
	o := start(t, &behavior{workers: workers, levels: [][]ch{{{key: "jobs", c: slowLen{channels.NewFIFO()}, coc: true}}}})
	p := o.Pool()
	var started atomic.Int64
	task := func(context.Context) {
		started.Add(1)
		for end := time.Now().Add(2 * time.Microsecond); time.Now().Before(end); {
		}
	}
	reads, over := 0, 0
	for range scale(80) {
		g := newGate()
		for range workers {
			submit(t, o, "jobs", g.task("gate"))
		}
		g.waitStarted(t, workers) // every worker held: the n tasks queue in the channel
		base := started.Load()
		for range n {
			submit(t, o, "jobs", task)
		}
		close(g.release) // the workers drain them, in batches
		deadline := time.Now().Add(long)
		for started.Load()-base < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d tasks started within %v", started.Load()-base, n, long)
			}
			before := started.Load() - base
			q := p.Stats().Channels[0].Queued
			reads++
			if q > n-int(before) {
				over++
				t.Logf("Queued %d, but only %d tasks were submitted and not started", q, n-int(before))
			}
		}
	}
	if over > 0 {
		t.Fatalf("Queued exceeded the tasks not started in %d of %d reads", over, reads)
	}
	t.Logf("%d reads", reads)
}
