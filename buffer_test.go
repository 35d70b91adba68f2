package smartpool_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// A worker's run buffer (buffer.go) meeting each way a queued task can end.
// Every case builds the same state: one worker, whose batch poll took the
// first batchMax tasks of a backlog and is running the first one, blocked;
// so batchMax-1 tasks wait in its buffer and the rest in the channel.

const (
	backlog  = 10 // tasks queued behind the gate
	buffered = 7  // of them in the worker's buffer: a batch of 8 minus the one running
)

// bufferedPool is a one-worker pool whose worker holds a batch: first is
// running (it blocks until release is closed), the backlog-1 others are
// queued, buffered of them in the worker's buffer. ran records the others'
// names in the order they ran.
type bufferedPool struct {
	o       *smartpool.OwnedPool[string]
	release chan struct{}
	free    func() // closes release, once
	mu      sync.Mutex
	ran     []string
	ends    endCounter // OnEnd of "lo"
}

// newBufferedPool builds it; with ctx non-nil the backlog is submitted by
// Submit with WithContext(ctx); with yield each backlog task yields its worker
// before it records its name.
func newBufferedPool(t *testing.T, coc bool, ctx context.Context, yield bool) *bufferedPool {
	t.Helper()
	bp := &bufferedPool{release: make(chan struct{})}
	b := &behavior{workers: 1, levels: [][]ch{
		{fifo("hi")},
		{{key: "lo", c: channels.NewFIFO(), coc: coc, onEnd: bp.ends.fn}},
	}}
	bp.o = start(t, b)
	bp.free = sync.OnceFunc(func() { close(bp.release) })
	t.Cleanup(bp.free) // before start's Close, if the test failed early
	g := newGate()
	submit(t, bp.o, "lo", g.task("gate"))
	g.waitStarted(t, 1)
	started := make(chan struct{})
	submit(t, bp.o, "lo", func(context.Context) { close(started); <-bp.release })
	for i := range backlog - 1 {
		name := fmt.Sprint("t", i)
		fn := func(ctx context.Context) {
			if yield {
				smartpool.Yield(ctx, func() {})
			}
			bp.record(name)
		}
		var err error
		if ctx != nil {
			err = bp.o.Pool().Submit("lo", fn, smartpool.WithContext(ctx))
		} else {
			err = bp.o.Pool().Submit("lo", fn)
		}
		if err != nil {
			t.Fatalf("submit %s: %v", name, err)
		}
	}
	close(g.release)
	waitFor(t, started, "the batch's first task")
	return bp
}

func (bp *bufferedPool) record(name string) {
	bp.mu.Lock()
	bp.ran = append(bp.ran, name)
	bp.mu.Unlock()
}

func (bp *bufferedPool) names() []string {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	return slices.Clone(bp.ran)
}

func TestBuffer_Endings(t *testing.T) {
	for _, tc := range []struct {
		name       string
		coc        bool
		cancelRest bool // submit the rest with WithContext and cancel them
		yield      bool // the rest yield their worker once
		close      bool // Close while the first task runs
		want       func(s smartpool.ChannelStats[string], bp *bufferedPool) string
	}{
		{name: "run", coc: true, want: ranAll},
		{name: "run/yield", coc: true, yield: true, want: ranAllAnyOrder},
		{name: "close/complete", coc: true, close: true, want: ranAll},
		{name: "close/complete/yield", coc: true, close: true, yield: true, want: ranAllAnyOrder},
		{name: "close/drop", close: true, want: func(s smartpool.ChannelStats[string], bp *bufferedPool) string {
			if s.Dropped != backlog-1 || bp.ends.of(smartpool.DroppedOnClose) != backlog-1 || bp.ends.of(smartpool.Ran) != 2 || len(bp.names()) != 0 {
				return fmt.Sprintf("dropped %d (OnEnd: %d dropped on close, %d ran), ran %v; want %d dropped, none ran but the gate and the first",
					s.Dropped, bp.ends.of(smartpool.DroppedOnClose), bp.ends.of(smartpool.Ran), bp.names(), backlog-1)
			}
			return ""
		}},
		{name: "cancelled", coc: true, cancelRest: true, want: func(s smartpool.ChannelStats[string], bp *bufferedPool) string {
			if s.Cancelled != backlog-1 || bp.ends.of(smartpool.Cancelled) != backlog-1 || bp.ends.of(smartpool.Ran) != 2 || len(bp.names()) != 0 {
				return fmt.Sprintf("cancelled %d (OnEnd: %d cancelled, %d ran), ran %v; want %d cancelled, none ran but the gate and the first",
					s.Cancelled, bp.ends.of(smartpool.Cancelled), bp.ends.of(smartpool.Ran), bp.names(), backlog-1)
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ctx context.Context
			cancel := func() {}
			if tc.cancelRest {
				ctx, cancel = context.WithCancel(context.Background())
			}
			defer cancel()
			bp := newBufferedPool(t, tc.coc, ctx, tc.yield)
			s := bp.stats(t)
			if s.Queued != backlog-1 {
				t.Fatalf("Stats: %d queued while the batch's first task runs, want %d (%d of them buffered)", s.Queued, backlog-1, buffered)
			}
			cancel()
			if tc.close {
				closed := make(chan struct{})
				go func() {
					defer close(closed)
					_, _ = bp.o.Close(context.Background())
				}()
				eventually(t, func() bool { return bp.o.Pool().Submit("hi", func(context.Context) {}) != nil })
				bp.free()
				waitFor(t, closed, "Close")
			} else {
				bp.free()
			}
			r := closeWithin(t, bp.o, long)
			s, _ = r.Channel("lo")
			// Every task of "lo" (the gate, the first and the backlog) ends
			// through OnEnd once; a cancelled one's ending may follow the
			// release of its unit, so Close may return before it.
			eventually(t, func() bool { return bp.ends.total() >= backlog+1 })
			if n := bp.ends.total(); n != backlog+1 {
				t.Fatalf("OnEnd called %d times, want %d", n, backlog+1)
			}
			if msg := tc.want(s, bp); msg != "" {
				t.Fatal(msg)
			}
		})
	}
}

func (bp *bufferedPool) stats(t *testing.T) smartpool.ChannelStats[string] {
	t.Helper()
	s, ok := bp.o.Pool().Stats().Channel("lo")
	if !ok {
		t.Fatal("no channel lo in Stats")
	}
	return s
}

func ranAll(s smartpool.ChannelStats[string], bp *bufferedPool) string {
	return ranThese(bp.names(), bp)
}

// ranThese checks that got names the backlog in order, and that every task
// of "lo" ended through OnEnd as Ran.
func ranThese(got []string, bp *bufferedPool) string {
	want := make([]string, backlog-1)
	for i := range want {
		want[i] = fmt.Sprint("t", i)
	}
	if !slices.Equal(got, want) {
		return fmt.Sprintf("ran %v, want %v", got, want)
	}
	if n := bp.ends.of(smartpool.Ran); n != backlog+1 {
		return fmt.Sprintf("OnEnd saw %d tasks run, want %d", n, backlog+1)
	}
	return ""
}

// An urgent task queued while a worker holds a batch runs before the rest of
// the batch: the worker looks at the summary before each buffered task.
func TestBuffer_UrgentTaskOvertakesTheBatch(t *testing.T) {
	bp := newBufferedPool(t, true, nil, false)
	submit(t, bp.o, "hi", func(context.Context) { bp.record("urgent") })
	bp.free()
	closeWithin(t, bp.o, long)
	if got := bp.names(); len(got) == 0 || got[0] != "urgent" {
		t.Fatalf("ran %v: the urgent task waited behind the buffered ones", got)
	}
}

// A worker blocked in a task does not keep the tasks it buffered from an
// idle sibling: the sibling steals them before it parks. The first task of
// the backlog waits for all the others; whichever worker polls it buffers
// some of them behind it.
func TestBuffer_SiblingStealsBehindABlockedTask(t *testing.T) {
	for range scale(20) {
		o := start(t, &behavior{workers: 2, levels: [][]ch{{fifo("a")}}})
		g := newGate()
		submit(t, o, "a", g.task("gate0"))
		submit(t, o, "a", g.task("gate1"))
		g.waitStarted(t, 2)
		const n = 2 * 8
		var rest sync.WaitGroup
		rest.Add(n - 1)
		allRan := make(chan struct{})
		go func() { rest.Wait(); close(allRan) }()
		firstDone := make(chan struct{})
		submit(t, o, "a", func(context.Context) {
			defer close(firstDone)
			select { // bounded: without stealing, the wait would never end
			case <-allRan:
			case <-time.After(long):
			}
		})
		for range n - 1 {
			submit(t, o, "a", func(context.Context) { rest.Done() })
		}
		close(g.release)
		waitFor(t, firstDone, "the blocked task")
		select {
		case <-allRan:
		default:
			t.Fatalf("the tasks behind a blocked one did not run within %v on the idle worker", long)
		}
		closeWithin(t, o, long)
	}
}

func ranAllAnyOrder(s smartpool.ChannelStats[string], bp *bufferedPool) string {
	got := bp.names()
	slices.Sort(got)
	return ranThese(got, bp)
}

// A buffered task does not wait for a task that yielded before it: the
// worker goes on with its buffer on another goroutine (it may not go idle
// while its buffer holds tasks, though the summary reads empty).
func TestBuffer_YieldingTaskLeavesItsBufferRunning(t *testing.T) {
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	g := newGate()
	submit(t, o, "a", g.task("gate"))
	g.waitStarted(t, 1)
	const rest = 6 // with the yielding task, one batch: the channel is left empty
	var others sync.WaitGroup
	others.Add(rest)
	othersRan := make(chan struct{})
	go func() { others.Wait(); close(othersRan) }()
	ranFirst := make(chan bool, 1)
	submit(t, o, "a", func(ctx context.Context) {
		smartpool.Yield(ctx, func() {
			select { // bounded: with the buffer stuck behind it, the wait would never end
			case <-othersRan:
				ranFirst <- true
			case <-time.After(long):
				ranFirst <- false
			}
		})
	})
	for range rest {
		submit(t, o, "a", func(context.Context) { others.Done() })
	}
	close(g.release)
	if !<-ranFirst {
		t.Fatalf("the buffered tasks did not run within %v while the task before them waited in Yield", long)
	}
	closeWithin(t, o, long)
}

// A worker that SetWorkers retires runs the tasks it took in a batch first:
// nobody else would while its sibling is blocked. Worker 0 blocks in a task
// until the test releases it; worker 1 batch-polls a backlog behind a task
// that blocks, and the pool is lowered to one worker meanwhile.
func TestBuffer_RetiringWorkerRunsItsBatch(t *testing.T) {
	for range scale(10) {
		jobs := channels.NewFIFO()
		o := start(t, &behavior{workers: 2, levels: [][]ch{{{key: "a", c: jobs, coc: true}}}})
		hold := newGate() // on worker 0 (born first) until the end
		submit(t, o, "a", hold.task("hold"))
		hold.waitStarted(t, 1)
		lead := newGate() // on worker 1, while the backlog is queued
		submit(t, o, "a", lead.task("lead"))
		lead.waitStarted(t, 1)
		first := newGate() // the batch's first task
		submit(t, o, "a", first.task("first"))
		const rest = 6
		var ran, k atomic.Int32
		bufferedRan := make(chan struct{})
		for range rest {
			submit(t, o, "a", func(context.Context) {
				if ran.Add(1) == k.Load() {
					close(bufferedRan)
				}
			})
		}
		close(lead.release)
		first.waitStarted(t, 1)
		k.Store(int32(rest - jobs.Len())) // in worker 1's buffer; none has run
		if k.Load() <= 0 {
			t.Fatalf("worker 1 took no batch: %d of %d tasks left in the channel", jobs.Len(), rest)
		}
		if err := o.Pool().SetWorkers(1); err != nil {
			t.Fatalf("SetWorkers(1): %v", err)
		}
		close(first.release)
		waitFor(t, bufferedRan, "the retiring worker's buffered tasks, while worker 0 is blocked")
		close(hold.release)
		r := closeWithin(t, o, long)
		if s, _ := r.Channel("a"); s.Ran != 3+rest {
			t.Fatalf("report: %d ran, want %d", s.Ran, 3+rest)
		}
	}
}
