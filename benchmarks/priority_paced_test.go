package benchmarks

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

// BenchmarkPriorityLatencyPaced is a diagnostic beside the suite's
// priority-latency workload (priorityRun), which it copies but for one line:
// the submitter sleeps UrgentGap after each urgent submit instead of keeping
// to a fixed grid. When the submitter's timer fires late (every worker holds
// a P until its periodic runtime.Gosched, and the OS may hold the thread),
// priorityRun submits the missed urgent tasks back to back, so one stall of
// the single worker left on a P delays a whole burst of them, each counted
// as a sample; here every urgent task samples a moment of its own. The
// metric late-% is the share of the submitter's wake-ups that came more than
// UrgentGap late: where priorityRun would have submitted a burst.
func BenchmarkPriorityLatencyPaced(b *testing.B) {
	s := calibrate()
	var p99, max, late float64
	for b.Loop() {
		r := priorityRunPaced(NewSmartpool(runtime.GOMAXPROCS(0)), s, 200_000, 1000)
		p99, max, late = p99+r[1], max+r[2], late+r[3]
	}
	b.ReportMetric(p99/float64(b.N), "p99-ns")
	b.ReportMetric(max/float64(b.N), "max-ns")
	b.ReportMetric(100*late/float64(b.N), "late-%")
}

// priorityRunPaced is priorityRun with a paced submitter. Figures: p50, p99,
// max (ns), and the share of urgent submits that came more than UrgentGap
// late.
func priorityRunPaced(p Pool, s spinner, backlog, urgent int) []float64 {
	defer p.Close()
	queued, _ := queueBacklog(p.Submit, s, backlog)
	prepare := highPrepare(p)
	lat := make([]float64, urgent)
	late := 0
	prev := time.Now()
	for i := range lat {
		if d := time.Until(prev.Add(UrgentGap)); d > 0 && i > 0 {
			time.Sleep(d) // from the previous submit, not from a grid
		}
		var t time.Time
		submit := prepare(func() { lat[i] = since(t) })
		t = time.Now()
		if i > 0 && t.Sub(prev) > 2*UrgentGap {
			late++ // woke more than a gap late: priorityRun would have burst
		}
		prev = t
		submit()
	}
	<-queued
	p.Wait()
	slices.Sort(lat)
	return []float64{Quantile(lat, 0.5), Quantile(lat, 0.99), lat[len(lat)-1], float64(late) / float64(urgent)}
}
