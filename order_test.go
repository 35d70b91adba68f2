package smartpool_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// recorder appends task names in start order.
type recorder struct {
	mu    sync.Mutex
	order []string
}

func (r *recorder) task(name string) func(context.Context) {
	return func(context.Context) {
		r.mu.Lock()
		r.order = append(r.order, name)
		r.mu.Unlock()
	}
}

// C1 TestOrder_FIFO_SingleWorker: with one worker, start order is submit order.
func TestOrder_FIFO_SingleWorker(t *testing.T) {
	b := &behavior{workers: 1, levels: [][]ch{{fifo("a")}}}
	o := start(t, b)
	n := scale(50000)
	var got []int
	for i := range n {
		submit(t, o, "a", func(context.Context) { got = append(got, i) }) // one worker: no race
	}
	closeWithin(t, o, long)
	require.Len(t, got, n)
	for i := range got {
		require.Equal(t, i, got[i])
	}
}

// C3 TestOrder_StrictPriority_SingleWorker: tasks submitted lowest level
// first start highest level first, FIFO inside each channel.
func TestOrder_StrictPriority_SingleWorker(t *testing.T) {
	const levels, k = 4, 1000
	b := &behavior{workers: 1, levels: [][]ch{{fifo("pin")}}}
	for l := range levels {
		b.levels = append(b.levels, []ch{fifo(fmt.Sprintf("L%da", l)), fifo(fmt.Sprintf("L%db", l))})
	}
	o := start(t, b)
	g := newGate()
	submit(t, o, "pin", g.task("pin"))
	g.waitStarted(t, 1)
	var rec recorder
	for l := levels - 1; l >= 0; l-- {
		for i := range k {
			key := fmt.Sprintf("L%d%c", l, 'a'+i%2)
			submit(t, o, key, rec.task(fmt.Sprintf("%d/%d", l, i)))
		}
	}
	close(g.release)
	closeWithin(t, o, long)
	require.Len(t, rec.order, levels*k)
	last := 0
	for _, name := range rec.order {
		var l, i int
		fmt.Sscanf(name, "%d/%d", &l, &i)
		require.GreaterOrEqual(t, l, last, "priority inversion at %s", name)
		last = l
	}
	// FIFO inside each channel.
	seen := map[string]int{}
	for _, name := range rec.order {
		var l, i int
		fmt.Sscanf(name, "%d/%d", &l, &i)
		key := fmt.Sprintf("%d%c", l, 'a'+i%2)
		require.Greater(t, i+1, seen[key], "FIFO broken in %s", key)
		seen[key] = i + 1
	}
}

// C4 TestOrder_StrictPriority_GatedCounts: smartpool's multi_level_test.
func TestOrder_StrictPriority_GatedCounts(t *testing.T) {
	b := &behavior{workers: 4, levels: [][]ch{{fifo("0a"), fifo("0b")}, {fifo("1")}, {fifo("2")}}}
	o := start(t, b)
	var started [3]atomic.Int32
	release := [3]chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
	task := func(l int) func(context.Context) {
		return func(context.Context) {
			started[l].Add(1)
			<-release[l]
		}
	}
	for i := range 10 {
		submit(t, o, []string{"0a", "0b"}[i%2], task(0))
	}
	for range 10 {
		submit(t, o, "2", task(2))
	}
	for range 10 {
		submit(t, o, "1", task(1))
	}
	counts := func() [3]int32 { return [3]int32{started[0].Load(), started[1].Load(), started[2].Load()} }
	expect := func(want [3]int32) {
		t.Helper()
		eventually(t, func() bool { return counts() == want })
		require.Equal(t, want, counts())
	}
	expect([3]int32{4, 0, 0})
	close(release[0])
	expect([3]int32{10, 4, 0})
	close(release[1])
	expect([3]int32{10, 10, 4})
	close(release[2])
	expect([3]int32{10, 10, 10})
}

// C5 TestOrder_StrictPriority_ManyWorkers: with T workers on prefilled
// levels, at most (T-1)(L-1) tasks start after a lower-level task started.
func TestOrder_StrictPriority_ManyWorkers(t *testing.T) {
	const workers, levels, k = 4, 4, 1000
	for range 20 / raceDivisor {
		b := &behavior{workers: workers, levels: [][]ch{{fifo("pin")}}}
		for l := range levels {
			b.levels = append(b.levels, []ch{fifo(fmt.Sprint(l))})
		}
		o := start(t, b)
		g := newGate()
		for range workers {
			submit(t, o, "pin", g.task("pin"))
		}
		g.waitStarted(t, workers)
		var seq atomic.Int64
		stamps := make([][]int64, levels)
		for l := range levels {
			stamps[l] = make([]int64, k)
			for i := range k {
				submit(t, o, fmt.Sprint(l), func(context.Context) { stamps[l][i] = seq.Add(1) })
			}
		}
		close(g.release)
		closeWithin(t, o, long)
		// A task of level l is passed if some task of a lower level started before it.
		passed := 0
		for l := range levels {
			for _, s := range stamps[l] {
				for lower := l + 1; lower < levels; lower++ {
					if minOf(stamps[lower]) < s {
						passed++
						break
					}
				}
			}
		}
		require.LessOrEqual(t, passed, (workers-1)*(levels-1))
	}
}

func minOf(xs []int64) int64 {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

// C6 TestOrder_HighestFirstStarvesByDesign: level 1 starts nothing while
// level 0 keeps work for one fake second; it runs once level 0 drains.
func TestOrder_HighestFirstStarvesByDesign(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &behavior{workers: 2, levels: [][]ch{{fifo("hi")}, {fifo("lo")}}}
		o, err := smartpool.New[string](b)
		require.NoError(t, err)
		var lo atomic.Int32
		var hiDone atomic.Int32
		end := time.Now().Add(time.Second)
		var resubmit func(context.Context)
		resubmit = func(context.Context) {
			time.Sleep(10 * time.Millisecond) // fake time: the task's cost
			if time.Now().Before(end) {
				_ = o.Pool().Submit("hi", resubmit)
				if lo.Load() != 0 {
					hiDone.Store(-1)
				}
				return
			}
			hiDone.Add(1)
		}
		for range 4 {
			submit(t, o, "hi", resubmit)
		}
		submit(t, o, "lo", func(context.Context) { lo.Add(1) })
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.EqualValues(t, 4, hiDone.Load(), "level 1 ran while level 0 had work")
		require.EqualValues(t, 1, lo.Load())
		_, err = o.Close(context.Background())
		require.NoError(t, err)
	})
}

// C13 TestOrder_MultiChannelEvenShare: with one worker and a strict
// rotation (Config.Quantum 1), the shards of a saturated 4-way Multi are
// served evenly: at every point while all shards hold work, their pop
// counts differ by at most 1.
func TestOrder_MultiChannelEvenShare(t *testing.T) {
	m := channels.NewMulti(4, channels.NewFIFO)
	b := &behavior{workers: 1, quantum: 1, levels: [][]ch{{fifo("pin")}, {{key: "m", c: m, coc: true}}}}
	o := start(t, b)
	g := newGate()
	submit(t, o, "pin", g.task("pin"))
	g.waitStarted(t, 1)
	perShard := scale(100000) / 4
	var served []int // one worker: no race
	for s, shard := range m.Shards() {
		for range perShard {
			require.NoError(t, shard.Submit(func(context.Context) { served = append(served, s) }))
		}
	}
	close(g.release)
	closeWithin(t, o, long)
	require.Len(t, served, 4*perShard)
	var counts [4]int
	for i, s := range served {
		counts[s]++
		lo, hi := slices.Min(counts[:]), slices.Max(counts[:])
		require.LessOrEqual(t, hi-lo, 1, "after %d pops: %v", i+1, counts)
	}
}
