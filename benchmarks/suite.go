package benchmarks

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/smartpool-go/smartpool"
)

// Config sets the size of a suite run. The zero Config is the full run.
type Config struct {
	// Scale multiplies every task count; 0 means 1, the suite's full counts.
	// CI uses 0.01.
	Scale float64
	// Rounds is the number of measured runs behind each figure, after one
	// warm-up run; 0 means 5.
	Rounds int
	// Workers is the pool size; 0 means runtime.GOMAXPROCS(0).
	Workers int
	// Log, if set, receives one line as each workload finishes.
	Log io.Writer
}

// Results is everything a suite run measured, ready to print.
type Results struct {
	Config   Config
	Machine  Machine
	Elapsed  time.Duration
	Tables   []Table  // headline, floors, then workloads 1-9
	Headline Headline // the figures the chart shows
}

// Table is one workload's result, in cells ready to print.
type Table struct {
	Title  string
	About  string // what was measured, one paragraph
	Header []string
	Rows   [][]string
	Notes  []string
	Text   int // leading columns that hold text (left-aligned); 0 means 1
}

// Headline holds, per pool, the figures of the chart and the summary table.
type Headline struct {
	Pools                          []string
	Spawn, Multi, Overhead, P99    []Summary
	ForkJoin, IOIdeal, MemRetained []string // already formatted
}

// suite is one run in progress.
type suite struct {
	Config
	as      []Adapter
	spin    spinner
	res     *Results
	floorGo Summary // go + WaitGroup per task
}

// Run runs every workload of the suite and returns the results. It takes a
// few minutes at scale 1 on two cores and seconds at 0.01.
func Run(cfg Config) *Results {
	if cfg.Scale <= 0 {
		cfg.Scale = 1
	}
	if cfg.Rounds <= 0 {
		cfg.Rounds = 5
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	s := &suite{Config: cfg, as: Adapters(), res: &Results{Config: cfg, Machine: ThisMachine()}}
	for _, a := range s.as {
		s.res.Headline.Pools = append(s.res.Headline.Pools, a.Name)
	}
	start := time.Now()
	s.spin = calibrate()
	for _, step := range []func() Table{
		s.floors, s.spawnSpam, s.multiProducer, s.cpuLight, s.forkJoin,
		s.blockingIO, s.priorityLatency, s.priorityLatencyDeep, s.memory, s.levels,
		s.tenantFairness,
	} {
		t0 := time.Now()
		t := step()
		s.res.Tables = append(s.res.Tables, t)
		if s.Log != nil {
			fmt.Fprintf(s.Log, "%-40s %6.1fs\n", t.Title, time.Since(t0).Seconds())
		}
	}
	s.res.Tables = append([]Table{s.headline()}, s.res.Tables...)
	s.res.Elapsed = time.Since(start)
	return s.res
}

// n scales one of the suite's full task counts, keeping at least lo.
func (s *suite) n(count, lo int) int { return max(lo, int(float64(count)*s.Scale)) }

// byName returns the index of the adapter named name, or -1.
func (s *suite) byName(name string) int {
	for i, a := range s.as {
		if a.Name == name {
			return i
		}
	}
	return -1
}

func (s *suite) floors() Table {
	fs := floors()
	res := alternate(len(fs), s.Rounds, 1, func(i int) ([]float64, error) {
		return floorRun(fs[i], s.n(fs[i].n, 1000)), nil
	})
	t := Table{Title: "Floors", About: "The primitives pools are built from, measured in the same run.",
		Header: []string{"operation", "ns/op"}}
	for i, f := range fs {
		t.Rows = append(t.Rows, []string{f.name, res[i][0].Num()})
	}
	s.floorGo = res[len(fs)-1][0]
	return t
}

// spawnTable runs spawn-spam with the given number of producers.
func (s *suite) spawnTable(title string, producers int) ([]Summary, Table) {
	n := s.n(1_000_000, 1000)
	res := alternate(len(s.as), s.Rounds, 1, func(i int) ([]float64, error) {
		return spawnRun(func() Pool { return s.as[i].New(s.Workers) }, n, producers), nil
	})
	t := Table{Title: title,
		About:  fmt.Sprintf("%d empty tasks submitted from %d goroutine(s), then wait; ns per task, median (min–max) of %d runs.", n, producers, s.Rounds),
		Header: []string{"pool", "ns/task", "× chan-pool", "× pond", "× go+WaitGroup floor"}}
	col := column(res, 0)
	ch, pd := col[s.byName("chan-pool")], col[s.byName("pond")]
	for i, a := range s.as {
		t.Rows = append(t.Rows, []string{a.Name, col[i].Num(), ratio(col[i], ch), ratio(col[i], pd), ratio(col[i], s.floorGo)})
	}
	return col, t
}

func (s *suite) spawnSpam() Table {
	col, t := s.spawnTable("1. spawn-spam", 1)
	s.res.Headline.Spawn = col
	return t
}

func (s *suite) multiProducer() Table {
	col, t := s.spawnTable("2. multi-producer", 8)
	s.res.Headline.Multi = col
	return t
}

func (s *suite) cpuLight() Table {
	n := s.n(200_000, 1000)
	cost := s.spin.cost(1)
	ideal := cost * float64(n) / float64(s.Workers)
	res := alternate(len(s.as), s.Rounds, 1, func(i int) ([]float64, error) {
		return cpuLightRun(s.as[i].New(s.Workers), s.spin, n), nil
	})
	over := make([]Summary, len(s.as))
	t := Table{Title: "3. cpu-light",
		About: fmt.Sprintf("%d tasks of calibrated arithmetic (measured %.0f ns each on one goroutine); ideal = cost × N / %d workers = %s. Overhead = (wall − ideal) / N, wall ns per task.",
			n, cost, s.Workers, FormatNs(ideal)),
		Header: []string{"pool", "wall", "overhead ns/task", "× pond overhead"}}
	for i := range s.as {
		w := res[i][0]
		over[i] = Summary{Median: (w.Median - ideal) / float64(n), Min: (w.Min - ideal) / float64(n), Max: (w.Max - ideal) / float64(n), Runs: w.Runs, Status: w.Status}
	}
	pd := over[s.byName("pond")]
	for i, a := range s.as {
		t.Rows = append(t.Rows, []string{a.Name, res[i][0].Ns(), over[i].Num(), ratio(over[i], pd)})
	}
	s.res.Headline.Overhead = over
	return t
}

func (s *suite) forkJoin() Table {
	n := s.n(10_000_000, 100_000)
	src := randomInt32s(n)
	buf := make([]int32, n)
	stall := max(250*time.Millisecond, time.Duration(2*s.Scale*float64(time.Second)))
	as := append([]Adapter{{Name: "sequential", New: func(int) Pool { return inline{} }}}, s.as...)
	res := alternate(len(as), s.Rounds, 1, func(i int) ([]float64, error) {
		figs, b, err := forkJoinRun(as[i].New(s.Workers), src, buf, stall)
		buf = b
		return figs, err
	})
	t := Table{Title: "4. fork-join",
		About:  fmt.Sprintf("Quicksort of %d int32: each task partitions its part and submits both halves, down to %d elements. A pool with no finished task for %v is reported as deadlocked (and abandoned).", n, ForkJoinLeaf, stall),
		Header: []string{"pool", "wall", "× sequential"}}
	seq := res[0][0]
	for i, a := range as {
		t.Rows = append(t.Rows, []string{a.Name, res[i][0].Ns(), ratio(res[i][0], seq)})
		if i > 0 {
			s.res.Headline.ForkJoin = append(s.res.Headline.ForkJoin, ratioOrStatus(res[i][0], seq))
		}
	}
	return t
}

func (s *suite) blockingIO() Table {
	n := s.n(20_000, 640)
	ideal := float64(n) * float64(IOWait) / IOInFlight
	slept := sleepCost()
	var as []Adapter
	notes := make(map[string]string) // footnotes of the IO variants, by pool
	for _, a := range s.as {
		if a.Name != "goroutines" { // it has no in-flight limit
			as = append(as, a)
		}
	}
	res := alternate(len(as), s.Rounds, 1, func(i int) ([]float64, error) {
		if as[i].NewIO == nil {
			return blockingIORun(as[i].New(IOInFlight), n), nil
		}
		p, note := as[i].NewIO()
		if note != "" {
			notes[as[i].Name] = note
		}
		return blockingIORun(p, n), nil
	})
	t := Table{Title: "5. blocking-io",
		About: fmt.Sprintf("%d tasks that sleep %v, %d in flight. Nominal ideal %s; a %v sleep measured %s here, so the ceiling is %.0f%% of nominal. Plain goroutines are left out: they have no in-flight limit.",
			n, IOWait, IOInFlight, FormatNs(ideal), IOWait, FormatNs(slept), 100*float64(IOWait)/slept),
		Header: []string{"pool", "wall", "tasks/s", "% of nominal ideal"}}
	ioIdeal := make(map[string]string)
	for i, a := range as {
		w := res[i][0]
		pct := Summary{Median: 100 * ideal / w.Median, Min: 100 * ideal / w.Max, Max: 100 * ideal / w.Min, Runs: w.Runs, Status: w.Status}
		tput := Summary{Median: float64(n) / w.Median * 1e9, Min: float64(n) / w.Max * 1e9, Max: float64(n) / w.Min * 1e9, Runs: w.Runs, Status: w.Status}
		name := a.Name
		if note, ok := notes[a.Name]; ok {
			name += " *"
			t.Notes = append(t.Notes, "* "+note)
		}
		t.Rows = append(t.Rows, []string{name, w.Ns(), tput.Num(), pct.Num()})
		ioIdeal[a.Name] = sig(pct.Median) + "%"
	}
	for _, a := range s.as {
		v, ok := ioIdeal[a.Name]
		if !ok {
			v = "—"
		}
		s.res.Headline.IOIdeal = append(s.res.Headline.IOIdeal, v)
	}
	return t
}

func (s *suite) priorityLatency() Table {
	backlog, urgent := s.n(200_000, 2000), s.n(1000, 20)
	res := alternate(len(s.as), s.Rounds, 4, func(i int) ([]float64, error) {
		return priorityRun(s.as[i].New(s.Workers), s.spin, backlog, urgent), nil
	})
	t := Table{Title: "6. priority-latency",
		About: fmt.Sprintf("%d backlog tasks of %d µs submitted from one goroutine; once they are all queued, or after %v (the submit of pools without a queue blocks), %d urgent empty tasks, one every %v, submitted at high priority where the pool has one (two-chan: its high chan; smartpool: its high level) and as ordinary tasks elsewhere. Submit-to-start latency of the urgent tasks, from the submit call to the start, time blocked in it included; each task is made (its closures allocated, as its caller would) before the clock starts; each cell is the median (min–max) over runs of that run's percentile.",
			backlog, BacklogTaskUs, backlogPatience, urgent, UrgentGap),
		Header: []string{"pool", "p50", "p99", "max", "p99 × two-chan", "backlog submitted at start"}}
	two := res[s.byName("two-chan")][1]
	for i, a := range s.as {
		t.Rows = append(t.Rows, []string{a.Name, res[i][0].Ns(), res[i][1].Ns(), res[i][2].Ns(), ratio(res[i][1], two), median(res[i][3], percent)})
	}
	t.Notes = append(t.Notes, "Pools whose submit blocks hold no backlog: its producer waits in Submit instead, and the urgent submitter only competes with it for the next free worker.")
	s.res.Headline.P99 = column(res, 1)
	return t
}

// priorityLatencyDeep is priority-latency behind a backlog five times
// deeper, for the pools that hold such a backlog and serve urgent work
// first: the others would only report how long the backlog takes to drain.
func (s *suite) priorityLatencyDeep() Table {
	backlog, urgent := s.n(1_000_000, 10_000), s.n(1000, 20)
	var idx []int
	for _, name := range []string{"two-chan", "smartpool"} {
		if i := s.byName(name); i >= 0 {
			idx = append(idx, i)
		}
	}
	res := alternate(len(idx), s.Rounds, 4, func(j int) ([]float64, error) {
		return priorityRun(s.as[idx[j]].New(s.Workers), s.spin, backlog, urgent), nil
	})
	t := Table{Title: "6b. priority-latency, deep backlog",
		About:  fmt.Sprintf("Workload 6 with %d backlog tasks, for the pools with a high priority lane (two-chan's blocks once its chan holds 1,024).", backlog),
		Header: []string{"pool", "p50", "p99", "max", "backlog submitted at start"}}
	for j, i := range idx {
		t.Rows = append(t.Rows, []string{s.as[i].Name, res[j][0].Ns(), res[j][1].Ns(), res[j][2].Ns(), median(res[j][3], percent)})
	}
	return t
}

func (s *suite) memory() Table {
	n := s.n(1_000_000, 10_000)
	hb, ha := harnessMemory(n)
	res := alternate(len(s.as), s.Rounds, 4, func(i int) ([]float64, error) {
		if s.as[i].Name == "goroutines" {
			return nil, errors.New("no queue") // every task runs on its own goroutine at once
		}
		return memoryRun(s.as[i].New(s.Workers), s.Workers, n), nil
	})
	t := Table{Title: "7. memory-under-backlog",
		About: fmt.Sprintf("%d empty tasks submitted behind %d workers blocked in a task. Per queued task: bytes allocated while queueing, bytes still live after a GC, allocations. The harness's own wrapper (the closure that calls the WaitGroup's Done, paid by every pool alike) costs %.0f B and %.2f allocations per task; the last column subtracts it.", n, s.Workers, hb, ha),
		Text:  2, Header: []string{"pool", "policy", "queued", "allocated B/task", "live B/task after GC", "allocs/task", "pool's own live B/task"}}
	for i, a := range s.as {
		r := res[i]
		q := r[0]
		row, live := []string{a.Name, a.Policy}, "—"
		switch {
		case q.Status != "":
			row = append(row, "—", "—", "—", "—", "—")
		case q.Median < float64(n)/2:
			row = append(row, fmt.Sprintf("%.0f (then blocks)", q.Median), "—", "—", "—", "—")
		default:
			own := Summary{Median: r[2].Median - hb, Min: r[2].Min - hb, Max: r[2].Max - hb, Runs: r[2].Runs}
			row = append(row, fmt.Sprintf("%.0f", q.Median), r[1].Num(), r[2].Num(), r[3].Num(), own.Num())
			live = sig(r[2].Median) + " B"
		}
		t.Rows = append(t.Rows, row)
		s.res.Headline.MemRetained = append(s.res.Headline.MemRetained, live)
	}
	return t
}

func (s *suite) levels() Table {
	n := s.n(1_000_000, 1000)
	queues, levels := []int{1, 8, 64, 4096}, []int{1, 4, 16}
	type cell struct{ q, l, quantum int }
	var cells []cell
	for _, q := range queues {
		for _, l := range levels {
			if q >= l {
				cells = append(cells, cell{q, l, 0})
			}
		}
	}
	for _, l := range levels { // the many-queue row again, with a strict rotation (Config.Quantum 1)
		cells = append(cells, cell{4096, l, 1})
	}
	// Cells of one pool, cheap to run: at least 9 runs each, as run-to-run
	// noise on 2 cores is bimodal (the 3 goroutines' placement on 2
	// processors) and a median of 5 flips between the modes.
	rounds := max(s.Rounds, 9)
	res := alternate(len(cells), rounds, 1, func(i int) ([]float64, error) {
		c := cells[i]
		p := NewSmartpoolQuantum(s.Workers, c.q, c.l, c.quantum)
		defer p.Close()
		empty := func() {}
		t := time.Now()
		for j := range n {
			p.SubmitTo(j%c.q, empty)
		}
		p.Wait()
		return []float64{since(t) / float64(n)}, nil
	})
	t := Table{Title: "8. levels scaling (smartpool)",
		About:  fmt.Sprintf("Spawn-spam of %d empty tasks submitted round-robin over every queue (one FIFO channel each), the queues spread evenly over the levels; ns per task, median (min–max) of %d runs.", n, rounds),
		Header: []string{"queues", "1 level", "4 levels", "16 levels"}}
	at := func(q, l, quantum int) Summary {
		for i, c := range cells {
			if c.q == q && c.l == l && c.quantum == quantum {
				return res[i][0]
			}
		}
		return Summary{Status: "—"}
	}
	addRow := func(name string, q, quantum int) {
		row := []string{name}
		for _, l := range levels {
			if v := at(q, l, quantum); v.Runs > 0 {
				row = append(row, v.Num())
			} else {
				row = append(row, "—")
			}
		}
		t.Rows = append(t.Rows, row)
	}
	for _, q := range queues {
		addRow(fmt.Sprint(q), q, 0)
	}
	strict := "4096, Quantum 1"
	addRow(strict, 4096, 1)
	for _, r := range []struct {
		name    string
		quantum int
	}{{"4096 ÷ 1 queue", 0}, {strict + " ÷ 1 queue", 1}} {
		row := []string{r.name}
		for _, l := range levels {
			row = append(row, ratio(at(4096, l, r.quantum), at(1, 1, 0)))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Notes = append(t.Notes, fmt.Sprintf("The last rows divide a 4,096-queue figure by the 1-queue, 1-level one. By default (Config.Quantum 0) a worker takes up to %d tasks in a row from the queue it took a batch from while its tasks are short, as these empty ones are, and one per queue per turn once they are long; Quantum 1 keeps the strict rotation, one task per queue per turn, whatever their length.", smartpool.MaxQuantum))
	return t
}

// tenantFairness times a newcomer tenant's first task behind another
// tenant's backlog: in smartpool with a channel per tenant in one level,
// whose workers serve the queues in rotation, and where every tenant shares
// one FIFO queue: pond's, and smartpool's own as a control.
func (s *suite) tenantFairness() Table {
	backlog, newcomers := s.n(100_000, 10_000), s.n(500, 20)
	type subject struct {
		name, queues string
		new          func() Pool
	}
	subjects := []subject{
		{"smartpool", "a channel per tenant, one level", func() Pool { return NewSmartpoolTenants(s.Workers, 1+newcomers) }},
		{"smartpool", "one shared channel", func() Pool { return NewSmartpool(s.Workers) }},
	}
	if i := s.byName("pond"); i >= 0 { // unbounded, as smartpool: it holds the whole backlog
		subjects = append(subjects, subject{"pond", "one shared queue", func() Pool { return s.as[i].New(s.Workers) }})
	}
	res := alternate(len(subjects), s.Rounds, 4, func(i int) ([]float64, error) {
		return fairnessRun(subjects[i].new(), s.spin, backlog, newcomers)
	})
	t := Table{Title: "9. tenant-fairness",
		About: fmt.Sprintf("One tenant submits %d tasks of %d µs from one goroutine; once they are all queued, or after %v, %d newcomer tenants arrive, one every %v, each with one empty task. Arrival-to-start latency of the newcomers' tasks (with a channel per tenant, the channel's AddChannel included; with a shared queue, time blocked in Submit included); each cell is the median (min–max) over runs of that run's percentile.",
			backlog, BacklogTaskUs, backlogPatience, newcomers, UrgentGap),
		Text: 2, Header: []string{"pool", "tenants' queues", "p50", "p99", "max", "backlog submitted at start"}}
	for i, sub := range subjects {
		r := res[i]
		t.Rows = append(t.Rows, []string{sub.name, sub.queues, r[0].Ns(), r[1].Ns(), r[2].Ns(), median(r[3], percent)})
	}
	t.Notes = append(t.Notes, "Behind a shared FIFO queue a newcomer waits for what is left of the backlog queued before it. With a channel per tenant each worker serves the non-empty queues in turn: a newcomer's task starts once a worker ends its current backlog task, or the next one. Each newcomer's channel stays once its task ran: an empty queue costs the workers nothing.")
	return t
}

// headline is the one-line-per-pool summary that opens the report.
func (s *suite) headline() Table {
	h := s.res.Headline
	t := Table{Title: "Headline",
		About:  "Medians; see each workload's table for ranges and definitions.",
		Header: []string{"pool", "spawn-spam ns/task", "multi-producer ns/task", "cpu-light overhead ns/task", "fork-join × sequential", "blocking-io % of ideal", "priority p99", "live B/queued task"}}
	for i, p := range h.Pools {
		t.Rows = append(t.Rows, []string{p, median(h.Spawn[i], sig), median(h.Multi[i], sig), median(h.Overhead[i], sig),
			h.ForkJoin[i], h.IOIdeal[i], median(h.P99[i], FormatNs), h.MemRetained[i]})
	}
	return t
}

// column returns figure f of every subject.
func column(res [][]Summary, f int) []Summary {
	out := make([]Summary, len(res))
	for i := range res {
		out[i] = res[i][f]
	}
	return out
}

// ratio formats a's median over b's.
func ratio(a, b Summary) string {
	if a.Status != "" || b.Status != "" || a.Runs == 0 || b.Median == 0 {
		return "—"
	}
	return sig(a.Median/b.Median) + "×"
}

// ratioOrStatus is ratio, or a's status when a failed.
func ratioOrStatus(a, b Summary) string {
	if a.Status != "" {
		return a.Status
	}
	return ratio(a, b)
}

// percent formats a fraction as a percentage.
func percent(f float64) string { return sig(100*f) + "%" }

// median formats s's median alone, or its status.
func median(s Summary, f func(float64) string) string {
	if s.Status != "" {
		return s.Status
	}
	return f(s.Median)
}

// inline runs each task at once on the submitting goroutine: the
// sequential baseline of fork-join.
type inline struct{}

func (inline) Submit(fn func()) { fn() }
func (inline) Wait()            {}
func (inline) Close()           {}
