package channels_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// optionKind is a library channel with its submit method, given options.
type optionKind struct {
	name   string
	make   func() smartpool.Channel
	submit func(ch smartpool.Channel, fn func(context.Context), opts ...smartpool.Option) error
}

func optionKinds() []optionKind {
	return []optionKind{
		{"FIFO", func() smartpool.Channel { return channels.NewFIFO() },
			func(ch smartpool.Channel, fn func(context.Context), opts ...smartpool.Option) error {
				return ch.(*channels.FIFO).Submit(fn, opts...)
			}},
		{"Deadline", func() smartpool.Channel { return channels.NewDeadline() },
			func(ch smartpool.Channel, fn func(context.Context), opts ...smartpool.Option) error {
				return ch.(*channels.Deadline).Submit(far, fn, opts...)
			}},
		{"Priority", func() smartpool.Channel { return channels.NewPriority() },
			func(ch smartpool.Channel, fn func(context.Context), opts ...smartpool.Option) error {
				return ch.(*channels.Priority).Submit(1, fn, opts...)
			}},
		{"Bounded", func() smartpool.Channel { return channels.NewBounded(4) },
			func(ch smartpool.Channel, fn func(context.Context), opts ...smartpool.Option) error {
				return ch.(*channels.Bounded).Submit(fn, opts...)
			}},
		{"Keyed", func() smartpool.Channel { k, _ := channels.NewKeyed[string](1); return k },
			func(ch smartpool.Channel, fn func(context.Context), opts ...smartpool.Option) error {
				return ch.(*channels.Keyed[string]).Submit("g", fn, opts...)
			}},
		{"Multi", func() smartpool.Channel { return channels.NewMulti(2, channels.NewFIFO) },
			func(ch smartpool.Channel, fn func(context.Context), opts ...smartpool.Option) error {
				return ch.(*channels.Multi[*channels.FIFO]).Submit(fn, opts...)
			}},
	}
}

// TestSubmitWithContextCancelledWhileQueued: a task submitted with
// WithContext whose context ends while it is queued never runs: it ends as
// Cancelled, in OnEnd and in the report, on every library channel.
func TestSubmitWithContextCancelledWhileQueued(t *testing.T) {
	for _, k := range optionKinds() {
		t.Run(k.name, func(t *testing.T) {
			cancelled := make(chan smartpool.Task, 1)
			onEnd := func(task smartpool.Task, why smartpool.Outcome) {
				if why == smartpool.Cancelled {
					cancelled <- task
				}
			}
			ch := k.make()
			o := newPool(t, poolOpts{workers: 1, coc: true, onEnd: onEnd}, ch)
			release := pin(t, func(task smartpool.Task) error { return k.submit(ch, task.Run) })
			ctx, cancel := context.WithCancel(context.Background())
			mustOK(t, k.submit(ch, func(context.Context) { t.Error("a cancelled task ran") }, smartpool.WithContext(ctx)))
			cancel()
			select {
			case <-cancelled:
			case <-time.After(30 * time.Second):
				t.Fatal("OnEnd did not see the task cancelled")
			}
			release()
			if tot := closePool(t, o).Total(); tot.Cancelled != 1 || tot.Ran != 1 {
				t.Fatalf("report %+v, want 1 cancelled, 1 ran (the pin)", tot)
			}
		})
	}
}

// TestSubmitOptionRefused: an order key the channel does not order by is
// refused with ErrOption, and so is an option that repeats the channel's
// own argument; nothing is queued, and the unit of the limit comes back.
func TestSubmitOptionRefused(t *testing.T) {
	past := smartpool.WithDeadline(time.Unix(0, 0))
	prio := smartpool.WithPriority(3)
	f := channels.NewFIFO()
	d := channels.NewDeadline()
	p := channels.NewPriority()
	b := channels.NewBounded(2)
	k := newKeyed[string](t, 1)
	m := channels.NewMulti(2, channels.NewFIFO)
	for _, ch := range []smartpool.Channel{f, d, p, b, k, m} {
		servedEnds(ch, nil)
	}
	for what, err := range map[string]error{
		"FIFO with a deadline":              f.Submit(noop, past),
		"FIFO with a priority":              f.Submit(noop, prio),
		"Keyed with a deadline":             k.Submit("g", noop, past),
		"Keyed with a priority":             k.SubmitTask("g", idTask(0), prio),
		"Bounded with a deadline":           b.Submit(noop, past),
		"Bounded with a priority":           b.SubmitTask(idTask(0), prio),
		"Deadline with a priority":          d.Submit(far, noop, prio),
		"Priority with a deadline":          p.Submit(1, noop, past),
		"Multi of FIFOs with a deadline":    m.Submit(noop, past),
		"Deadline with a second deadline":   d.Submit(far, noop, past),
		"Deadline with the same, as task":   d.SubmitTask(far, idTask(0), smartpool.WithDeadline(far)),
		"Priority with a second priority":   p.Submit(1, noop, prio),
		"Priority with the same, as task":   p.SubmitTask(1, idTask(0), smartpool.WithPriority(1)),
		"WithContext given twice":           f.Submit(noop, smartpool.WithContext(t.Context()), smartpool.WithContext(t.Context())),
		"a deadline with a context to FIFO": f.Submit(noop, smartpool.WithContext(t.Context()), past),
	} {
		if !errors.Is(err, smartpool.ErrOption) {
			t.Errorf("%s: %v, want ErrOption", what, err)
		}
	}
	for _, ch := range []smartpool.Channel{f, d, p, b, k, m} {
		if ch.Len() != 0 {
			t.Errorf("%T holds %d tasks after refused submits", ch, ch.Len())
		}
	}
}

// TestMultiSubmitOrders: WithDeadline and WithPriority given to a Multi's
// Submit reach its shards' order: earliest deadline first, and late once
// the deadline passed (DropLate drops it); highest priority first.
func TestMultiSubmitOrders(t *testing.T) {
	t.Run("WithDeadline", func(t *testing.T) {
		late := 0
		m := servedEnds(channels.NewMulti(1, func() *channels.Deadline { return channels.NewDeadline(channels.DropLate()) }),
			func(_ smartpool.Task, why smartpool.Outcome) {
				if why == smartpool.DroppedLate {
					late++
				}
			})
		var got []int
		now := time.Now()
		for id, at := range []time.Duration{3 * time.Hour, time.Hour, -time.Hour, 2 * time.Hour} {
			mustOK(t, m.Submit(func(context.Context) { got = append(got, id) }, smartpool.WithDeadline(now.Add(at))))
		}
		for task := src(m).Poll(0); task != nil; task = src(m).Poll(0) {
			task.Run(context.Background())
		}
		if !slices.Equal(got, []int{1, 3, 0}) || late != 1 {
			t.Fatalf("ran %v, %d dropped late; want [1 3 0] and the late one dropped", got, late)
		}
	})
	t.Run("WithPriority", func(t *testing.T) {
		m := servedEnds(channels.NewMulti(1, channels.NewPriority), nil)
		var got []int
		for id, prio := range []int{1, 5, -2, 3} {
			mustOK(t, m.Submit(func(context.Context) { got = append(got, id) }, smartpool.WithPriority(prio)))
		}
		for task := src(m).Poll(0); task != nil; task = src(m).Poll(0) {
			task.Run(context.Background())
		}
		if !slices.Equal(got, []int{1, 3, 0, 2}) {
			t.Fatalf("ran %v, want [1 3 0 2]: highest priority first", got)
		}
	})
}

// TestKeyedSubmitOptionsKeepGroup: a Keyed's submit given options queues the
// task under its group, as one without options does.
func TestKeyedSubmitOptionsKeepGroup(t *testing.T) {
	k := servedEnds(newKeyed[string](t, 1), nil)
	mustOK(t, k.Submit("a", noop, smartpool.WithContext(context.Background())))
	mustOK(t, k.SubmitTask("b", idTask(1), smartpool.WithContext(context.Background())))
	if s := k.Stats(); s.Groups != 2 || s.Ready != 2 {
		t.Fatalf("Stats %+v, want groups a and b, both ready", s)
	}
	first, second := src(k).Poll(0), src(k).Poll(0)
	if first == nil || second == nil {
		t.Fatal("the second group's task is not ready: the tasks share a group")
	}
	if k.Running("a") != 1 || k.Running("b") != 1 {
		t.Fatalf("Running a %d, b %d; want 1 each", k.Running("a"), k.Running("b"))
	}
}

// TestBoundedWaitsOnlyWithContext: in a pool, a submit to a full Bounded
// without a context returns ErrFull at once; with WithContext it waits
// until a worker makes room, and its task runs.
func TestBoundedWaitsOnlyWithContext(t *testing.T) {
	b := channels.NewBounded(1)
	o := newPool(t, poolOpts{workers: 1, coc: true}, b)
	release := pin(t, submitTaskOf(b))
	mustOK(t, b.Submit(noop)) // full
	wantErr(t, "Submit without a context when full", b.Submit(noop), smartpool.ErrFull)
	wantErr(t, "Pool.Submit without a context when full", o.Pool().Submit(0, noop), smartpool.ErrFull)
	ran := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- b.Submit(func(context.Context) { close(ran) }, smartpool.WithContext(context.Background()))
	}()
	boundedEventually(t, "the submit with a context to wait", func() bool { return b.Waiting() == 1 })
	select {
	case err := <-errc:
		t.Fatalf("Submit with a context returned %v while the Bounded was full", err)
	default:
	}
	release()
	waitOrFail(t, ran, "the waiting submit's task")
	mustOK(t, <-errc)
	closePool(t, o)
}

// TestZeroChannelRefused: a channel not made by its constructor holds no
// Source: New refuses it with ErrConfig naming the constructor, and its
// submits return ErrClosed, as an unattached channel's do.
func TestZeroChannelRefused(t *testing.T) {
	cases := []struct {
		ch     smartpool.Channel
		ctor   string
		submit func(opts ...smartpool.Option) error
	}{
		{new(channels.FIFO), "NewFIFO", func(o ...smartpool.Option) error { return new(channels.FIFO).Submit(noop, o...) }},
		{new(channels.Deadline), "NewDeadline", func(o ...smartpool.Option) error { return new(channels.Deadline).Submit(far, noop, o...) }},
		{new(channels.Priority), "NewPriority", func(o ...smartpool.Option) error { return new(channels.Priority).Submit(1, noop, o...) }},
		{new(channels.Bounded), "NewBounded", func(o ...smartpool.Option) error { return new(channels.Bounded).Submit(noop, o...) }},
		{new(channels.Keyed[string]), "NewKeyed", func(o ...smartpool.Option) error { return new(channels.Keyed[string]).Submit("g", noop, o...) }},
		{new(channels.Multi[*channels.FIFO]), "NewMulti", func(o ...smartpool.Option) error { return new(channels.Multi[*channels.FIFO]).Submit(noop, o...) }},
	}
	for _, c := range cases {
		t.Run(c.ctor, func(t *testing.T) {
			if src(c.ch) != nil {
				t.Fatalf("a zero %T holds a Source", c.ch)
			}
			_, err := smartpool.New[int](&testBehavior{chans: []smartpool.Channel{c.ch}, opts: poolOpts{workers: 1}})
			if !errors.Is(err, smartpool.ErrConfig) || !strings.Contains(err.Error(), c.ctor) {
				t.Fatalf("New = %v, want ErrConfig naming %s", err, c.ctor)
			}
			wantErr(t, "Submit", c.submit(), smartpool.ErrNotServed)
			wantErr(t, "Submit with a context", c.submit(smartpool.WithContext(context.Background())), smartpool.ErrNotServed)
			if c.ch.Len() != 0 {
				t.Fatalf("Len %d", c.ch.Len())
			}
		})
	}
}

// TestDropLateOnEndPanics: an OnEnd that panics on a late task goes to the
// pool's panic handler, and the worker carries on dropping and running.
func TestDropLateOnEndPanics(t *testing.T) {
	d := channels.NewDeadline(channels.DropLate())
	var mu sync.Mutex
	calls, panics := 0, 0
	b := &panicBehavior{ch: d, onEnd: func(task smartpool.Task, why smartpool.Outcome) {
		if why != smartpool.DroppedLate {
			return
		}
		mu.Lock()
		calls++
		mu.Unlock()
		if idOf(t, task)%2 == 0 {
			panic("boom")
		}
	}, panicked: func() { mu.Lock(); panics++; mu.Unlock() }}
	o, err := smartpool.New[int](b)
	if err != nil {
		t.Fatal(err)
	}
	release := pin(t, func(task smartpool.Task) error { return d.SubmitTask(far, task) })
	for i := range 5 {
		mustOK(t, d.SubmitTask(time.Time{}, idTask(i)))
	}
	ran := make(chan struct{})
	mustOK(t, d.Submit(far, func(context.Context) { close(ran) }))
	release()
	waitOrFail(t, ran, "the task after the late ones")
	closePool(t, o)
	if calls != 5 || panics != 3 || d.Stats().DroppedLate != 5 {
		t.Fatalf("%d OnEnd calls, %d panics, Stats %+v; want 5, 3, 5 dropped late", calls, panics, d.Stats())
	}
}

// panicBehavior is a pool of one channel with an OnEnd and a panic handler.
type panicBehavior struct {
	ch       smartpool.Channel
	onEnd    func(smartpool.Task, smartpool.Outcome)
	panicked func()
}

func (b *panicBehavior) Config() smartpool.Config[int] {
	return smartpool.Config[int]{Workers: 1,
		Levels:       [][]smartpool.ChannelParams[int]{{{Key: 0, CompleteOnClose: true, OnEnd: b.onEnd}}},
		PanicHandler: func(int, *smartpool.PanicError) { b.panicked() }}
}

func (b *panicBehavior) Channel(int) smartpool.Channel { return b.ch }
func (b *panicBehavior) Followup(int) int              { return 0 }
