package channels_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// poolOpts configures a testBehavior.
type poolOpts struct {
	workers int
	coc     bool                                    // CompleteOnClose
	onEnd   func(smartpool.Task, smartpool.Outcome) // ChannelParams.OnEnd
	limit   int                                     // Config.Limit
}

// testBehavior puts its channels in one level, keyed by their index.
type testBehavior struct {
	chans []smartpool.Channel
	opts  poolOpts
}

func (b *testBehavior) Config() smartpool.Config[int] {
	level := make([]smartpool.ChannelParams[int], len(b.chans))
	for i := range level {
		level[i] = smartpool.ChannelParams[int]{Key: i, CompleteOnClose: b.opts.coc, OnEnd: b.opts.onEnd}
	}
	return smartpool.Config[int]{Workers: b.opts.workers, Limit: b.opts.limit, Levels: [][]smartpool.ChannelParams[int]{level}}
}

func (b *testBehavior) Channel(k int) smartpool.Channel { return b.chans[k] }
func (b *testBehavior) Followup(k int) int              { return k }

func newPool(t testing.TB, opts poolOpts, chans ...smartpool.Channel) *smartpool.OwnedPool[int] {
	t.Helper()
	o, err := smartpool.New[int](&testBehavior{chans: chans, opts: opts})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// closePool closes o, failing loudly if that takes unreasonably long.
func closePool(t testing.TB, o *smartpool.OwnedPool[int]) *smartpool.Report[int] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := o.Close(ctx)
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	return rep
}

// pin submits a task that holds the pool's only worker until release is
// called, and waits until it runs. release may be called more than once.
func pin(t testing.TB, submit func(smartpool.Task) error) (release func()) {
	t.Helper()
	started, unblock := make(chan struct{}), make(chan struct{})
	err := submit(smartpool.Func(func(context.Context) {
		close(started)
		<-unblock
	}))
	if err != nil {
		t.Fatal(err)
	}
	waitOrFail(t, started, "the pinning task to start")
	var once sync.Once
	release = func() { once.Do(func() { close(unblock) }) }
	t.Cleanup(release)
	return release
}

// logTask appends its ID to log when it runs. Only one worker runs tasks in
// the tests that use it, and the log is read after Close, which orders it.
type logTask struct {
	id  int
	log *[]int
}

func (l logTask) Run(context.Context) { *l.log = append(*l.log, l.id) }

// TestPoolRunsInChannelOrder queues tasks behind a pinned single worker, by
// the channel's own methods and by key through Pool.SubmitTask (which goes
// through Push), and checks the run order is the channel's order.
func TestPoolRunsInChannelOrder(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name string
		ch   smartpool.Channel
		pin  func(ch smartpool.Channel) func(smartpool.Task) error
		fill func(ch smartpool.Channel, p *smartpool.Pool[int], task func(id int) smartpool.Task) error
		want []int
	}{
		{
			name: "FIFO",
			ch:   channels.NewFIFO(),
			pin:  func(ch smartpool.Channel) func(smartpool.Task) error { return pushOf(ch) },
			fill: func(ch smartpool.Channel, p *smartpool.Pool[int], task func(int) smartpool.Task) error {
				f := ch.(*channels.FIFO)
				return errors.Join(
					src(f).Push(task(0), smartpool.Order{}),
					f.Submit(task(1).Run),
					p.SubmitTask(0, task(2)),
					f.SubmitBatch(task(3).Run, task(4).Run),
					p.Submit(0, task(5).Run),
				)
			},
			want: []int{0, 1, 2, 3, 4, 5},
		},
		{
			name: "Deadline",
			ch:   channels.NewDeadline(),
			pin: func(ch smartpool.Channel) func(smartpool.Task) error {
				return func(t smartpool.Task) error { return ch.(*channels.Deadline).SubmitTask(time.Time{}, t) }
			},
			fill: func(ch smartpool.Channel, p *smartpool.Pool[int], task func(int) smartpool.Task) error {
				d := ch.(*channels.Deadline)
				return errors.Join(
					d.SubmitTask(now.Add(3*time.Hour), task(0)),
					d.SubmitTask(now.Add(time.Hour), task(1)),
					d.SubmitTask(time.Time{}, task(2)),
					d.Submit(now.Add(time.Hour), task(3).Run), // ties with 1: after it
					p.SubmitTask(0, task(4)),                  // Push: deadline now
					d.SubmitTask(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), task(5)),
				)
			},
			want: []int{2, 4, 1, 3, 0, 5},
		},
		{
			name: "Priority",
			ch:   channels.NewPriority(),
			pin: func(ch smartpool.Channel) func(smartpool.Task) error {
				return func(t smartpool.Task) error { return ch.(*channels.Priority).SubmitTask(math.MinInt, t) }
			},
			fill: func(ch smartpool.Channel, p *smartpool.Pool[int], task func(int) smartpool.Task) error {
				pr := ch.(*channels.Priority)
				return errors.Join(
					pr.SubmitTask(1, task(0)),
					pr.Submit(5, task(1).Run),
					pr.SubmitTask(-3, task(2)),
					pr.SubmitTask(5, task(3)),
					p.SubmitTask(0, task(4)), // Push: priority 0
					pr.SubmitTask(math.MaxInt, task(5)),
					pr.SubmitTask(math.MinInt, task(6)),
				)
			},
			want: []int{5, 1, 3, 0, 4, 2, 6},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := newPool(t, poolOpts{workers: 1, coc: true}, c.ch)
			release := pin(t, c.pin(c.ch))
			var got []int
			task := func(id int) smartpool.Task { return logTask{id: id, log: &got} }
			if err := c.fill(c.ch, o.Pool(), task); err != nil {
				t.Fatal(err)
			}
			if n := c.ch.Len(); n != len(c.want) {
				t.Fatalf("Len = %d before release, want %d", n, len(c.want))
			}
			release()
			rep := closePool(t, o)
			if !slices.Equal(got, c.want) {
				t.Fatalf("ran %v, want %v", got, c.want)
			}
			total := rep.Total()
			if total.Ran != uint64(len(c.want)+1) || total.Dropped != 0 || total.Queued != 0 {
				t.Fatalf("report %+v, want %d ran", total, len(c.want)+1)
			}
		})
	}
	t.Run("Deadline late count", func(t *testing.T) {
		// Task 2 (zero deadline) and the pinning task were surely late.
		d := channels.NewDeadline()
		o := newPool(t, poolOpts{workers: 1, coc: true}, d)
		release := pin(t, func(task smartpool.Task) error { return d.SubmitTask(time.Time{}, task) })
		mustOK(t, d.SubmitTask(time.Time{}, idTask(1)))
		mustOK(t, d.SubmitTask(time.Now().Add(time.Hour), idTask(2)))
		release()
		closePool(t, o)
		if s := d.Stats(); s.Late != 2 || s.DroppedLate != 0 {
			t.Fatalf("Stats = %+v, want 2 late", s)
		}
	})
}

// TestPoolMultiOrder checks a Multi of FIFOs under a real pool: every task
// runs once, and the tasks of each shard run in the order they were queued.
func TestPoolMultiOrder(t *testing.T) {
	const shards, n = 3, 30
	m := channels.NewMulti(shards, channels.NewFIFO)
	o := newPool(t, poolOpts{workers: 1, coc: true}, m)
	release := pin(t, pushOf(m)) // shard 0
	var got []int
	for i := range n {
		task := logTask{id: i, log: &got}
		var err error
		switch i % 3 {
		case 0:
			err = src(m).Push(task, smartpool.Order{})
		case 1:
			err = m.Submit(task.Run)
		case 2:
			err = o.Pool().SubmitTask(0, task) // by key: Multi.Push
		}
		mustOK(t, err)
	}
	for s, sh := range m.Shards() {
		want := n / shards
		if sh.Len() != want {
			t.Fatalf("shard %d holds %d tasks, want %d", s, sh.Len(), want)
		}
	}
	release()
	rep := closePool(t, o)
	if len(got) != n {
		t.Fatalf("ran %d tasks, want %d", len(got), n)
	}
	last := make([]int, shards)
	for s := range last {
		last[s] = -1
	}
	seen := make([]bool, n)
	for _, id := range got {
		s := (id + 1) % shards // task i went to shard (i+1) mod 3: the pin took shard 0
		if id <= last[s] || seen[id] {
			t.Fatalf("run order %v breaks shard %d's FIFO order at %d", got, s, id)
		}
		last[s], seen[id] = id, true
	}
	if total := rep.Total(); total.Ran != n+1 {
		t.Fatalf("report ran %d, want %d", total.Ran, n+1)
	}
}

// TestPoolCloseDrops queues tasks behind a pinned worker in a channel that
// does not complete on close, and checks that Close drops exactly them, in
// the channel's order, reports them and hands them to OnEnd.
func TestPoolCloseDrops(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name string
		ch   smartpool.Channel
		fill func(ch smartpool.Channel) error
		want []int
	}{
		{"FIFO", channels.NewFIFO(), func(ch smartpool.Channel) error {
			return errors.Join(src(ch).Push(idTask(0), smartpool.Order{}), src(ch).Push(idTask(1), smartpool.Order{}), src(ch).Push(idTask(2), smartpool.Order{}))
		}, []int{0, 1, 2}},
		{"Deadline", channels.NewDeadline(), func(ch smartpool.Channel) error {
			d := ch.(*channels.Deadline)
			return errors.Join(d.SubmitTask(now.Add(2*time.Hour), idTask(0)), d.SubmitTask(now.Add(time.Hour), idTask(1)), d.SubmitTask(time.Time{}, idTask(2)))
		}, []int{2, 1, 0}},
		{"Priority", channels.NewPriority(), func(ch smartpool.Channel) error {
			p := ch.(*channels.Priority)
			return errors.Join(p.SubmitTask(0, idTask(0)), p.SubmitTask(1, idTask(1)), p.SubmitTask(0, idTask(2)))
		}, []int{1, 0, 2}},
		{"Multi", channels.NewMulti(2, channels.NewFIFO), func(ch smartpool.Channel) error {
			// The pin took shard 0: 0 and 2 go to shard 1, 1 and 3 to shard 0.
			return errors.Join(src(ch).Push(idTask(0), smartpool.Order{}), src(ch).Push(idTask(1), smartpool.Order{}), src(ch).Push(idTask(2), smartpool.Order{}), src(ch).Push(idTask(3), smartpool.Order{}))
		}, []int{1, 3, 0, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var dropped []int
			onEnd := func(task smartpool.Task, why smartpool.Outcome) {
				if why == smartpool.DroppedOnClose {
					dropped = append(dropped, idOf(t, task))
				}
			}
			o := newPool(t, poolOpts{workers: 1, onEnd: onEnd}, c.ch)
			release := pin(t, pushOf(c.ch))
			mustOK(t, c.fill(c.ch))
			// A cancelled context: Close starts the close (dropping the queue
			// and calling OnEnd on this goroutine), then returns at once since
			// the pinned task cannot finish.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := o.Close(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("Close(cancelled) = %v, want context.Canceled", err)
			}
			if !slices.Equal(dropped, c.want) {
				t.Fatalf("dropped %v, want %v", dropped, c.want)
			}
			if err := o.Pool().Submit(0, noop); !errors.Is(err, smartpool.ErrClosed) {
				t.Fatalf("Submit while closing = %v, want ErrClosed", err)
			}
			release()
			rep := closePool(t, o)
			total := rep.Total()
			if total.Ran != 1 || total.Dropped != uint64(len(c.want)) || total.Queued != 0 {
				t.Fatalf("report %+v, want 1 ran and %d dropped", total, len(c.want))
			}
		})
	}
}

// TestPoolDeadlineDropLate runs a DropLate Deadline in a pool on a fake
// clock: tasks whose deadline passed while the worker was busy are dropped
// and handed to OnEnd, the others run, in deadline order.
func TestPoolDeadlineDropLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ran, droppedLate []int
		d := channels.NewDeadline(channels.DropLate())
		onEnd := func(task smartpool.Task, why smartpool.Outcome) {
			if why == smartpool.DroppedLate {
				droppedLate = append(droppedLate, task.(logTask).id) // on the only worker
			}
		}
		o := newPool(t, poolOpts{workers: 1, coc: true, onEnd: onEnd}, d)
		now := time.Now()
		release := pin(t, func(task smartpool.Task) error { return d.SubmitTask(now, task) })
		for i, at := range []time.Duration{time.Second, 2 * time.Hour, time.Minute, 3 * time.Hour, 30 * time.Minute} {
			mustOK(t, d.SubmitTask(now.Add(at), logTask{id: i, log: &ran}))
		}
		time.Sleep(time.Hour) // the fake clock moves on while the worker is pinned
		release()
		rep := closePool(t, o)
		if !slices.Equal(ran, []int{1, 3}) || !slices.Equal(droppedLate, []int{0, 2, 4}) {
			t.Fatalf("ran %v, dropped %v; want [1 3] and [0 2 4]", ran, droppedLate)
		}
		if s := d.Stats(); s != (channels.DeadlineStats{DroppedLate: 3}) {
			t.Fatalf("Stats = %+v, want 3 dropped late", s)
		}
		// The pool counts the dropped tasks as dropped.
		if total := rep.Total(); total.Ran != 3 || total.Dropped != 3 {
			t.Fatalf("report %+v, want 3 ran, 3 dropped", total)
		}
	})
}
