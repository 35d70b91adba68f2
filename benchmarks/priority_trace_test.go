package benchmarks

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/trace"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestPriorityTrace is a diagnostic, not a check: with PRIORITY_TRACE set to
// a file name it runs the suite's priority-latency workload (priorityRun) on
// smartpool and writes a runtime/trace there, from the last backlog submit to
// Close. Trace user logs (category, then message): "left" (backlog tasks not
// yet started) and "submit" (the urgent task's number) on the submitting
// goroutine just before each urgent submit; "start" (its number) on the
// goroutine that runs it; "overrun" (ns) from a backlog task that ran for
// more than twice BacklogTaskUs. The wrapper that times backlog tasks costs
// one closure and two clock reads per task beyond the suite's. It also
// prints the involuntary context switches of the process's threads and how
// long they waited for a CPU (Linux schedstat) over the traced span.
// testdata/priority_trace.py attributes the slow urgent tasks to causes from
// `go tool trace -d=parsed` output.
//
//	PRIORITY_TRACE=/tmp/p.trace PRIORITY_BACKLOG=200000 go test -run=TestPriorityTrace -v .
func TestPriorityTrace(t *testing.T) {
	out := diagnostic(t, "PRIORITY_TRACE", "a file name")
	backlog := envInt(t, "PRIORITY_BACKLOG", 200_000)
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := &tracedPool{Smartpool: NewSmartpool(runtime.GOMAXPROCS(0)).(*Smartpool), out: f, backlog: backlog}
	r := priorityRun(p, calibrate(), backlog, 1000)
	if p.err != nil {
		t.Fatal(p.err)
	}
	t.Logf("p50 %.0f ns, p99 %.0f ns, max %.0f ns, backlog queued at start %.2f", r[0], r[1], r[2], r[3])
	t.Logf("during the urgent phase the process's %d threads took %d involuntary context switches and waited %.1f ms for a CPU (schedstat), over %.1f ms",
		p.threads, p.cpu[1], float64(p.cpu[0])/1e6, float64(p.elapsed.Microseconds())/1e3)
}

// diagnostic returns the value of the environment variable name, which
// turns a diagnostic test on, or skips the test where it is unset; what
// says what the variable holds.
func diagnostic(t *testing.T, name, what string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Skip("diagnostic: set " + name + " to " + what)
	}
	return v
}

// envInt returns the integer the environment variable name holds, or def
// where it is unset; it fails the test on anything else.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: want an integer", name, v)
	}
	return n
}

// tracedPool traces the urgent phase of priorityRun: from its first
// urgent submit to Close.
type tracedPool struct {
	*Smartpool
	out     *os.File
	backlog int
	queued  int          // backlog tasks submitted; the backlog goroutine's
	ran     atomic.Int64 // backlog tasks started
	n       int          // urgent tasks submitted; the submitting goroutine's
	err     error
	t0      time.Time
	cpu0    map[string][2]int
	cpu     [2]int // ns waited for a CPU, involuntary switches: during the trace
	elapsed time.Duration
	threads int
}

// Submit queues a backlog task that logs "overrun" (category, message its
// run time in ns) when it ran for more than twice BacklogTaskUs, once the
// trace runs: a stretched 5 µs spin with no Go-level cause in the trace is
// its thread losing the CPU.
func (p *tracedPool) Submit(fn func()) {
	if p.queued++; p.queued == p.backlog {
		p.startTrace() // before the urgent phase, which waits for the backlog
	}
	p.Smartpool.Submit(func() {
		p.ran.Add(1)
		t := time.Now()
		fn()
		if d := time.Since(t); d > 2*BacklogTaskUs*time.Microsecond && trace.IsEnabled() {
			trace.Log(context.Background(), "overrun", strconv.FormatInt(d.Nanoseconds(), 10))
		}
	})
}

func (p *tracedPool) PrepareHigh(fn func()) func() {
	i := strconv.Itoa(p.n)
	p.n++
	ctx := context.Background()
	submit := p.Smartpool.PrepareHigh(func() { trace.Log(ctx, "start", i); fn() })
	return func() {
		trace.Log(ctx, "left", strconv.FormatInt(int64(p.backlog)-p.ran.Load(), 10))
		trace.Log(ctx, "submit", i)
		submit()
	}
}

func (p *tracedPool) startTrace() {
	p.cpu0 = cpuWaits()
	p.t0 = time.Now()
	p.err = trace.Start(p.out)
}

func (p *tracedPool) Close() {
	if p.cpu0 != nil {
		trace.Stop()
		p.elapsed = time.Since(p.t0)
		for tid, c := range cpuWaits() {
			p.cpu[0] += c[0] - p.cpu0[tid][0]
			p.cpu[1] += c[1] - p.cpu0[tid][1]
		}
		p.threads = len(p.cpu0)
	}
	p.Smartpool.Close()
}

// cpuWaits reads, for every thread of the process by thread id, the time
// it has spent runnable but waiting for a CPU (schedstat, ns) and its
// involuntary context switches (Linux; empty elsewhere).
func cpuWaits() map[string][2]int {
	m := map[string][2]int{}
	dirs, _ := filepath.Glob("/proc/self/task/*")
	for _, d := range dirs {
		var c [2]int
		if b, err := os.ReadFile(filepath.Join(d, "schedstat")); err == nil {
			if f := strings.Fields(string(b)); len(f) >= 2 {
				c[0], _ = strconv.Atoi(f[1])
			}
		}
		if b, err := os.ReadFile(filepath.Join(d, "status")); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "nonvoluntary_ctxt_switches:"); ok {
					c[1], _ = strconv.Atoi(strings.TrimSpace(v))
				}
			}
		}
		m[filepath.Base(d)] = c
	}
	return m
}
