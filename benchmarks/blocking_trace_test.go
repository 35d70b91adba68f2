package benchmarks

import (
	"os"
	"runtime/trace"
	"testing"
)

// TestBlockingTrace is a diagnostic, not a check: with BLOCKING_TRACE set to
// a file name prefix it runs the suite's blocking-io workload (blockingIORun)
// once untraced as a warm-up, then once traced, on smartpool's I/O pool
// (smartpoolIO) and on pond, and writes one runtime/trace per pool:
// PREFIX-smartpool.trace and PREFIX-pond.trace. BLOCKING_TASKS sets the
// number of tasks of the traced run (default 2,000, one BenchmarkBlockingIO
// op). testdata/blocking_trace.py compares, from `go tool trace -d=parsed`
// output, how soon a goroutine woken by its sleep's timer gets a processor.
//
//	BLOCKING_TRACE=/tmp/io go test -run=TestBlockingTrace -v .
func TestBlockingTrace(t *testing.T) {
	prefix := diagnostic(t, "BLOCKING_TRACE", "a file name prefix")
	tasks := envInt(t, "BLOCKING_TASKS", 2000)
	pools := map[string]func() Pool{
		"smartpool": func() Pool { p, _ := smartpoolIO(); return p },
		"pond":      func() Pool { return newPond(IOInFlight) },
	}
	for _, name := range []string{"smartpool", "pond"} {
		blockingIORun(pools[name](), tasks) // warm-up, untraced
		f, err := os.Create(prefix + "-" + name + ".trace")
		if err != nil {
			t.Fatal(err)
		}
		p := pools[name]()
		if err := trace.Start(f); err != nil {
			t.Fatal(err)
		}
		wall := blockingIORun(p, tasks)[0]
		trace.Stop()
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		ideal := float64(tasks) * float64(IOWait) / IOInFlight
		t.Logf("%s: %d tasks in %.1f ms traced, %.1f%% of the nominal ideal", name, tasks, wall/1e6, 100*ideal/wall)
	}
}
