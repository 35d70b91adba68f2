package channels_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// stressKind is a channel kind with a submit that spreads its tasks over
// the kind's orderings (random deadlines, priorities, shards).
type stressKind struct {
	name   string
	make   func() smartpool.Channel
	submit func(ch smartpool.Channel, i int, t smartpool.Task) error
}

func stressKinds() []stressKind {
	extremes := extremeDeadlines()
	deadline := func(i int) time.Time {
		if i%3 == 0 {
			return extremes[i%len(extremes)]
		}
		return time.Now().Add(time.Duration(i%7-3) * time.Millisecond)
	}
	return []stressKind{
		{"FIFO",
			func() smartpool.Channel { return channels.NewFIFO() },
			func(ch smartpool.Channel, i int, t smartpool.Task) error {
				if i%2 == 0 {
					return ch.(*channels.FIFO).Submit(t.Run)
				}
				return src(ch).Push(t, smartpool.Order{})
			}},
		{"Deadline",
			func() smartpool.Channel { return channels.NewDeadline() },
			func(ch smartpool.Channel, i int, t smartpool.Task) error {
				return ch.(*channels.Deadline).SubmitTask(deadline(i), t)
			}},
		{"DeadlineDropLate",
			func() smartpool.Channel { return channels.NewDeadline(channels.DropLate()) },
			func(ch smartpool.Channel, i int, t smartpool.Task) error {
				return ch.(*channels.Deadline).SubmitTask(deadline(i), t)
			}},
		{"Priority",
			func() smartpool.Channel { return channels.NewPriority() },
			func(ch smartpool.Channel, i int, t smartpool.Task) error {
				return ch.(*channels.Priority).SubmitTask(i%5, t)
			}},
		{"Multi4FIFO",
			func() smartpool.Channel { return channels.NewMulti(4, channels.NewFIFO) },
			func(ch smartpool.Channel, i int, t smartpool.Task) error {
				return src(ch).Push(t, smartpool.Order{})
			}},
		{"Multi3DeadlineDropLate",
			func() smartpool.Channel {
				return channels.NewMulti(3, func() *channels.Deadline { return channels.NewDeadline(channels.DropLate()) })
			},
			func(ch smartpool.Channel, i int, t smartpool.Task) error {
				return ch.(*channels.Multi[*channels.Deadline]).Next().SubmitTask(deadline(i), t)
			}},
	}
}

// outcomes counts, by task ID, how each task left: run (or polled) or
// dropped late. Every task must end in exactly one.
type outcomes struct {
	ran, dropped []atomic.Int32
	left         atomic.Int64
}

func newOutcomes(n int) *outcomes {
	return &outcomes{ran: make([]atomic.Int32, n), dropped: make([]atomic.Int32, n)}
}

func (o *outcomes) check(t *testing.T) {
	t.Helper()
	nDropped := 0
	for id := range o.ran {
		r, d := o.ran[id].Load(), o.dropped[id].Load()
		if r+d != 1 {
			t.Fatalf("task %d: ran %d times, dropped %d times", id, r, d)
		}
		nDropped += int(d)
	}
	t.Logf("%d tasks, %d dropped late", len(o.ran), nDropped)
}

// TestConcurrentPollExactlyOnce has several producers and pollers share one
// channel with no pool: every task is polled (or dropped late) exactly once.
func TestConcurrentPollExactlyOnce(t *testing.T) {
	const producers, pollers, each = 4, 4, 2000
	const total = producers * each
	for _, k := range stressKinds() {
		t.Run(k.name, func(t *testing.T) {
			out := newOutcomes(total)
			ch := servedEnds(k.make(), out.onEnd)
			var wg sync.WaitGroup
			for p := range producers {
				wg.Go(func() {
					for i := range each {
						if err := k.submit(ch, i, countTask{id: p*each + i, out: out}); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			for w := range pollers {
				wg.Go(func() {
					q := w % src(ch).Queues()
					for out.left.Load() < total && !t.Failed() {
						task := src(ch).Poll(q)
						if task == nil {
							q = (q + 1) % src(ch).Queues()
							runtime.Gosched() // no pool to wake us: spin politely
							continue
						}
						task.Run(context.Background()) // records the outcome
					}
				})
			}
			wg.Wait()
			out.check(t)
			if n := ch.Len(); n != 0 {
				t.Fatalf("Len = %d after every task left", n)
			}
		})
	}
}

// countTask records in out that it ran, and marks wg done if set.
type countTask struct {
	id  int
	out *outcomes
	wg  *sync.WaitGroup
}

func (c countTask) Run(context.Context) {
	c.out.ran[c.id].Add(1)
	c.out.left.Add(1)
	if c.wg != nil {
		c.wg.Done()
	}
}

// onEnd is the channel's OnEnd: it records that the task was dropped (a
// task that ran records itself).
func (o *outcomes) onEnd(task smartpool.Task, why smartpool.Outcome) {
	if why != smartpool.DroppedLate {
		return
	}
	c := task.(countTask)
	o.dropped[c.id].Add(1)
	o.left.Add(1)
	if c.wg != nil {
		c.wg.Done()
	}
}

// TestPoolStress has producers submit to a pool of several workers, through
// the channel's methods and by key: every task runs or is dropped late
// exactly once, and the report agrees.
func TestPoolStress(t *testing.T) {
	const producers, each = 4, 1000
	const total = producers * each
	for _, k := range stressKinds() {
		t.Run(k.name, func(t *testing.T) {
			out := newOutcomes(total)
			var wg sync.WaitGroup
			wg.Add(total)
			ch := k.make()
			o := newPool(t, poolOpts{workers: 4, coc: true, onEnd: out.onEnd}, ch)
			var prod sync.WaitGroup
			for p := range producers {
				prod.Go(func() {
					for i := range each {
						task := countTask{id: p*each + i, out: out, wg: &wg}
						var err error
						if i%4 == 0 {
							err = o.Pool().SubmitTask(0, task)
						} else {
							err = k.submit(ch, i, task)
						}
						if err != nil {
							t.Error(err)
							wg.Done()
						}
					}
				})
			}
			prod.Wait()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			waitOrFail(t, done, fmt.Sprintf("%d tasks to run", total))
			rep := closePool(t, o)
			out.check(t)
			dropped := 0
			for id := range out.dropped {
				dropped += int(out.dropped[id].Load())
			}
			if tot := rep.Total(); tot.Ran != uint64(total-dropped) || tot.Dropped != uint64(dropped) || tot.Queued != 0 {
				t.Fatalf("report %+v, want %d ran, %d dropped", tot, total-dropped, dropped)
			}
		})
	}
}
