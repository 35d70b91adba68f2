package smartpool_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// waitResult waits for f within long and returns its error.
func waitResult[T any](t *testing.T, f *smartpool.Future[T], what string) error {
	t.Helper()
	waitFor(t, f.Done(), what)
	_, err := f.Wait(context.Background())
	return err
}

// A Future whose task is cancelled by its WithContext context while
// queued resolves with the context's error, and the task is counted once,
// as cancelled: whether the context ends before Close, after a Close that
// drains the channel, or by its deadline.
func TestFuture_CancelledWhileQueuedResolves(t *testing.T) {
	for _, c := range []struct {
		name   string
		coc    bool // the future's channel completes on close
		close  bool // Close starts while the task is queued and cancelled
		cancel bool // the test cancels the context (else its deadline ends it)
		want   error
	}{
		{"cancel", false, false, true, context.Canceled},
		{"deadline", false, false, false, context.DeadlineExceeded},
		{"cancel, then a draining Close", true, true, true, context.Canceled},
		{"cancel, then a dropping Close", false, true, true, context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &behavior{workers: 1, levels: [][]ch{{fifo("pin")}, {{key: "f", c: channels.NewFIFO(), coc: c.coc}}}}
			o := start(t, b)
			p := o.Pool()
			g := newGate()
			submit(t, o, "pin", g.task("pin")) // the only worker is busy: the future's task stays queued
			g.waitStarted(t, 1)
			release := sync.OnceFunc(func() { close(g.release) })
			defer release() // before the pool's Close, even when the test fails
			// A slow machine can spend the deadline case's millisecond before
			// the submit, which is then refused with the context's error: try
			// again with a longer deadline.
			var f *smartpool.Future[int]
			var err error
			for d := time.Millisecond; ; d *= 4 {
				var task smartpool.Task
				task, f = smartpool.NewFuture(func(context.Context) (int, error) { return 1, nil })
				ctx, cancel := context.WithTimeout(context.Background(), d)
				if c.cancel {
					ctx, cancel = context.WithCancel(context.Background())
				}
				err = p.SubmitTask("f", task, smartpool.WithContext(ctx))
				if c.cancel {
					cancel()
				}
				defer cancel()
				if c.cancel || !errors.Is(err, context.DeadlineExceeded) || d > long {
					break
				}
			}
			require.NoError(t, err)
			require.ErrorIs(t, waitResult(t, f, "the cancelled future"), c.want)
			st, _ := p.Stats().Channel("f")
			require.Equal(t, uint64(1), st.Cancelled)
			release()
			if c.close {
				r := closeWithin(t, o, long)
				st, _ := r.Channel("f")
				require.Equal(t, uint64(1), st.Cancelled)
				require.Zero(t, st.Ran+st.Dropped)
			}
		})
	}
}

// A Group whose queued task is skipped because the group's context ended
// resolves with the context's error; the task is counted as cancelled.
func TestGroup_CancelledWhileQueuedResolves(t *testing.T) {
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("pin")}, {fifo("g")}}})
	p := o.Pool()
	gate := newGate()
	submit(t, o, "pin", gate.task("pin"))
	gate.waitStarted(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	g := smartpool.NewGroup(ctx, p)
	for range 3 {
		g.Go("g", func(context.Context) error { return errors.New("ran") })
	}
	cancel()
	done := make(chan error, 1)
	go func() { done <- g.Wait(context.Background()) }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(long):
		t.Fatal("Wait did not return for a group whose queued tasks were cancelled")
	}
	st, _ := p.Stats().Channel("g")
	require.Equal(t, uint64(3), st.Cancelled)
	close(gate.release)
	r := closeWithin(t, o, long)
	st, _ = r.Channel("g")
	require.Equal(t, uint64(3), st.Cancelled)
	require.Zero(t, st.Ran)
}

// count returns the number of panics l received.
func (l *panicLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.panics)
}

// A task run through Go, NewFuture or a Group that panics is counted as
// panicked, not ran, whether it panics at once or after a Yield; the Future
// or the Group reports the panic as an error, and the pool's handler sees
// it too, once: a panic nobody waits for is never silent.
func TestResults_PanicCountedPanicked(t *testing.T) {
	for _, c := range []struct {
		name  string
		run   func(p *smartpool.Pool[string], fn func(ctx context.Context)) error
		yield bool
	}{
		{"Go", runGo, false},
		{"Go after Yield", runGo, true},
		{"NewFuture", runNewFuture, false},
		{"Group", runGroup, false},
		{"Group after Yield", runGroup, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log panicLog
			o := start(t, &behavior{workers: 1, onPanic: log.handle, levels: [][]ch{{fifo("a")}}})
			p := o.Pool()
			err := c.run(p, func(ctx context.Context) {
				if c.yield {
					smartpool.Yield(ctx, func() {})
				}
				panic(errBoom)
			})
			var pe *smartpool.PanicError
			require.ErrorAs(t, err, &pe)
			require.ErrorIs(t, err, errBoom)
			eventually(t, func() bool { st, _ := p.Stats().Channel("a"); return st.Panicked+st.Ran > 0 })
			r := closeWithin(t, o, long)
			st, _ := r.Channel("a")
			require.Equal(t, uint64(1), st.Panicked, "panicked")
			require.Zero(t, st.Ran, "ran")
			require.Equal(t, 1, log.count(), "the pool's handler's calls")
		})
	}
}

func runGo(p *smartpool.Pool[string], fn func(ctx context.Context)) error {
	_, err := goWait(context.Background(), p, "a", func(ctx context.Context) (int, error) { fn(ctx); return 0, nil })
	return err
}

func runNewFuture(p *smartpool.Pool[string], fn func(ctx context.Context)) error {
	task, f := smartpool.NewFuture(func(ctx context.Context) (int, error) { fn(ctx); return 0, nil })
	if err := p.SubmitTask("a", task); err != nil {
		return err
	}
	_, err := f.Wait(context.Background())
	return err
}

func runGroup(p *smartpool.Pool[string], fn func(ctx context.Context)) error {
	return smartpool.Scope(context.Background(), p, func(g *smartpool.Group[string]) {
		g.Go("a", func(ctx context.Context) error { fn(ctx); return nil })
	})
}

// Panics in a Group after its first error are not lost: Wait returns the
// first error, every later panic reaches the pool's panic handler, and all
// are counted as panicked.
func TestGroup_PanicsAfterFirstErrorReachHandler(t *testing.T) {
	var log panicLog
	o := start(t, &behavior{workers: 3, onPanic: log.handle, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	started := newGate()
	err := smartpool.Scope(context.Background(), p, func(g *smartpool.Group[string]) {
		for i := range 2 {
			g.Go("a", func(ctx context.Context) error {
				started.started <- "panicker"
				if err := cancelled(ctx); err != nil { // the first error cancels the group
					return err
				}
				panic(i)
			})
		}
		started.waitStarted(t, 2)
		g.Go("a", func(context.Context) error { return errBoom })
	})
	require.ErrorIs(t, err, errBoom)
	r := closeWithin(t, o, long)
	st, _ := r.Channel("a")
	require.Equal(t, uint64(2), st.Panicked)
	require.Equal(t, uint64(1), st.Ran)
	require.Equal(t, 2, log.count())
}

// The values of the context given with WithContext reach the task; its
// cancellation does not once the task started; the task keeps the pool's
// handle, so it can Yield.
func TestWithContext_ValuesFlow(t *testing.T) {
	type traceKey struct{}
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	for _, c := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"cancellable", func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.WithValue(context.Background(), traceKey{}, "trace-1"))
		}},
		{"values only", func() (context.Context, context.CancelFunc) {
			return context.WithValue(context.Background(), traceKey{}, "trace-1"), func() {}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := c.ctx()
			defer cancel()
			type seen struct {
				trace            any
				doneAfterCancel  bool
				yieldedOnWorkers bool
			}
			res := make(chan seen, 1)
			inTask := make(chan struct{})
			cancelled := make(chan struct{})
			require.NoError(t, p.Submit("a", func(tctx context.Context) {
				close(inTask)
				<-cancelled
				s := seen{trace: tctx.Value(traceKey{}), doneAfterCancel: tctx.Err() != nil}
				// Yield gives the only worker away: the other task runs meanwhile.
				other := make(chan struct{})
				smartpool.Yield(tctx, func() {
					_ = p.Submit("a", func(context.Context) { close(other) })
					<-other
				})
				s.yieldedOnWorkers = true
				res <- s
			}, smartpool.WithContext(ctx)))
			<-inTask
			cancel()
			close(cancelled)
			select {
			case s := <-res:
				require.Equal(t, "trace-1", s.trace)
				require.False(t, s.doneAfterCancel, "the submitter's cancellation reached a started task")
				require.True(t, s.yieldedOnWorkers)
			case <-time.After(long):
				t.Fatal("the task did not finish")
			}
		})
	}
}

// A nil context is a caller's mistake that gets context.Background()'s
// meaning, not a crash: WithContext, NewGroup, Scope and Wait.
func TestResults_NilContextMeansBackground(t *testing.T) {
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	var nilCtx context.Context
	ran := make(chan struct{})
	require.NoError(t, p.Submit("a", func(context.Context) { close(ran) }, smartpool.WithContext(nilCtx)))
	waitFor(t, ran, "the task submitted with a nil context")
	g := smartpool.NewGroup(nilCtx, p)
	g.Go("a", func(context.Context) error { return nil })
	require.NoError(t, g.Wait(nilCtx))
	require.NoError(t, smartpool.Scope(nilCtx, p, func(g *smartpool.Group[string]) {
		g.Go("a", func(context.Context) error { return nil })
	}))
}
