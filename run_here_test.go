package smartpool_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/source"
)

// endsOnSecondLook is a context whose Err reports Canceled from its second
// call on, and whose Done closes only when the test ends: it ends exactly
// between a submit's own check and the moment the task would start.
type endsOnSecondLook struct {
	context.Context
	looks atomic.Int32
	never chan struct{}
}

func (c *endsOnSecondLook) Done() <-chan struct{} { return c.never }

func (c *endsOnSecondLook) Err() error {
	if c.looks.Add(1) >= 2 {
		return context.Canceled
	}
	return nil
}

// A WithContext task that a full CallerRuns channel runs on the submitter
// after its context ended is counted cancelled once, and its unit of the
// limit, which the channel gave back before running it, is not released a
// second time (FuzzPoolOps found Admitted at -1).
func TestRunHere_CancelledInlineTaskReleasesNoUnit(t *testing.T) {
	b := channels.NewBounded(1, channels.CallerRuns())
	o := start(t, &behavior{workers: 1, limit: 4, levels: [][]ch{{{key: "b", c: b, coc: true}}}})
	p := o.Pool()
	hold, started := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	defer release()
	if err := b.Submit(func(context.Context) { close(started); <-hold }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, started, "the task holding the worker")
	if err := b.Submit(func(context.Context) {}); err != nil { // fills the channel
		t.Fatal(err)
	}
	ran := false
	ctx := &endsOnSecondLook{Context: context.Background(), never: make(chan struct{})}
	defer close(ctx.never) // lets the goroutine the context package starts for it go
	err := p.Submit("b", func(context.Context) { ran = true }, smartpool.WithContext(ctx))
	if err != nil || ran {
		t.Fatalf("Submit: %v, ran %v; want nil and not run", err, ran)
	}
	s := p.Stats()
	c, _ := s.Channel("b")
	if c.Cancelled != 1 || c.Ran != 0 || s.Admitted != 2 {
		t.Errorf("after the inline task was cancelled: Cancelled %d Ran %d Admitted %d, want 1 0 2 (the two queued tasks' units)", c.Cancelled, c.Ran, s.Admitted)
	}
	release()
	r := closeWithin(t, o, long)
	if tot := r.Total(); tot.Ran != 2 || tot.Cancelled != 1 || r.Admitted != 0 {
		t.Errorf("report: Ran %d Cancelled %d Admitted %d, want 2 1 0", tot.Ran, tot.Cancelled, r.Admitted)
	}
}

// attachedFIFO is a FIFO that keeps the Bits its pool gave it, as a channel
// that runs tasks on the caller would.
type attachedFIFO struct {
	source.Plug
	source.Source // the FIFO's, with Attach wrapped
	fifo          *channels.FIFO
	bits          source.Bits
}

func newAttachedFIFO() *attachedFIFO {
	c := &attachedFIFO{fifo: channels.NewFIFO()}
	c.Source = source.SourceOf(c.fifo)
	c.Plug = source.NewPlug(c)
	return c
}

func (c *attachedFIFO) Len() int { return c.fifo.Len() }

func (c *attachedFIFO) Attach(b source.Bits) error {
	c.bits = b
	return c.Source.Attach(b)
}

// A task whose Future panics while a channel runs it on a pool task's
// goroutine (Bits.RunHere) is counted as panicked in its own channel: the
// task whose goroutine ran it returns and is counted as ran, not panicked.
func TestRunHere_OnATaskGoroutineKeepsOutcomesApart(t *testing.T) {
	here := newAttachedFIFO()
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a"), {key: "here", c: here, coc: true}}}})
	var err error
	done := make(chan struct{})
	submit(t, o, "a", func(ctx context.Context) {
		defer close(done)
		task, f := smartpool.NewFuture(func(context.Context) (int, error) { panic("boom") })
		here.bits.RunHere(ctx, task)
		_, err = f.Wait(ctx)
	})
	waitFor(t, done, "the task")
	var pe *smartpool.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("the Future resolved with %v, want a *PanicError", err)
	}
	r := closeWithin(t, o, long)
	a, _ := r.Channel("a")
	h, _ := r.Channel("here")
	if a.Ran != 1 || a.Panicked != 0 || h.Panicked != 1 {
		t.Fatalf("a: ran %d panicked %d; here: panicked %d; want 1 0 1", a.Ran, a.Panicked, h.Panicked)
	}
}
