package smartpool_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// waitKinds are the calls by which a task waits for an event, each given the
// context under test: every one must give the task's worker back whatever
// context it is passed. b is the waiting task's pool; event is closed by a
// task queued behind the waiter (for future and group, the wait submits it).
var waitKinds = []struct {
	name string
	wait func(ctx context.Context, p *smartpool.Pool[string], event chan struct{}) error
}{
	{"Yield", func(ctx context.Context, _ *smartpool.Pool[string], event chan struct{}) error {
		smartpool.Yield(ctx, func() { <-event })
		return nil
	}},
	{"Recv", func(ctx context.Context, _ *smartpool.Pool[string], event chan struct{}) error {
		_, _, err := smartpool.Recv(ctx, event)
		return err
	}},
	{"Sleep", func(ctx context.Context, _ *smartpool.Pool[string], event chan struct{}) error {
		deadline := time.Now().Add(long)
		for time.Now().Before(deadline) {
			select {
			case <-event:
				return nil
			default:
			}
			if err := smartpool.Sleep(ctx, time.Millisecond); err != nil {
				return err
			}
		}
		return errors.New("the task behind never ran while this one slept")
	}},
	{"Future.Wait", func(ctx context.Context, p *smartpool.Pool[string], event chan struct{}) error {
		_, err := goWait(ctx, p, "a", func(context.Context) (int, error) { close(event); return 0, nil })
		return err
	}},
	{"Group.Wait", func(ctx context.Context, p *smartpool.Pool[string], event chan struct{}) error {
		g := smartpool.NewGroup(context.Background(), p)
		g.Go("a", func(context.Context) error { close(event); return nil })
		return g.Wait(ctx)
	}},
}

// waitContexts are the contexts a task passes to its waits: its own, the
// ones users write (context.Background(), a request's), and the context of
// another task that has ended. The calling goroutine decides, so every one
// yields.
var waitContexts = []struct {
	name string
	ctx  func(task, stale context.Context) (context.Context, context.CancelFunc)
}{
	{"task", func(task, _ context.Context) (context.Context, context.CancelFunc) { return task, func() {} }},
	{"derived", func(task, _ context.Context) (context.Context, context.CancelFunc) {
		return context.WithCancel(task)
	}},
	{"background", func(context.Context, context.Context) (context.Context, context.CancelFunc) {
		return context.Background(), func() {}
	}},
	{"request", func(context.Context, context.Context) (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), long)
	}},
	{"other task's", func(_, stale context.Context) (context.Context, context.CancelFunc) { return stale, func() {} }},
}

// On a one-worker pool, a task waits for an event that only a task queued
// behind it produces: the wait must give the worker back, whichever call
// waits and whichever context it is given, or the pool deadlocks.
func TestIdentity_WaitsYieldWhateverContext(t *testing.T) {
	for _, k := range waitKinds {
		for _, c := range waitContexts {
			t.Run(k.name+"/"+c.name, func(t *testing.T) {
				o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
				p := o.Pool()
				staleCh := make(chan context.Context, 1)
				submit(t, o, "a", func(ctx context.Context) { staleCh <- ctx })
				var stale context.Context
				select {
				case stale = <-staleCh:
				case <-time.After(long):
					t.Fatal("the first task did not run")
				}
				event, done := make(chan struct{}), make(chan struct{})
				var err error
				submit(t, o, "a", func(task context.Context) {
					defer close(done)
					ctx, cancel := c.ctx(task, stale)
					defer cancel()
					err = k.wait(ctx, p, event)
				})
				if k.name != "Future.Wait" && k.name != "Group.Wait" {
					submit(t, o, "a", func(context.Context) { close(event) })
				}
				waitFor(t, done, "the waiting task (a wait that holds the only worker deadlocks)")
				require.NoError(t, err)
			})
		}
	}
}

// A goroutine the pool does not run waits as a plain wait with any context:
// nothing is counted as yielded.
func TestIdentity_PlainWaitOutsideThePool(t *testing.T) {
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	for _, k := range waitKinds {
		event := make(chan struct{})
		if k.name != "Future.Wait" && k.name != "Group.Wait" {
			close(event) // nothing else would
		}
		require.NoError(t, k.wait(context.Background(), o.Pool(), event), k.name)
	}
	require.Zero(t, o.Pool().Stats().Total().Yielded)
}

// Close called from one of the pool's own tasks starts the close and returns
// ErrCloseFromTask whatever context it is given, instead of waiting for the
// task that called it.
func TestIdentity_CloseFromTaskWhateverContext(t *testing.T) {
	for _, c := range waitContexts {
		t.Run(c.name, func(t *testing.T) {
			o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
			staleCh := make(chan context.Context, 1)
			submit(t, o, "a", func(ctx context.Context) { staleCh <- ctx })
			stale := <-staleCh
			errc := make(chan error, 1)
			submit(t, o, "a", func(task context.Context) {
				ctx, cancel := c.ctx(task, stale)
				defer cancel()
				_, err := o.Close(ctx)
				errc <- err
			})
			select {
			case err := <-errc:
				require.ErrorIs(t, err, smartpool.ErrCloseFromTask)
			case <-time.After(long):
				t.Fatal("Close from a task waited for the task that called it")
			}
			waitFor(t, o.Done(), "the close the task started")
		})
	}
}

// A task of one pool that closes another pool waits without holding its
// worker: the pool it closes waits for a task that only the caller's pool
// can release.
func TestIdentity_CloseOfAnotherPoolYields(t *testing.T) {
	caller := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	other := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	release, started := make(chan struct{}), make(chan struct{})
	submit(t, other, "a", func(context.Context) { close(started); <-release })
	waitFor(t, started, "the other pool's task")
	errc := make(chan error, 1)
	submit(t, caller, "a", func(context.Context) {
		_, err := other.Close(context.Background())
		errc <- err
	})
	submit(t, caller, "a", func(context.Context) { close(release) })
	select {
	case err := <-errc:
		require.NoError(t, err)
	case <-time.After(long):
		t.Fatal("Close of another pool from a task held the caller's only worker")
	}
}

// Handoff finds its task by the calling goroutine: context.Background() from
// inside a task hands off, and a task's context on another goroutine does
// not.
func TestIdentity_HandoffByGoroutine(t *testing.T) {
	o := start(t, &behavior{workers: 1, limit: 1, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	ran := make(chan struct{})
	errc := make(chan error, 2)
	submit(t, o, "a", func(ctx context.Context) {
		go func() { errc <- p.Handoff(ctx, "a", func(context.Context) {}) }()
		errc <- p.Handoff(context.Background(), "a", func(context.Context) { close(ran) })
	})
	errs := []error{<-errc, <-errc}
	require.Contains(t, errs, nil)
	require.Contains(t, errs, smartpool.ErrNotInTask)
	waitFor(t, ran, "the handed-off task")
}

// A task of one pool that submits to another pool at that pool's in-flight
// limit waits for a unit without holding its worker: the unit frees only
// once a task queued behind it, on its own one-worker pool, has run.
func TestIdentity_WithContextToAnotherPoolYields(t *testing.T) {
	caller := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	full := start(t, &behavior{workers: 1, limit: 1, levels: [][]ch{{fifo("a")}}})
	release, started := make(chan struct{}), make(chan struct{})
	submit(t, full, "a", func(context.Context) { close(started); <-release }) // holds full's only unit
	waitFor(t, started, "the task holding the unit")
	errc := make(chan error, 1)
	submit(t, caller, "a", func(context.Context) {
		errc <- full.Pool().Submit("a", func(context.Context) {}, smartpool.WithContext(context.Background()))
	})
	submit(t, caller, "a", func(context.Context) { close(release) })
	select {
	case err := <-errc:
		require.NoError(t, err)
	case <-time.After(long):
		t.Fatal("A WithContext submit to a full pool held the calling task's only worker")
	}
}

// Close called from a callback the pool waits for (OnEnd on a worker or on
// the goroutine that cancelled the task, OnEnd of a task Close itself drops,
// the panic handler) starts the close and returns ErrCloseFromTask, as from
// a task, instead of waiting for itself; the pool then closes.
func TestIdentity_CloseFromCallback(t *testing.T) {
	for _, c := range []struct {
		name string
		// end makes a task of channel "a" end with o, after the pool's only
		// worker was held by a task of "hold" that release ends.
		end     smartpool.Outcome
		panics  bool // the task panics: the panic handler closes
		release bool // release the worker before the task's end
	}{
		{"OnEnd after a run", smartpool.Ran, false, true},
		{"OnEnd of a cancelled task", smartpool.Cancelled, false, false},
		{"OnEnd of a task Close drops", smartpool.DroppedOnClose, false, false},
		{"panic handler", smartpool.Panicked, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			errc := make(chan error, 1)
			var o *smartpool.OwnedPool[string]
			closeFrom := func() {
				_, err := o.Close(context.Background())
				errc <- err
			}
			onEnd := func(_ smartpool.Task, got smartpool.Outcome) {
				if got == c.end && !c.panics {
					closeFrom()
				}
			}
			b := &behavior{workers: 1, levels: [][]ch{{fifo("hold")}, {{key: "a", c: channels.NewFIFO(), onEnd: onEnd}}}}
			if c.panics {
				b.onPanic = func(string, *smartpool.PanicError) { closeFrom() }
			}
			o = start(t, b)
			g := newGate()
			submit(t, o, "hold", g.task("hold"))
			g.waitStarted(t, 1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			require.NoError(t, o.Pool().Submit("a", func(context.Context) {
				if c.panics {
					panic("boom")
				}
			}, smartpool.WithContext(ctx)))
			switch c.end {
			case smartpool.Cancelled:
				cancel()
			case smartpool.DroppedOnClose:
				go func() { _, _ = o.Close(context.Background()) }()
			}
			if c.release {
				close(g.release)
			}
			select {
			case err := <-errc:
				require.ErrorIs(t, err, smartpool.ErrCloseFromTask)
			case <-time.After(long):
				t.Fatal("Close from a callback waited for itself")
			}
			if !c.release {
				close(g.release)
			}
			waitFor(t, o.Done(), "the close the callback started")
		})
	}
}

// On a one-worker pool, OnEnd after a run, or the panic handler, waits for
// an event that only a task queued behind produces: the wait gives the
// worker back, as a task's does, or the pool deadlocks.
func TestIdentity_WaitsInCallbacksYield(t *testing.T) {
	for _, k := range waitKinds {
		for _, panics := range []bool{false, true} {
			name := k.name + "/OnEnd"
			if panics {
				name = k.name + "/panic handler"
			}
			t.Run(name, func(t *testing.T) {
				var p *smartpool.Pool[string]
				event, done := make(chan struct{}), make(chan struct{})
				var err error
				var once sync.Once
				callback := func() {
					once.Do(func() {
						defer close(done)
						err = k.wait(context.Background(), p, event)
					})
				}
				onEnd := func(smartpool.Task, smartpool.Outcome) {
					if !panics {
						callback()
					}
				}
				b := &behavior{workers: 1, levels: [][]ch{{{key: "cb", c: channels.NewFIFO(), onEnd: onEnd}, fifo("a")}}}
				if panics {
					b.onPanic = func(string, *smartpool.PanicError) { callback() }
				}
				o := start(t, b)
				p = o.Pool()
				g := newGate()
				require.NoError(t, p.Submit("cb", func(context.Context) {
					g.started <- "cb"
					<-g.release
					if panics {
						panic("boom")
					}
				}))
				g.waitStarted(t, 1)
				if k.name != "Future.Wait" && k.name != "Group.Wait" {
					submit(t, o, "a", func(context.Context) { close(event) })
				}
				close(g.release)
				waitFor(t, done, "the callback's wait (a wait that holds the only worker deadlocks)")
				require.NoError(t, err)
			})
		}
	}
}

// A callback whose wait gave its worker back still holds up Close until it
// returns, and a Close from it after the wait returns ErrCloseFromTask.
func TestIdentity_CloseWaitsForCallbackThatYielded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var o *smartpool.OwnedPool[string]
		leave, closeErr := make(chan struct{}), make(chan error, 1)
		onEnd := func(smartpool.Task, smartpool.Outcome) {
			smartpool.Yield(context.Background(), func() { <-leave })
			_, err := o.Close(context.Background())
			closeErr <- err
		}
		o = start(t, &behavior{workers: 1, levels: [][]ch{{{key: "cb", c: channels.NewFIFO(), onEnd: onEnd}}}})
		require.NoError(t, o.Pool().Submit("cb", func(context.Context) {}))
		synctest.Wait() // the task ran; its OnEnd waits, its worker given back and parked
		closed := make(chan *smartpool.Report[string], 1)
		go func() { closed <- closeWithin(t, o, long) }()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while OnEnd was waiting")
		default:
		}
		close(leave)
		require.ErrorIs(t, <-closeErr, smartpool.ErrCloseFromTask)
		r := <-closed
		require.Equal(t, uint64(1), r.Total().Ran)
	})
}
