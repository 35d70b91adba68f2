package smartpool_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/scheduler"
)

// A worker lowered by SetWorkers while tasks wait in its run buffer takes no
// new work: higher-level tasks that arrive meanwhile run one at a time on the
// worker that remains, while the surplus one runs its buffer and retires.
func TestNoHang_SurplusWorkerTakesNoNewWork(t *testing.T) {
	for range scale(8) {
		lo := channels.NewFIFO()
		o := start(t, &behavior{workers: 2, levels: [][]ch{{fifo("hi")}, {{key: "lo", c: lo, coc: true}}}})
		hold := newGate() // worker 0, born first
		submit(t, o, "lo", hold.task("hold"))
		hold.waitStarted(t, 1)
		lead := newGate() // worker 1, while the backlog is queued
		submit(t, o, "lo", lead.task("lead"))
		lead.waitStarted(t, 1)
		first := newGate() // the first task of worker 1's batch
		submit(t, o, "lo", first.task("first"))
		for range 6 {
			submit(t, o, "lo", func(context.Context) {})
		}
		close(lead.release)
		first.waitStarted(t, 1)
		if err := o.Pool().SetWorkers(1); err != nil {
			t.Fatalf("SetWorkers(1): %v", err)
		}
		var running, overlaps atomic.Int32
		const hiTasks = 300
		for range hiTasks {
			submit(t, o, "hi", func(context.Context) {
				if running.Add(1) > 1 {
					overlaps.Add(1)
				}
				for begin := time.Now(); time.Since(begin) < 20*time.Microsecond; {
					// a little work, so that two workers would overlap
				}
				running.Add(-1)
			})
		}
		close(first.release)
		close(hold.release)
		eventually(t, func() bool { // before Close: its drain uses every worker
			s, _ := o.Pool().Stats().Channel("hi")
			return s.Ran == hiTasks
		})
		r := closeWithin(t, o, long)
		if n := overlaps.Load(); n != 0 {
			t.Fatalf("%d of %d higher-level tasks started while another ran after SetWorkers(1)", n, hiTasks)
		}
		if s, _ := r.Channel("lo"); s.Ran != 9 {
			t.Fatalf("lo: %d ran, want 9 (the surplus worker's buffer)", s.Ran)
		}
	}
}

// failingPickers returns HighestFirst's pickers, except that the first
// worker's NewPicker returns nil: that worker falls back to the highest
// level with work while its siblings keep their pickers.
type failingPickers struct{ calls atomic.Int32 }

func (s *failingPickers) Start(levels int) error { return scheduler.HighestFirst().Start(levels) }
func (s *failingPickers) NewPicker() scheduler.Picker {
	if s.calls.Add(1) == 1 {
		return nil
	}
	return scheduler.HighestFirst().NewPicker()
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A worker that fell back from a scheduler's failed NewPicker must not hide
// tasks from its siblings: a task that waits for the task queued behind it
// gets it started by the other worker, at once.
func TestNoHang_FallbackWorkerStrandsNothing(t *testing.T) {
	jobs := channels.NewFIFO()
	o := start(t, &behavior{workers: 2, sched: &failingPickers{}, logger: discardLogger(),
		levels: [][]ch{{{key: "a", c: jobs, coc: true}}}})
	g0 := newGate() // worker 0: the one without a picker
	submit(t, o, "a", g0.task("g0"))
	g0.waitStarted(t, 1)
	g1 := newGate() // worker 1
	submit(t, o, "a", g1.task("g1"))
	g1.waitStarted(t, 1)
	secondStarted := make(chan struct{})
	waited := make(chan bool, 1)
	submit(t, o, "a", func(ctx context.Context) { // what worker 0 takes next
		select {
		case <-secondStarted:
			waited <- true
		case <-time.After(long):
			waited <- false
		}
	})
	submit(t, o, "a", func(context.Context) { close(secondStarted) })
	for range 2 {
		submit(t, o, "a", func(context.Context) {})
	}
	close(g0.release)
	eventually(t, func() bool { return jobs.Len() < 4 }) // worker 0 polled
	close(g1.release)
	if !<-waited {
		t.Fatal("the task queued behind a waiting task never started: hidden in the fallback worker's buffer")
	}
}

// A task handed to an idle worker has started when its submit returns: its
// WithContext context ending right after no longer cancels it.
func TestNoHang_HandedTaskIsNotCancelled(t *testing.T) {
	o := start(t, &behavior{workers: 1, idle: time.Hour, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	const n = 200
	for i := range n {
		eventually(t, func() bool { // the worker is idle: the submit hands the task over
			created, _, _ := smartpool.WorkerCounts(p)
			return created == 0 || smartpool.IdleListed(p)
		})
		ctx, cancel := context.WithCancel(context.Background())
		if err := p.Submit("a", func(context.Context) {}, smartpool.WithContext(ctx)); err != nil {
			t.Fatalf("Submit: %v", err)
		}
		cancel()
		eventually(t, func() bool {
			s := p.Stats().Total()
			return s.Ran+s.Cancelled == uint64(i+1)
		})
	}
	if s := p.Stats().Total(); s.Cancelled != 0 {
		t.Fatalf("%d of %d tasks handed to an idle worker were cancelled after their submit returned", s.Cancelled, n)
	}
}

// A pool given scheduler.HighestFirst() explicitly polls in batches as the
// default pool does.
func TestNoHang_ExplicitHighestFirstBatches(t *testing.T) {
	for _, sched := range []scheduler.Scheduler{nil, scheduler.HighestFirst()} {
		jobs := channels.NewFIFO()
		o := start(t, &behavior{workers: 1, sched: sched, levels: [][]ch{{{key: "a", c: jobs, coc: true}}}})
		hold := newGate()
		submit(t, o, "a", hold.task("hold"))
		hold.waitStarted(t, 1)
		first := newGate()
		submit(t, o, "a", first.task("first"))
		for range 8 {
			submit(t, o, "a", func(context.Context) {})
		}
		close(hold.release)
		first.waitStarted(t, 1)
		if n := jobs.Len(); n >= 8 {
			t.Errorf("Schedule %v: the worker polled one task, not a batch (%d of 8 left)", sched, n)
		}
		close(first.release)
		closeWithin(t, o, long)
	}
}
