package smartpool_test

import (
	"context"
	"errors"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// Tasks that end outside the queue and the workers (hold.go): a removal must
// not report the channel while one of them has not ended. Each test starts
// a removal with a context that has ended (rsHeldProbe) at the moment such
// a task is in flight: RemoveChannel evaluates its wait once, and must find
// the task held.

// rsHeldProbe starts a dropping removal of key with an ended context: with a
// task of the channel in flight, RemoveChannel must return
// context.Canceled, not the channel's final stats (which would come before
// that task ended).
func rsHeldProbe(t *testing.T, p *smartpool.Pool[string], key string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if st, err := p.RemoveChannel(ctx, key, smartpool.Drop); !errors.Is(err, context.Canceled) {
		t.Errorf("RemoveChannel(%q) with a task in flight: %+v, %v; want context.Canceled (the removal waits for it)", key, st, err)
	}
}

// rsRemoveNow ends the removal of key and returns its final stats.
func rsRemoveNow(t *testing.T, p *smartpool.Pool[string], key string) smartpool.ChannelStats[string] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	st, err := p.RemoveChannel(ctx, key, smartpool.Drop)
	if err != nil {
		t.Fatalf("RemoveChannel(%q): %v", key, err)
	}
	return st
}

// rsAddBounded adds Bounded(1, opts...) as "b" to level 1, with OnEnd
// recorded.
func rsAddBounded(t *testing.T, p *smartpool.Pool[string], opts ...channels.BoundedOption) (*channels.Bounded, *rsEndings) {
	t.Helper()
	en := rsNewEndings()
	b := channels.NewBounded(1, opts...)
	if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "b", OnEnd: en.onEnd}, b, "b"); err != nil {
		t.Fatal(err)
	}
	return b, en
}

// rsHoldWorker runs a gate on "base" and returns its release: the only
// worker is busy, so what is submitted to "b" stays queued.
func rsHoldWorker(t *testing.T, p *smartpool.Pool[string]) func() {
	t.Helper()
	g := rsNewGate()
	if err := p.Submit("base", g.run); err != nil {
		t.Fatal(err)
	}
	rsRecv(t, "the gate", g.started)
	return func() { close(g.release) }
}

// A task DropOldest displaces leaves the queue under the channel's lock and
// ends (Discard) after the unlock, on the submitter: a removal that starts
// meanwhile (here from its OnEnd, inside Discard) must wait for it. Before
// Bits.Hold the removal found Len 0 and nothing held, and reported.
func TestReshapeHeld_Displaced(t *testing.T) {
	_, p := rsNewPool(t, 1, []int{0, 1})
	release := rsHoldWorker(t, p)
	en := rsNewEndings()
	probed := false
	onEnd := func(task smartpool.Task, o smartpool.Outcome) {
		en.onEnd(task, o)
		if o == smartpool.DroppedDisplaced {
			probed = true
			rsHeldProbe(t, p, "b") // the submitter's goroutine, between the eviction and the Unhold
		}
	}
	b := channels.NewBounded(1, channels.DropOldest())
	if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "b", OnEnd: onEnd}, b, "b"); err != nil {
		t.Fatal(err)
	}
	for id := range 2 { // the second displaces the first
		if err := b.SubmitTask(&rsIdTask{id: id, fn: func(context.Context) { t.Errorf("task %d ran", id) }}); err != nil {
			t.Fatal(err)
		}
	}
	release() // the worker's next turn passes the removal's grace
	if !probed {
		t.Fatal("no task was displaced")
	}
	st := rsRemoveNow(t, p, "b")
	if st.Dropped != 2 || st.Ran != 0 {
		t.Errorf("final stats: Dropped %d, Ran %d; want 2, 0", st.Dropped, st.Ran)
	}
	en.check(t, 2, map[smartpool.Outcome]int{smartpool.DroppedDisplaced: 1, smartpool.DroppedOnClose: 1})
}

// rsInline is a child task that a submit runs on its caller: it signals
// started and waits for release, so that the test probes while it runs.
type rsInline struct {
	started, release chan struct{}
	id               int   // its id for OnEnd
	inTask           bool  // it runs in a task's place: it tries to remove its own channel
	refused          error // what RemoveChannel of its own channel, called from inside it, returned
}

func rsNewInline(id int, inTask bool) *rsInline {
	return &rsInline{started: make(chan struct{}), release: make(chan struct{}), id: id, inTask: inTask}
}

func (c *rsInline) task(p *smartpool.Pool[string]) smartpool.Task {
	return &rsIdTask{id: c.id, fn: func(ctx context.Context) {
		if c.inTask { // it would wait for itself: refused at once
			_, c.refused = p.RemoveChannel(ctx, "b", smartpool.Drain)
		}
		close(c.started)
		<-c.release
	}}
}

// A task a submit runs on its caller instead of queueing it (CallerRuns
// through Bits.RunInTask or Bits.RunHere; the pool's help-while-you-wait
// runs for WithContext, a group's limit and Config.Limit) must be held
// while it runs: a removal that starts meanwhile waits for it, and reports
// it in its final stats. Before, the removal reported while it ran.
func TestReshapeHeld_RunOnCaller(t *testing.T) {
	filler := func(id int) smartpool.Task { return &rsIdTask{id: id, fn: func(context.Context) {}} }
	cases := []struct {
		name   string
		limit  int
		opts   []channels.BoundedOption
		inTask bool // the submit comes from a task on "base", else from a goroutine while a gate holds the worker
		// submit fills "b" (Bounded(1)) if need be, then submits child: it must run it on the caller.
		submit func(ctx context.Context, p *smartpool.Pool[string], b *channels.Bounded, child smartpool.Task) error
	}{
		{name: "CallerRuns/RunInTask", opts: []channels.BoundedOption{channels.CallerRuns()}, inTask: true,
			submit: func(_ context.Context, _ *smartpool.Pool[string], b *channels.Bounded, child smartpool.Task) error {
				if err := b.SubmitTask(filler(0)); err != nil {
					return err
				}
				return b.SubmitTask(child)
			}},
		{name: "CallerRuns/RunHere", opts: []channels.BoundedOption{channels.CallerRuns()},
			submit: func(_ context.Context, _ *smartpool.Pool[string], b *channels.Bounded, child smartpool.Task) error {
				if err := b.SubmitTask(filler(0)); err != nil {
					return err
				}
				return b.SubmitTask(child)
			}},
		{name: "WithContext/full", inTask: true,
			submit: func(ctx context.Context, p *smartpool.Pool[string], _ *channels.Bounded, child smartpool.Task) error {
				if err := p.SubmitTask("b", filler(0)); err != nil {
					return err
				}
				return p.SubmitTask("b", child, smartpool.WithContext(ctx))
			}},
		{name: "WithContext/limit", limit: 1, inTask: true,
			submit: func(ctx context.Context, p *smartpool.Pool[string], _ *channels.Bounded, child smartpool.Task) error {
				return p.SubmitTask("b", child, smartpool.WithContext(ctx)) // the calling task holds the only unit
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := rsHeldPool(t, tc.limit)
			b, en := rsAddBounded(t, p, tc.opts...)
			n := 2 // the filler (id 0), dropped by the removal, and the child
			want := map[smartpool.Outcome]int{smartpool.Ran: 1, smartpool.DroppedOnClose: 1}
			if tc.limit > 0 { // no filler
				n, want = 1, map[smartpool.Outcome]int{smartpool.Ran: 1}
			}
			child := rsNewInline(n-1, tc.inTask)
			submitted := make(chan error, 1)
			release := func() {}
			if tc.inTask {
				if err := p.Submit("base", func(ctx context.Context) { submitted <- tc.submit(ctx, p, b, child.task(p)) }); err != nil {
					t.Fatal(err)
				}
			} else {
				release = rsHoldWorker(t, p)
				go func() { submitted <- tc.submit(context.Background(), p, b, child.task(p)) }()
			}
			rsRecv(t, "the child running on its caller", child.started)
			if tc.inTask && !errors.Is(child.refused, smartpool.ErrConfig) {
				t.Errorf("RemoveChannel from inside the child of its channel: %v, want ErrConfig", child.refused)
			}
			rsHeldProbe(t, p, "b")
			close(child.release)
			if err := rsRecv(t, "the submit", submitted); err != nil {
				t.Fatalf("submit: %v", err)
			}
			release() // the worker's next turn passes the removal's grace
			st := rsRemoveNow(t, p, "b")
			if st.Ran != 1 {
				t.Errorf("final stats: Ran %d, want 1 (the child)", st.Ran)
			}
			en.check(t, n, want)
		})
	}
}

// A group task at its group's limit runs the child it spawns itself
// (help.go): held too.
func TestReshapeHeld_GroupHelp(t *testing.T) {
	p := rsHeldPool(t, 0)
	rsAddBounded(t, p)
	child := rsNewInline(0, true)
	g := smartpool.NewGroup(context.Background(), p)
	g.SetLimit(1)
	g.Go("base", func(ctx context.Context) error {
		g.Go("b", func(ctx context.Context) error { child.task(p).Run(ctx); return nil })
		return nil
	})
	rsRecv(t, "the child running on its parent", child.started)
	rsHeldProbe(t, p, "b")
	close(child.release)
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if err := g.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if !errors.Is(child.refused, smartpool.ErrConfig) {
		t.Errorf("RemoveChannel from inside the child of its channel: %v, want ErrConfig", child.refused)
	}
	if st := rsRemoveNow(t, p, "b"); st.Ran != 1 {
		t.Errorf("final stats: Ran %d, want 1 (the child)", st.Ran)
	}
}

// A submit that would run its task on the caller once a removal of the
// channel started refuses with ErrClosed, as the channel does, instead of
// running it (and the removal reporting before it ended).
func TestReshapeHeld_InlineRefusedDuringRemoval(t *testing.T) {
	p := rsHeldPool(t, 2)
	if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "b"}, channels.NewFIFO(), "b"); err != nil {
		t.Fatal(err)
	}
	gate := rsNewGate()
	if err := p.Submit("b", gate.run); err != nil { // holds a unit, and the removal
		t.Fatal(err)
	}
	rsRecv(t, "the gate", gate.started)
	removed := rsRemoveAsync(p, "b", smartpool.Drain)
	rsEventually(t, "the removal to start", func() bool {
		c, ok := p.Stats().Channel("b")
		return ok && c.Removing
	})
	got := make(chan error, 1)
	if err := p.Submit("base", func(ctx context.Context) { // holds the other unit
		got <- p.Submit("b", func(context.Context) { t.Error("ran inline during the removal") }, smartpool.WithContext(ctx))
	}); err != nil {
		t.Fatal(err)
	}
	if err := rsRecv(t, "the inline submit", got); !errors.Is(err, smartpool.ErrClosed) {
		t.Errorf("submit during the removal: %v, want ErrClosed", err)
	}
	close(gate.release)
	if r := rsRecv(t, "the removal", removed); r.err != nil || r.st.Ran != 1 {
		t.Errorf("removal: %+v, %v; want Ran 1", r.st, r.err)
	}
}

// rsHeldPool is rsNewPool with 2 workers for limit 2 (one each for the
// tasks it holds), else 1, and Config.Limit limit.
func rsHeldPool(t *testing.T, limit int) *smartpool.Pool[string] {
	t.Helper()
	workers := 1
	if limit == 2 {
		workers = 2
	}
	_, p := rsNewPoolWith(t, smartpool.Config[string]{Workers: workers, Limit: limit, Spare: []int{0, 1}})
	return p
}
