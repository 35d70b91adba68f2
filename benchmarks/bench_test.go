package benchmarks_test

import (
	"bytes"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/smartpool-go/smartpool/benchmarks"
)

// BenchmarkSpawnSpam is workload 1 per pool, for benchstat:
//
//	go test -run '^$' -bench . -count 6 | tee new.txt; benchstat old.txt new.txt
func BenchmarkSpawnSpam(b *testing.B) {
	for _, a := range benchmarks.Adapters() {
		b.Run(a.Name, func(b *testing.B) { spawnSpam(b, a.New) })
	}
}

// spawnSpam runs workload 1 with one producer on a pool of GOMAXPROCS
// workers that newPool builds.
func spawnSpam(b *testing.B, newPool func(int) benchmarks.Pool) {
	p := newPool(runtime.GOMAXPROCS(0))
	defer p.Close()
	b.ReportAllocs()
	b.ResetTimer()
	benchmarks.SpawnSpam(p, b.N, 1)
}

// BenchmarkSpawnSpamTasks is workload 1 for the hand-written pool and for
// smartpool written both ways: with the caller's closure (the suite's
// adapter) and with ready-made tasks counted in OnEnd (SmartpoolTasks), the
// way the hand-written pool counts them in its worker.
func BenchmarkSpawnSpamTasks(b *testing.B) {
	pools := []struct {
		name string
		new  func(int) benchmarks.Pool
	}{
		{"chan-pool", adapter(b, "chan-pool").New},
		{"smartpool", adapter(b, "smartpool").New},
		{"smartpool-tasks", func(n int) benchmarks.Pool { return benchmarks.NewSmartpoolTasks(n) }},
	}
	for _, c := range pools {
		b.Run(c.name, func(b *testing.B) { spawnSpam(b, c.new) })
	}
}

// BenchmarkCPULight: tasks of one calibrated microsecond per pool, one
// producer; ns per task (compare the pools' overheads with benchstat).
func BenchmarkCPULight(b *testing.B) {
	for _, a := range benchmarks.Adapters() {
		b.Run(a.Name, func(b *testing.B) {
			benchmarks.CPULightRun(a.New(runtime.GOMAXPROCS(0)), 0) // calibrate outside the timer
			b.ReportAllocs()
			b.ResetTimer()
			benchmarks.CPULightRun(a.New(runtime.GOMAXPROCS(0)), b.N)
		})
	}
}

// BenchmarkPriorityLatency: workload 6 (200,000 backlog tasks, 1,000
// urgent ones) for the pools with a priority lane, once per iteration; the
// urgent tasks' p99 and max submit-to-start latency as metrics.
func BenchmarkPriorityLatency(b *testing.B) {
	for _, a := range benchmarks.Adapters() {
		if a.Name != "two-chan" && a.Name != "smartpool" {
			continue
		}
		b.Run(a.Name, func(b *testing.B) {
			var p99, max float64
			for b.Loop() {
				r := benchmarks.PriorityRun(a.New(runtime.GOMAXPROCS(0)), 200_000, 1000)
				p99, max = p99+r[1], max+r[2]
			}
			b.ReportMetric(p99/float64(b.N), "p99-ns")
			b.ReportMetric(max/float64(b.N), "max-ns")
		})
	}
}

// BenchmarkTenantFairness: workload 9 (a 100,000-task tenant, 500
// newcomer tenants) for smartpool with a channel per tenant and for pond,
// whose tenants share one queue, once per iteration; the newcomers' p50 and
// p99 arrival-to-start latency as metrics.
func BenchmarkTenantFairness(b *testing.B) {
	const backlog, newcomers = 100_000, 500
	for _, c := range []struct {
		name string
		new  func() benchmarks.Pool
	}{
		{"smartpool-tenants", func() benchmarks.Pool {
			return benchmarks.NewSmartpoolTenants(runtime.GOMAXPROCS(0), newcomers+1)
		}},
		{"pond", func() benchmarks.Pool { return adapter(b, "pond").New(runtime.GOMAXPROCS(0)) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			var p50, p99 float64
			for b.Loop() {
				r, err := benchmarks.FairnessRun(c.new(), backlog, newcomers)
				if err != nil {
					b.Fatal(err)
				}
				p50, p99 = p50+r[0], p99+r[1]
			}
			b.ReportMetric(p50/float64(b.N), "p50-ns")
			b.ReportMetric(p99/float64(b.N), "p99-ns")
		})
	}
}

// adapter returns the adapter named name.
func adapter(tb testing.TB, name string) benchmarks.Adapter {
	for _, a := range benchmarks.Adapters() {
		if a.Name == name {
			return a
		}
	}
	tb.Fatalf("no adapter %q", name)
	return benchmarks.Adapter{}
}

// TestSmartpoolTasks checks that the ready-made-task adapter runs each task
// once and that Wait, counted by OnEnd, returns only after all of them.
func TestSmartpoolTasks(t *testing.T) {
	p := benchmarks.NewSmartpoolTasks(2)
	var ran atomic.Int64
	for range 1000 {
		p.Submit(func() { ran.Add(1) })
	}
	p.Wait()
	if got := ran.Load(); got != 1000 {
		t.Fatalf("after Wait, %d of 1000 tasks ran", got)
	}
	p.Close()
}

// TestSmartpoolTenants checks that the tenant adapter runs each tenant's
// tasks exactly once, and refuses a tenant beyond the room it reserved.
func TestSmartpoolTenants(t *testing.T) {
	p := benchmarks.NewSmartpoolTenants(2, 3)
	var ran [3]atomic.Int64
	submits := []func(func()){p.Submit}
	for range 2 {
		submit, err := p.NewTenant()
		if err != nil {
			t.Fatal(err)
		}
		submits = append(submits, submit)
	}
	if _, err := p.NewTenant(); err == nil {
		t.Error("a fourth tenant in room for three")
	}
	for i, submit := range submits {
		for range 100 {
			submit(func() { ran[i].Add(1) })
		}
	}
	p.Wait()
	p.Close()
	for i := range ran {
		if got := ran[i].Load(); got != 100 {
			t.Errorf("tenant %d ran %d tasks, want 100", i, got)
		}
	}
}

// TestAdapters checks that every adapter runs each task exactly once and
// that Wait waits for them. (Nested submits are fork-join's business: pools
// without a queue deadlock on them.)
func TestAdapters(t *testing.T) {
	for _, a := range benchmarks.Adapters() {
		t.Run(a.Name, func(t *testing.T) {
			p := a.New(2)
			var ran atomic.Int64
			for range 100 {
				p.Submit(func() { ran.Add(1) })
			}
			p.Wait()
			p.Close()
			if got := ran.Load(); got != 100 {
				t.Fatalf("ran %d tasks, want 100", got)
			}
		})
	}
}

// TestRunSmall runs the whole suite at a tiny scale and renders it.
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every workload")
	}
	r := benchmarks.Run(benchmarks.Config{Scale: 0.002, Rounds: 1})
	var md, svg bytes.Buffer
	if err := benchmarks.WriteMarkdown(&md, r, "docs/bench.svg"); err != nil {
		t.Fatal(err)
	}
	if err := benchmarks.WriteChart(&svg, r.Headline, "svg"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## 8. levels scaling", "## 9. tenant-fairness", "| smartpool |", "<svg"} {
		if !strings.Contains(md.String()+svg.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for i, p := range r.Headline.Pools {
		if p == "smartpool" && r.Headline.ForkJoin[i] == "deadlock" {
			t.Error("smartpool deadlocked in fork-join")
		}
	}

	doc := "intro\n<!-- headline -->\nold table\n<!-- /headline -->\nrest\n"
	got, err := benchmarks.SpliceHeadline(doc, r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "old table") || !strings.Contains(got, "| smartpool |") ||
		!strings.HasPrefix(got, "intro\n<!-- headline -->\n") || !strings.HasSuffix(got, "<!-- /headline -->\nrest\n") {
		t.Errorf("SpliceHeadline:\n%s", got)
	}
	if _, err := benchmarks.SpliceHeadline("no markers", r); err == nil {
		t.Error("SpliceHeadline accepted a document without markers")
	}
}

// BenchmarkBlockingIO is workload 5 for smartpool and pond, for benchstat
// and pprof: each op runs 2,000 tasks that wait IOWait, IOInFlight at once;
// ideal% is the nominal ideal (tasks × IOWait / IOInFlight) over the wall
// time.
func BenchmarkBlockingIO(b *testing.B) {
	const tasks = 2000
	for _, a := range benchmarks.Adapters() {
		if a.Name != "smartpool" && a.Name != "pond" {
			continue
		}
		b.Run(a.Name, func(b *testing.B) {
			b.ReportAllocs()
			var wall float64
			for range b.N {
				var p benchmarks.Pool
				if a.NewIO != nil {
					p, _ = a.NewIO()
				} else {
					p = a.New(benchmarks.IOInFlight)
				}
				wall += benchmarks.BlockingIORun(p, tasks)[0]
			}
			ideal := float64(tasks) * float64(benchmarks.IOWait) / benchmarks.IOInFlight
			b.ReportMetric(100*ideal*float64(b.N)/wall, "ideal%")
		})
	}
}
