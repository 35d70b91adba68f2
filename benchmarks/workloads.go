package benchmarks

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The suite's workloads. Each function measures one run on a fresh pool
// and returns its figures; the suite alternates runs between pools.

// SpawnSpam submits n empty tasks to p, split evenly over the given number
// of producer goroutines, and waits for them all.
func SpawnSpam(p Pool, n, producers int) {
	empty := func() {}
	if producers == 1 {
		for range n {
			p.Submit(empty)
		}
	} else {
		var wg sync.WaitGroup
		for i := range producers {
			wg.Go(func() {
				for range n/producers + btoi(i < n%producers) {
					p.Submit(empty)
				}
			})
		}
		wg.Wait()
	}
	p.Wait()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// spawnRun measures SpawnSpam on a fresh pool: ns per task.
func spawnRun(newPool func() Pool, n, producers int) []float64 {
	p := newPool()
	defer p.Close()
	t := time.Now()
	SpawnSpam(p, n, producers)
	return []float64{since(t) / float64(n)}
}

// spinner burns CPU with a dependent chain of multiply-adds, calibrated so
// that a known number of iterations lasts a known time.
type spinner struct{ perMicro int }

var spinSink atomic.Uint64 // keeps the spin loop from being optimised away

//go:noinline
func spin(iters int) {
	x := uint64(iters)
	for range iters {
		x = x*6364136223846793005 + 1442695040888963407
	}
	if x == 0 {
		spinSink.Add(1)
	}
}

// calibrate finds how many iterations make one microsecond, from the fastest
// of several timed runs (the least disturbed).
func calibrate() spinner {
	const iters = 2_000_000
	best := time.Duration(1 << 62)
	for range 7 {
		t := time.Now()
		spin(iters)
		best = min(best, time.Since(t))
	}
	return spinner{perMicro: max(1, int(iters*1000/best.Nanoseconds()))}
}

// cost returns the measured duration, in ns, of one spin of us microseconds.
func (s spinner) cost(us int) float64 {
	const n = 2000
	xs := make([]float64, 7)
	for i := range xs {
		t := time.Now()
		for range n {
			spin(us * s.perMicro)
		}
		xs[i] = since(t) / n
	}
	return Summarize(xs).Median
}

// cpuLightRun runs n tasks of one calibrated microsecond: wall ns.
func cpuLightRun(p Pool, s spinner, n int) []float64 {
	defer p.Close()
	iters := s.perMicro
	task := func() { spin(iters) }
	t := time.Now()
	for range n {
		p.Submit(task)
	}
	p.Wait()
	return []float64{since(t)}
}

// ForkJoinLeaf is the size below which the fork-join quicksort sorts a part
// in the task itself rather than submitting its halves.
const ForkJoinLeaf = 2048

// errDeadlock reports a pool that stopped making progress on nested submits.
var errDeadlock = errors.New("deadlock")

// forkJoinRun sorts a copy of src by quicksort in which every task
// partitions its part and submits both halves. A watchdog declares a
// deadlock when no task finished for stall, and then abandons the pool and
// its goroutines. buf is the buffer to sort into; a fresh one is returned
// when the old one was abandoned. Figures: wall ns.
func forkJoinRun(p Pool, src, buf []int32, stall time.Duration) ([]float64, []int32, error) {
	copy(buf, src)
	var progress atomic.Int64
	var sort func(a []int32)
	sort = func(a []int32) {
		defer progress.Add(1)
		if len(a) <= ForkJoinLeaf {
			slices.Sort(a)
			return
		}
		m := partition(a)
		lo, hi := a[:m], a[m:]
		p.Submit(func() { sort(lo) })
		p.Submit(func() { sort(hi) })
	}
	done := make(chan struct{})
	t := time.Now()
	go func() {
		p.Submit(func() { sort(buf) })
		p.Wait()
		close(done)
	}()
	tick := time.NewTicker(stall / 4)
	defer tick.Stop()
	last, lastMove := int64(-1), time.Now()
	for {
		select {
		case <-done:
			wall := since(t)
			p.Close()
			if !slices.IsSorted(buf) {
				return nil, buf, errors.New("wrong result: not sorted")
			}
			return []float64{wall}, buf, nil
		case now := <-tick.C:
			if n := progress.Load(); n != last {
				last, lastMove = n, now
			} else if now.Sub(lastMove) >= stall {
				return nil, make([]int32, len(buf)), errDeadlock
			}
		}
	}
}

// partition is Hoare's scheme around the median of three; it returns m with
// 0 < m < len(a) and every a[:m] <= every a[m:].
func partition(a []int32) int {
	x, y, z := a[0], a[len(a)/2], a[len(a)-1]
	pivot := max(min(x, y), min(max(x, y), z))
	i, j := -1, len(a)
	for {
		for i++; a[i] < pivot; i++ {
		}
		for j--; a[j] > pivot; j-- {
		}
		if i >= j {
			return j + 1
		}
		a[i], a[j] = a[j], a[i]
	}
}

// randomInt32s returns n pseudo-random int32 from a fixed seed.
func randomInt32s(n int) []int32 {
	r := rand.New(rand.NewPCG(1, 2))
	a := make([]int32, n)
	for i := range a {
		a[i] = r.Int32()
	}
	return a
}

// IOWait is the simulated I/O of the blocking-io workload, and IOInFlight
// how many waits may be in flight (the pool size).
const (
	IOWait     = time.Millisecond
	IOInFlight = 64
)

// blockingIORun runs n tasks that each sleep IOWait: wall ns.
func blockingIORun(p Pool, n int) []float64 {
	defer p.Close()
	task := func() { time.Sleep(IOWait) }
	t := time.Now()
	for range n {
		p.Submit(task)
	}
	p.Wait()
	return []float64{since(t)}
}

// sleepCost measures how long time.Sleep(IOWait) really lasts, in ns.
func sleepCost() float64 {
	xs := make([]float64, 200)
	for i := range xs {
		t := time.Now()
		time.Sleep(IOWait)
		xs[i] = since(t)
	}
	return Summarize(xs).Median
}

// Priority-latency parameters: the gap between urgent submits, the cost of
// a backlog task, and how long the urgent phase waits for the backlog to be
// queued before it starts anyway (the submit of pools without a queue blocks).
const (
	UrgentGap       = 200 * time.Microsecond
	BacklogTaskUs   = 5
	backlogPatience = 250 * time.Millisecond
)

// priorityRun queues backlog tasks of BacklogTaskUs from one goroutine, then
// submits urgent empty tasks, one every UrgentGap, through PrepareHigh where
// the pool has it, and measures each urgent task's submit-to-start latency:
// from the submit call, the task already made (highPrepare).
// Figures: p50, p99, max (ns), and the fraction of the backlog submitted
// when the urgent phase began.
func priorityRun(p Pool, s spinner, backlog, urgent int) []float64 {
	defer p.Close()
	queued, atStart := queueBacklog(p.Submit, s, backlog)
	prepare := highPrepare(p)
	lat := make([]float64, urgent)
	start := time.Now()
	for i := range lat {
		if d := time.Until(start.Add(time.Duration(i) * UrgentGap)); d > 0 {
			time.Sleep(d)
		}
		var t time.Time
		submit := prepare(func() { lat[i] = since(t) }) // read by the task, after the submit that follows the write
		t = time.Now()
		submit()
	}
	<-queued
	p.Wait()
	slices.Sort(lat)
	return []float64{Quantile(lat, 0.5), Quantile(lat, 0.99), lat[len(lat)-1], atStart}
}

// queueBacklog submits backlog tasks of BacklogTaskUs with submit (a pool's
// Submit, or a tenant's) from a goroutine of its own and waits until they
// are all queued, or for backlogPatience; it returns a channel closed once
// they are, and the fraction submitted when it returned.
func queueBacklog(submit func(func()), s spinner, backlog int) (queued <-chan struct{}, atStart float64) {
	iters := BacklogTaskUs * s.perMicro
	low := func() { spin(iters) }
	done := make(chan struct{})
	var submitted atomic.Int64
	go func() {
		for range backlog {
			submit(low)
			submitted.Add(1)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(backlogPatience):
	}
	return done, float64(submitted.Load()) / float64(backlog)
}

// highPrepare returns p's PrepareHigh where it has one, else a preparation
// whose call is Submit. The urgent workloads make each task first and then
// time the call: a task is its caller's to make, in any pool, and its
// closures' allocation (a page fault, at times, once the backlog's heap
// shrinks and the runtime returns pages to the OS) is not the pool's
// latency. Submit, for a pool without a Prioritizer, still makes its
// adapter's wrapper inside the figure.
func highPrepare(p Pool) func(fn func()) (submit func()) {
	if h, ok := p.(Prioritizer); ok {
		return h.PrepareHigh
	}
	return func(fn func()) func() { return func() { p.Submit(fn) } }
}

// fairnessRun queues backlog tasks of BacklogTaskUs with Submit (the first
// tenant's), from a goroutine of its own, then brings in newcomer tenants,
// one every UrgentGap, each with one empty task, and measures each
// newcomer's arrival-to-start latency: from before NewTenant where the pool
// queues tenants apart (Tenanter; the queue's creation included), else from
// before Submit (time blocked in it included). Figures: p50, p99, max (ns),
// and the fraction of the backlog submitted when the newcomers began.
func fairnessRun(p Pool, s spinner, backlog, newcomers int) ([]float64, error) {
	defer p.Close()
	tenant := func() (func(func()), error) { return p.Submit, nil }
	if tp, ok := p.(Tenanter); ok {
		tenant = tp.NewTenant
	}
	queued, atStart := queueBacklog(p.Submit, s, backlog)
	lat := make([]float64, newcomers)
	start := time.Now()
	for i := range lat {
		if d := time.Until(start.Add(time.Duration(i) * UrgentGap)); d > 0 {
			time.Sleep(d)
		}
		t := time.Now()
		submit, err := tenant()
		if err != nil {
			<-queued
			p.Wait()
			return nil, err
		}
		submit(func() { lat[i] = since(t) })
	}
	<-queued
	p.Wait()
	slices.Sort(lat)
	return []float64{Quantile(lat, 0.5), Quantile(lat, 0.99), lat[len(lat)-1], atStart}, nil
}

// memoryRun occupies every worker of p with a task that blocks, submits n
// empty tasks from another goroutine, and once they are all queued (or the
// submitter is stuck: the pool blocks) reads the heap. Figures: tasks
// queued; bytes allocated, bytes still live after a GC, and allocations,
// each per queued task.
func memoryRun(p Pool, workers, n int) []float64 {
	defer p.Close()
	gate := make(chan struct{})
	var started sync.WaitGroup
	started.Add(workers)
	for range workers {
		p.Submit(func() { started.Done(); <-gate })
	}
	started.Wait()
	before := heap()
	var queued atomic.Int64
	submitted := make(chan struct{})
	empty := func() {}
	go func() {
		for range n {
			p.Submit(empty)
			queued.Add(1)
		}
		close(submitted)
	}()
	waitQueued(submitted, &queued)
	q := float64(queued.Load())
	var end runtime.MemStats
	runtime.ReadMemStats(&end)
	after := heap()
	close(gate)
	<-submitted
	p.Wait()
	return []float64{
		q,
		float64(end.TotalAlloc-before.TotalAlloc) / q,
		float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / q,
		float64(end.Mallocs-before.Mallocs) / q,
	}
}

// waitQueued returns when submitted is closed, or when count has not moved
// for 50 ms (the submitter is blocked).
func waitQueued(submitted <-chan struct{}, count *atomic.Int64) {
	last := int64(-1)
	for {
		select {
		case <-submitted:
			return
		case <-time.After(50 * time.Millisecond):
			if n := count.Load(); n == last {
				return
			} else {
				last = n
			}
		}
	}
}

// heap collects garbage and returns the memory statistics.
func heap() runtime.MemStats {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// harnessMemory measures what the adapters' own wrapping costs per task (the
// closure that calls the WaitGroup's Done), which every pool pays alike:
// bytes and allocations per task.
func harnessMemory(n int) (bytes, allocs float64) {
	hold := make([]func(), n)
	var wg sync.WaitGroup
	empty := func() {}
	before := heap()
	for i := range hold {
		wg.Add(1)
		hold[i] = wrap(empty, &wg)
	}
	after := heap()
	runtime.KeepAlive(hold)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n), float64(after.Mallocs-before.Mallocs) / float64(n)
}

//go:noinline
func wrap(fn func(), wg *sync.WaitGroup) func() { return func() { fn(); wg.Done() } }
