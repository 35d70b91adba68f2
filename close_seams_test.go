package smartpool_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// Endings produced off the pool's goroutines (a removal's drops on its
// caller, a displaced task on its submitter, a task a channel runs on its
// submitter) must be covered by what Close waits for: Close returns its
// report only once each of them ended, OnEnd included, and a Close called
// from inside one returns ErrCloseFromTask instead of waiting for itself.
// Each test blocks one such ending in its OnEnd (or its run), lets Close
// reach the point where it would return, and checks that it does not.

// notClosedWindow is how long a test watches for a Close that must not
// return yet: a "must not happen" window, which a Close that does not wait
// fills at once.
const notClosedWindow = 50 * time.Millisecond

// closeAsync starts o.Close in a goroutine and returns its result.
func closeAsync(o *smartpool.OwnedPool[string]) <-chan *smartpool.Report[string] {
	res := make(chan *smartpool.Report[string], 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), long)
		defer cancel()
		r, err := o.Close(ctx)
		if err != nil {
			r = nil
		}
		res <- r
	}()
	return res
}

// closing waits until Close stopped admission: from then on a worker drops
// what it takes of a channel that does not complete on close.
func closing(t *testing.T, p *smartpool.Pool[string]) {
	t.Helper()
	rsEventually(t, "Close to start", func() bool { return p.State() != smartpool.Running })
}

// workersGone waits until Close started and no worker has a goroutine any
// more: a Close that waited only for the workers has returned, or is about
// to.
func workersGone(t *testing.T, p *smartpool.Pool[string]) {
	t.Helper()
	rsEventually(t, "the workers to leave", func() bool {
		return p.State() != smartpool.Running && p.Stats().Live == 0
	})
}

// notClosed fails if o's Close finishes within notClosedWindow: something
// it must wait for has not ended.
func notClosed(t *testing.T, o *smartpool.OwnedPool[string], what string) {
	t.Helper()
	select {
	case <-o.Done():
		t.Errorf("Close finished while %s", what)
	case <-time.After(notClosedWindow):
	}
}

// blockFirst is an OnEnd that counts endings with outcome o and blocks the
// first of them until release is closed.
type blockFirst struct {
	o       smartpool.Outcome
	once    sync.Once
	in      chan struct{} // closed as the first such ending enters OnEnd
	release chan struct{}
	n       atomic.Int32
}

func newBlockFirst(o smartpool.Outcome) *blockFirst {
	return &blockFirst{o: o, in: make(chan struct{}), release: make(chan struct{})}
}

func (b *blockFirst) onEnd(_ smartpool.Task, o smartpool.Outcome) {
	if o != b.o {
		return
	}
	b.n.Add(1)
	b.once.Do(func() {
		close(b.in)
		<-b.release
	})
}

// A dropping removal drops the channel's queued tasks on its caller's
// goroutine. Close, started while it does (here: while the OnEnd of its
// first drop runs), must wait for the rest: its report counts all 12.
// Before the removal held a share of what Close waits for, the report had 1.
func TestCloseSeams_RemoveDropDuringClose(t *testing.T) {
	const queued = 12
	o, p := rsNewPool(t, 1, []int{0, 1})
	release := rsHoldWorker(t, p)
	ends := newBlockFirst(smartpool.DroppedOnClose)
	if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "d", OnEnd: ends.onEnd}, channels.NewFIFO(), "d"); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	for range queued {
		if err := p.Submit("d", func(context.Context) { ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	removed := rsRemoveAsync(p, "d", smartpool.Drop)
	rsRecv(t, "the removal's first drop", ends.in)
	closed := closeAsync(o)
	release()
	workersGone(t, p)
	notClosed(t, o, "a removal was dropping tasks")
	close(ends.release)
	rep := rsRecv(t, "Close", closed)
	if rep == nil {
		t.Fatal("Close failed")
	}
	c, _ := rep.Channel("d")
	if got := c.Dropped + rep.Removed.Dropped; got != queued {
		t.Errorf("Close's report: %d dropped (channel %d, Removed %d), want %d", got, c.Dropped, rep.Removed.Dropped, queued)
	}
	if r := rsRecv(t, "the removal", removed); r.err != nil || r.st.Dropped != queued {
		t.Errorf("removal: %+v, %v; want %d dropped", r.st, r.err, queued)
	}
	if n := ends.n.Load(); n != queued || ran.Load() != 0 {
		t.Errorf("OnEnd saw %d drops and %d tasks ran; want %d, 0", n, ran.Load(), queued)
	}
}

// Close called from the OnEnd of a task a removal dropped, on the
// removal's goroutine, returns ErrCloseFromTask at once: the removal's share
// of what Close waits for is the caller's own.
func TestCloseSeams_CloseFromRemovalDrop(t *testing.T) {
	o, p := rsNewPool(t, 1, []int{0, 1})
	release := sync.OnceFunc(rsHoldWorker(t, p))
	defer release()
	errs := make(chan error, 4)
	onEnd := func(_ smartpool.Task, out smartpool.Outcome) {
		if out != smartpool.DroppedOnClose {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := o.Close(ctx)
		errs <- err
	}
	if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "d", OnEnd: onEnd}, channels.NewFIFO(), "d"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := p.Submit("d", func(context.Context) {}); err != nil {
			t.Fatal(err)
		}
	}
	removed := rsRemoveAsync(p, "d", smartpool.Drop)
	for i := range 2 {
		if err := rsRecv(t, "Close from OnEnd", errs); !errors.Is(err, smartpool.ErrCloseFromTask) {
			t.Errorf("Close from the OnEnd of drop %d: %v, want ErrCloseFromTask", i, err)
		}
	}
	release()
	if r := rsRecv(t, "the removal", removed); r.err != nil || r.st.Dropped != 2 {
		t.Errorf("removal: %+v, %v; want 2 dropped", r.st, r.err)
	}
}

// seamsPool starts a pool with one worker: a FIFO "base" on level 0 whose
// gate holds the worker, and c as "b" on level 1 (dropping on close), with
// onEnd.
func seamsPool(t *testing.T, c smartpool.Channel, onEnd func(smartpool.Task, smartpool.Outcome)) (*smartpool.OwnedPool[string], *gate) {
	t.Helper()
	g := newGate()
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("base")}, {{key: "b", c: c, onEnd: onEnd}}}})
	submit(t, o, "base", g.task("gate"))
	g.waitStarted(t, 1)
	return o, g
}

// A task DropOldest displaces leaves the queue under the channel's lock and
// ends on its submitter after the unlock (Bits.Discard). Close, started
// while it ends (here: while its OnEnd runs), must wait for it.
func TestCloseSeams_DisplacedDuringClose(t *testing.T) {
	ends := newBlockFirst(smartpool.DroppedDisplaced)
	b := channels.NewBounded(1, channels.DropOldest())
	o, g := seamsPool(t, b, ends.onEnd)
	if err := b.Submit(func(context.Context) { t.Error("task 0 ran") }); err != nil {
		t.Fatal(err)
	}
	submitted := make(chan error, 1)
	go func() { submitted <- b.Submit(func(context.Context) {}) }() // displaces task 0
	rsRecv(t, "the displaced task's OnEnd", ends.in)
	closed := closeAsync(o)
	closing(t, o.Pool())
	close(g.release)
	workersGone(t, o.Pool())
	notClosed(t, o, "a displaced task's OnEnd ran")
	close(ends.release)
	if err := rsRecv(t, "the displacing submit", submitted); err != nil {
		t.Fatal(err)
	}
	rep := rsRecv(t, "Close", closed)
	if rep == nil {
		t.Fatal("Close failed")
	}
	if c, _ := rep.Channel("b"); c.Dropped != 2 || c.Ran != 0 {
		t.Errorf("Close's report: b Dropped %d Ran %d, want 2 (displaced, then dropped on close), 0", c.Dropped, c.Ran)
	}
}

// Close called from the OnEnd of a displaced task, on its submitter's
// goroutine, returns ErrCloseFromTask at once.
func TestCloseSeams_CloseFromDisplaced(t *testing.T) {
	var o *smartpool.OwnedPool[string]
	errs := make(chan error, 1)
	onEnd := func(_ smartpool.Task, out smartpool.Outcome) {
		if out == smartpool.DroppedDisplaced {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err := o.Close(ctx)
			errs <- err
		}
	}
	b := channels.NewBounded(1, channels.DropOldest())
	o, g := seamsPool(t, b, onEnd)
	defer close(g.release)
	for range 2 {
		if err := b.Submit(func(context.Context) {}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rsRecv(t, "Close from OnEnd", errs); !errors.Is(err, smartpool.ErrCloseFromTask) {
		t.Errorf("Close from a displaced task's OnEnd: %v, want ErrCloseFromTask", err)
	}
}

// A full CallerRuns Bounded runs the task on its submitter (Bits.RunHere):
// Close, started while it runs, must wait for it and count it.
func TestCloseSeams_CallerRunsDuringClose(t *testing.T) {
	b := channels.NewBounded(1, channels.CallerRuns())
	o, g := seamsPool(t, b, nil)
	if err := b.Submit(func(context.Context) { t.Error("task 0 ran") }); err != nil {
		t.Fatal(err)
	}
	here := rsNewGate()
	submitted := make(chan error, 1)
	go func() { submitted <- b.Submit(here.run) }() // runs here: b is full
	rsRecv(t, "the task run on its submitter", here.started)
	closed := closeAsync(o)
	closing(t, o.Pool())
	close(g.release)
	workersGone(t, o.Pool())
	notClosed(t, o, "a task ran on its submitter")
	close(here.release)
	if err := rsRecv(t, "the running submit", submitted); err != nil {
		t.Fatal(err)
	}
	rep := rsRecv(t, "Close", closed)
	if rep == nil {
		t.Fatal("Close failed")
	}
	if c, _ := rep.Channel("b"); c.Ran != 1 || c.Dropped != 1 {
		t.Errorf("Close's report: b Ran %d Dropped %d, want 1 (run on its submitter), 1", c.Ran, c.Dropped)
	}
}

// Close called from a task a CallerRuns Bounded runs on its submitter
// returns ErrCloseFromTask at once.
func TestCloseSeams_CloseFromCallerRun(t *testing.T) {
	b := channels.NewBounded(1, channels.CallerRuns())
	o, g := seamsPool(t, b, nil)
	defer close(g.release)
	if err := b.Submit(func(context.Context) {}); err != nil {
		t.Fatal(err)
	}
	var err error
	if e := b.Submit(func(context.Context) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err = o.Close(ctx)
	}); e != nil {
		t.Fatal(e)
	}
	if !errors.Is(err, smartpool.ErrCloseFromTask) {
		t.Errorf("Close from a task run on its submitter: %v, want ErrCloseFromTask", err)
	}
}

// A submit that wakes an idle worker searches for a task on its behalf
// (the hand-over), on the submitter's goroutine: a DropLate Deadline polled
// there discards a late task, whose OnEnd runs on the submitter while it
// holds the worker. A Close from that OnEnd returns ErrCloseFromTask at
// once; it used to wait for the worker until its ctx ended.
func TestCloseSeams_CloseFromLateDropInHandOver(t *testing.T) {
	var o *smartpool.OwnedPool[string]
	errs := make(chan error, 1)
	onEnd := func(_ smartpool.Task, out smartpool.Outcome) {
		if out == smartpool.DroppedLate {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err := o.Close(ctx)
			errs <- err
		}
	}
	d := channels.NewDeadline(channels.DropLate())
	o = start(t, &behavior{workers: 1, levels: [][]ch{{{key: "d", c: d, onEnd: onEnd}}}})
	rsEventually(t, "the worker to be idle", func() bool { return o.Pool().Stats().Busy == 0 })
	if err := d.Submit(time.Now().Add(-time.Hour), func(context.Context) { t.Error("a late task ran") }); err != nil {
		t.Fatal(err)
	}
	if err := rsRecv(t, "Close from OnEnd", errs); !errors.Is(err, smartpool.ErrCloseFromTask) {
		t.Errorf("Close from a late task's OnEnd: %v, want ErrCloseFromTask", err)
	}
}

// AddChannel writes its slot's tables under the reshape lock while Close
// resumes every channel (a paused channel drains or drops as any other):
// Close must read them under that lock too. The race detector watches.
func TestCloseSeams_AddChannelDuringClose(t *testing.T) {
	for range scale(400) {
		o, p := rsNewPoolWith(t, smartpool.Config[string]{Workers: 1, Spare: []int{0, 1}})
		ready := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-ready
			err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "c", MaxRunning: 1}, channels.NewFIFO(), "c")
			if err != nil && !errors.Is(err, smartpool.ErrClosed) {
				t.Errorf("AddChannel during Close: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			<-ready
			ctx, cancel := context.WithTimeout(context.Background(), long)
			defer cancel()
			if _, err := o.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
		}()
		close(ready)
		wg.Wait()
	}
}

// A timer's firing submits on the runtime's timer goroutine; a full
// CallerRuns Bounded runs the task right there. Close called from that
// task returns ErrCloseFromTask: it stops the timers and waits for the
// firings in progress, but not for its own (it used to wait for ever).
func TestCloseSeams_CloseFromTimerFiring(t *testing.T) {
	b := channels.NewBounded(1, channels.CallerRuns())
	o, g := seamsPool(t, b, nil)
	defer close(g.release)
	if err := b.Submit(func(context.Context) {}); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	if _, err := o.Pool().After(0, "b", func(context.Context) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := o.Close(ctx)
		errs <- err
	}); err != nil {
		t.Fatal(err)
	}
	if err := rsRecv(t, "Close from the fired task", errs); !errors.Is(err, smartpool.ErrCloseFromTask) {
		t.Errorf("Close from a task a timer's firing ran: %v, want ErrCloseFromTask", err)
	}
}
