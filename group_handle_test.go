package smartpool_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// groupHandlePool starts a one-worker pool with Config.Limit limit: a FIFO
// "gate" on top, to hold the worker, and a Priority "p" and a FIFO "f"
// below, whose endings ends counts. It returns the pool, the Priority and
// the release of the gate task holding the worker (done at the test's end
// too, so that a failed test does not wait out Close).
func groupHandlePool(t *testing.T, limit int, ends *endCounter) (*smartpool.OwnedPool[string], *channels.Priority, func()) {
	t.Helper()
	pr := channels.NewPriority()
	b := &behavior{workers: 1, limit: limit, levels: [][]ch{
		{{key: "gate", c: channels.NewFIFO(), coc: true}},
		{{key: "p", c: pr, coc: true, onEnd: ends.fn}, {key: "f", c: channels.NewFIFO(), coc: true, onEnd: ends.fn}},
	}}
	o := start(t, b)
	g := newGate()
	submit(t, o, "gate", g.task("gate"))
	g.waitStarted(t, 1)
	release := sync.OnceFunc(func() { close(g.release) })
	t.Cleanup(release) // before start's Close: cleanups run last first
	return o, pr, release
}

// TestGroupHandle_CancelFailsGroup: in the default mode, a Cancel through a
// Group.Go handle ends the queued task as Cancelled, once, and its
// context.Canceled is the group's first error: the group's context is
// cancelled with it as cause, the other queued task is skipped, and Wait
// returns it. Both tasks' units of the limit come back.
func TestGroupHandle_CancelFailsGroup(t *testing.T) {
	var ends endCounter
	o, _, release := groupHandlePool(t, 3, &ends)
	p := o.Pool()
	grp := smartpool.NewGroup(context.Background(), p)
	var ran atomic.Int32
	fn := func(context.Context) error { ran.Add(1); return nil }
	var ha, hb smartpool.Handle
	grp.Go("p", fn, smartpool.WithHandle(&ha))
	grp.Go("f", fn, smartpool.WithHandle(&hb))
	if ha == (smartpool.Handle{}) || hb == (smartpool.Handle{}) {
		t.Fatal("Group.Go left its Handle zero")
	}
	if !ha.Cancel() {
		t.Fatal("Cancel of a queued group task = false")
	}
	if ha.Cancel() {
		t.Fatal("second Cancel = true")
	}
	if err := context.Cause(grp.Context()); !errors.Is(err, context.Canceled) {
		t.Fatalf("group's context cause after Cancel = %v, want context.Canceled", err)
	}
	eventually(t, func() bool { return ends.of(smartpool.Cancelled) == 2 }) // the other one skipped by the group's context
	if hb.Cancel() {
		t.Fatal("Cancel of a task the group's context cancelled = true")
	}
	if s := p.Stats(); s.Admitted != 1 {
		t.Fatalf("Admitted = %d, want 1 (the gate)", s.Admitted)
	}
	release()
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if err := grp.Wait(ctx); err != context.Canceled {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	r := closeWithin(t, o, long)
	sp, _ := r.Channel("p")
	sf, _ := r.Channel("f")
	if sp.Cancelled != 1 || sf.Cancelled != 1 || ran.Load() != 0 {
		t.Fatalf("cancelled %d + %d, ran %d; want 1 + 1, 0", sp.Cancelled, sf.Cancelled, ran.Load())
	}
	if got := ends.total(); got != 2 {
		t.Fatalf("%d endings, want 2", got)
	}
}

// TestGroupHandle_CancelCollect: with CollectErrors, a Cancel through a
// handle cancels nothing else: its context.Canceled is one of Wait's
// errors, one per cancelled task (where the context's error, shared by
// the tasks it skips, counts once), the group's slot (SetLimit) comes free
// at once, and the other task runs. TryGo fills its handle too.
func TestGroupHandle_CancelCollect(t *testing.T) {
	var ends endCounter
	o, _, release := groupHandlePool(t, 0, &ends)
	p := o.Pool()
	grp := smartpool.NewGroup(context.Background(), p)
	grp.CollectErrors()
	grp.SetLimit(2)
	var ran atomic.Int32
	fn := func(context.Context) error { ran.Add(1); return nil }
	var ha, hb, hc smartpool.Handle
	grp.Go("p", fn, smartpool.WithHandle(&ha))
	if !grp.TryGo("f", fn, smartpool.WithHandle(&hb)) {
		t.Fatal("TryGo with room = false")
	}
	if grp.TryGo("f", fn, smartpool.WithHandle(&hc)) {
		t.Fatal("TryGo at the group's limit = true")
	}
	if hc != (smartpool.Handle{}) {
		t.Fatal("a refused TryGo filled its Handle")
	}
	if !ha.Cancel() {
		t.Fatal("Cancel of a queued group task = false")
	}
	if err := grp.Context().Err(); err != nil {
		t.Fatalf("group's context after Cancel with CollectErrors: %v, want live", err)
	}
	if !grp.TryGo("f", fn, smartpool.WithHandle(&hc)) {
		t.Fatal("TryGo after the Cancel freed a place = false")
	}
	if ends.of(smartpool.Cancelled) != 1 {
		t.Fatalf("%d cancelled endings at once, want 1", ends.of(smartpool.Cancelled))
	}
	if !hc.Cancel() {
		t.Fatal("Cancel of a queued TryGo task = false")
	}
	release()
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	err := grp.Wait(ctx)
	if !errors.Is(err, context.Canceled) || strings.Count(err.Error(), context.Canceled.Error()) != 2 {
		t.Fatalf("Wait = %v, want context.Canceled twice, one per cancelled task", err)
	}
	if ran.Load() != 1 {
		t.Fatalf("%d tasks ran, want 1", ran.Load())
	}
	r := closeWithin(t, o, long)
	sp, _ := r.Channel("p")
	sf, _ := r.Channel("f")
	if sp.Cancelled != 1 || sf.Cancelled != 1 || sf.Ran != 1 {
		t.Fatalf("p: cancelled %d; f: cancelled %d, ran %d; want 1; 1, 1", sp.Cancelled, sf.Cancelled, sf.Ran)
	}
}

// TestGroupHandle_Reorder moves group tasks in a Priority channel through
// the handles of Go and TryGo, and a FIFO's refuses with the named
// ErrOption.
func TestGroupHandle_Reorder(t *testing.T) {
	var ends endCounter
	o, _, release := groupHandlePool(t, 0, &ends)
	p := o.Pool()
	grp := smartpool.NewGroup(context.Background(), p)
	order := make(chan string, 8)
	rec := func(name string) func(context.Context) error {
		return func(context.Context) error { order <- name; return nil }
	}
	var ha, hc, hf smartpool.Handle
	grp.Go("p", rec("a"), smartpool.WithPriority(1), smartpool.WithHandle(&ha))
	grp.Go("p", rec("b"), smartpool.WithPriority(5))
	if !grp.TryGo("p", rec("c"), smartpool.WithPriority(10), smartpool.WithHandle(&hc)) {
		t.Fatal("TryGo = false")
	}
	grp.Go("f", func(context.Context) error { return nil }, smartpool.WithHandle(&hf))
	if err := ha.Reprioritize(20); err != nil {
		t.Fatalf("Reprioritize: %v", err)
	}
	if err := hc.Reprioritize(0); err != nil {
		t.Fatalf("Reprioritize: %v", err)
	}
	if err := hf.Reprioritize(1); !errors.Is(err, smartpool.ErrOption) || !strings.Contains(err.Error(), `channel "f"`) {
		t.Fatalf("Reprioritize in a FIFO = %v, want ErrOption naming \"f\"", err)
	}
	if err := ha.SetDeadline(time.Now()); !errors.Is(err, smartpool.ErrOption) || !strings.Contains(err.Error(), `channel "p"`) {
		t.Fatalf("SetDeadline in a Priority = %v, want ErrOption naming \"p\"", err)
	}
	release()
	if got, want := collect(t, order, 3), []string{"a", "b", "c"}; !sameOrder(got, want) {
		t.Fatalf("run order %v, want %v", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if err := grp.Wait(ctx); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	if err := ha.Reprioritize(3); !errors.Is(err, smartpool.ErrNotQueued) {
		t.Fatalf("Reprioritize after the task ran = %v, want ErrNotQueued", err)
	}
}

// TestGroupHandle_CancelRacesStart releases the only worker and cancels the
// next group task at the same time, many times: exactly one of the two
// happens, and the group's Wait agrees (context.Canceled exactly when the
// Cancel won).
func TestGroupHandle_CancelRacesStart(t *testing.T) {
	var ends endCounter
	b := &behavior{workers: 1, limit: 4, levels: [][]ch{{{key: "p", c: channels.NewPriority(), coc: true, onEnd: ends.fn}}}}
	o := start(t, b)
	p := o.Pool()
	n := scale(1000)
	var cancels int
	for i := range n {
		started, release := make(chan struct{}), make(chan struct{})
		submit(t, o, "p", func(context.Context) { close(started); <-release })
		waitFor(t, started, "the gate task")
		grp := smartpool.NewGroup(context.Background(), p)
		var ran atomic.Bool
		var h smartpool.Handle
		grp.Go("p", func(context.Context) error { ran.Store(true); return nil }, smartpool.WithHandle(&h))
		go1, done := make(chan struct{}), make(chan bool)
		go func() { <-go1; done <- h.Cancel() }()
		close(go1)
		close(release)
		cancelled := <-done
		ctx, cancel := context.WithTimeout(context.Background(), long)
		err := grp.Wait(ctx)
		cancel()
		if ran.Load() == cancelled || (err == context.Canceled) != cancelled || (err != nil && err != context.Canceled) {
			t.Fatalf("iteration %d: ran %v, Cancel %v, Wait %v: want exactly one, and Wait's error with the Cancel", i, ran.Load(), cancelled, err)
		}
		if cancelled {
			cancels++
		}
		eventually(t, func() bool { return ends.total() == int32(2*(i+1)) })
		if got := ends.of(smartpool.Cancelled); got != int32(cancels) {
			t.Fatalf("iteration %d: %d cancelled endings, want %d", i, got, cancels)
		}
	}
	eventually(t, func() bool { return o.Pool().Stats().Admitted == 0 })
	r := closeWithin(t, o, long)
	if st, _ := r.Channel("p"); st.Cancelled != uint64(cancels) || st.Ran != uint64(2*n-cancels) {
		t.Fatalf("report: cancelled %d, ran %d; want %d, %d", st.Cancelled, st.Ran, cancels, 2*n-cancels)
	}
	t.Logf("%d of %d cancelled", cancels, n)
}

// TestHandoffHandle: a continuation handed off with WithHandle can be moved
// and cancelled while it waits; cancelled, it never runs, ends Cancelled
// once, and the unit it took over from its chain is released (in a pool
// whose limit of 1 the chain held).
func TestHandoffHandle(t *testing.T) {
	var ends endCounter
	pr := channels.NewPriority()
	b := &behavior{workers: 1, limit: 1, levels: [][]ch{
		{{key: "p", c: pr, coc: true, onEnd: ends.fn}, {key: "f", c: channels.NewFIFO(), coc: true, onEnd: ends.fn}},
	}}
	o := start(t, b)
	p := o.Pool()
	var ran atomic.Bool
	type result struct {
		handoff, reprio, wrongKey, fifoReprio error
		cancel, again                         bool
	}
	res := make(chan result, 1)
	if err := p.Submit("f", func(ctx context.Context) {
		var r result
		var h, hf smartpool.Handle
		r.handoff = p.Handoff(ctx, "p", func(context.Context) { ran.Store(true) }, smartpool.WithPriority(1), smartpool.WithHandle(&h))
		r.reprio = h.Reprioritize(7)
		r.wrongKey = h.SetDeadline(time.Now())
		r.cancel = h.Cancel()
		r.again = h.Cancel()
		// The unit is back: a second Handoff needs a free one.
		if err := p.Handoff(ctx, "f", func(context.Context) {}, smartpool.WithHandle(&hf)); err != nil {
			r.fifoReprio = err
		} else {
			r.fifoReprio = hf.Reprioritize(1)
		}
		res <- r
	}); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-res:
	case <-t.Context().Done():
		t.Fatal("test ended")
	}
	switch {
	case r.handoff != nil:
		t.Fatalf("Handoff with WithHandle = %v", r.handoff)
	case r.reprio != nil:
		t.Fatalf("Reprioritize = %v", r.reprio)
	case !errors.Is(r.wrongKey, smartpool.ErrOption) || !strings.Contains(r.wrongKey.Error(), `channel "p"`):
		t.Fatalf("SetDeadline in a Priority = %v, want ErrOption naming \"p\"", r.wrongKey)
	case !r.cancel || r.again:
		t.Fatalf("Cancel = %v, then %v; want true, then false", r.cancel, r.again)
	case !errors.Is(r.fifoReprio, smartpool.ErrOption) || !strings.Contains(r.fifoReprio.Error(), `channel "f"`):
		t.Fatalf("second Handoff, Reprioritize in a FIFO = %v, want ErrOption naming \"f\" (ErrFull: the unit was not released)", r.fifoReprio)
	}
	eventually(t, func() bool { return ends.total() == 3 })
	eventually(t, func() bool { return p.Stats().Admitted == 0 })
	rep := closeWithin(t, o, long)
	if st, _ := rep.Channel("p"); st.Cancelled != 1 || st.Ran != 0 || ran.Load() {
		t.Fatalf("p: cancelled %d, ran %d (%v); want 1, 0", st.Cancelled, st.Ran, ran.Load())
	}
	if ends.of(smartpool.Cancelled) != 1 {
		t.Fatalf("%d cancelled endings, want 1", ends.of(smartpool.Cancelled))
	}
}
