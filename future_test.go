package smartpool_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/source"
	"github.com/stretchr/testify/require"
)

func TestFuture_Outcomes(t *testing.T) {
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	ctx := context.Background()

	v, err := goWait(ctx, p, "a", func(context.Context) (string, error) { return "ok", nil })
	require.NoError(t, err)
	require.Equal(t, "ok", v)

	_, err = goWait(ctx, p, "a", func(context.Context) (int, error) { return 0, errBoom })
	require.ErrorIs(t, err, errBoom)

	_, err = goWait(ctx, p, "a", func(context.Context) (int, error) { panic(errBoom) })
	var pe *smartpool.PanicError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, errBoom)

	_, err = goWait(ctx, p, "a", func(context.Context) (int, error) { runtime.Goexit(); return 0, nil })
	require.ErrorIs(t, err, smartpool.ErrGoexit)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	block := make(chan struct{})
	f := goF(smartpool.Go(p, "a", func(context.Context) (int, error) { <-block; return 7, nil }))
	_, err = f.Wait(cancelled)
	require.ErrorIs(t, err, context.Canceled)
	close(block)
	<-f.Done()
	v2, err := f.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, 7, v2)

	closeWithin(t, o, long)
}

// Go refuses at the call: a submit the pool refuses returns its error and
// no Future, at once, so a server can answer "busy" without waiting.
func TestFuture_GoRefusesAtTheCall(t *testing.T) {
	o := start(t, &behavior{workers: 1, limit: 1, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	ok := func(context.Context) (int, error) { return 1, nil }
	var held *smartpool.Future[int]
	gate := make(chan struct{})
	for _, c := range []struct {
		name string
		key  string
		fn   func(context.Context) (int, error)
		opts []smartpool.Option
		want error
	}{
		{"unknown key", "nope", ok, nil, smartpool.ErrUnknownKey},
		{"nil function", "a", nil, nil, smartpool.ErrNilTask},
		{"bad option", "a", ok, []smartpool.Option{smartpool.WithPriority(1)}, smartpool.ErrOption},
		{"at the limit", "a", ok, nil, smartpool.ErrFull},
	} {
		if c.want == smartpool.ErrFull { // take the pool's only unit first
			var err error
			held, err = smartpool.Go(p, "a", func(context.Context) (int, error) { <-gate; return 0, nil })
			require.NoError(t, err)
		}
		f, err := smartpool.Go(p, c.key, c.fn, c.opts...)
		require.ErrorIs(t, err, c.want, c.name)
		require.Nil(t, f, c.name)
	}
	close(gate)
	_, err := held.Wait(context.Background())
	require.NoError(t, err)
	closeWithin(t, o, long)
	f, err := smartpool.Go(p, "a", ok)
	require.ErrorIs(t, err, smartpool.ErrClosed)
	require.Nil(t, f)
}

// A future dropped by Close resolves with ErrDropped; so does one whose task
// yielded in a dropping channel and came back after Close.
func TestFuture_Dropped(t *testing.T) {
	d := channels.NewFIFO()
	o, err := smartpool.New[string](&behavior{workers: 1, levels: [][]ch{{fifo("pin")}, {{key: "d", c: d}}}})
	require.NoError(t, err)
	p := o.Pool()
	wake := make(chan struct{})
	suspended := make(chan struct{})
	yielded := goF(smartpool.Go(p, "d", func(ctx context.Context) (int, error) {
		smartpool.Yield(ctx, func() { close(suspended); <-wake })
		return 1, nil
	}))
	<-suspended
	g := newGate()
	submit(t, o, "pin", g.task("pin"))
	g.waitStarted(t, 1)
	queued := goF(smartpool.Go(p, "d", func(context.Context) (int, error) { return 2, nil }))
	task, viaChannel := smartpool.NewFuture(func(context.Context) (int, error) { return 3, nil })
	require.NoError(t, src(d).Push(task, smartpool.Order{}))
	go func() {
		eventually(t, func() bool { return p.State() >= smartpool.Closing })
		close(g.release)
	}()
	closeWithin(t, o, long)
	close(wake)
	for _, f := range []*smartpool.Future[int]{queued, viaChannel, yielded} {
		_, err := f.Wait(context.Background())
		require.ErrorIs(t, err, smartpool.ErrDropped)
	}
}

// push_future: results chained across two pools; the waiting task on pool
// one yields while pool two computes.
func TestFuture_ChainedAcrossPools(t *testing.T) {
	one := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	two := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("b")}}})
	sum := goF(smartpool.Go(one.Pool(), "a", func(ctx context.Context) (int, error) {
		total := 0
		for i := range 10 {
			v, err := goWait(ctx, two.Pool(), "b", func(context.Context) (int, error) { return i * i, nil })
			if err != nil {
				return 0, err
			}
			total += v
		}
		return total, nil
	}))
	v, err := sum.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, 285, v)
}

// Recv waits on a Go channel without a worker.
func TestRecv(t *testing.T) {
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	c := make(chan int)
	f := goF(smartpool.Go(o.Pool(), "a", func(ctx context.Context) (int, error) {
		v, ok, err := smartpool.Recv(ctx, c)
		if !ok {
			return 0, errors.New("closed")
		}
		return v, err
	}))
	submit(t, o, "a", func(context.Context) { c <- 42 }) // runs while the first task waits
	v, err := f.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, 42, v)
	close(c)
	_, ok, err := smartpool.Recv(context.Background(), c)
	require.False(t, ok)
	require.NoError(t, err)
}

func TestGroup(t *testing.T) {
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}, {fifo("b")}}})
	p := o.Pool()
	var ran atomic.Int32
	err := smartpool.Scope(context.Background(), p, func(g *smartpool.Group[string]) {
		for i := range 100 {
			g.Go([]string{"a", "b"}[i%2], func(context.Context) error { ran.Add(1); return nil })
		}
	})
	require.NoError(t, err)
	require.EqualValues(t, 100, ran.Load())

	err = smartpool.Scope(context.Background(), p, func(g *smartpool.Group[string]) {
		g.Go("a", func(context.Context) error { return errBoom })
		g.Go("a", func(context.Context) error { panic("later") })
	})
	require.ErrorIs(t, err, errBoom)

	err = smartpool.Scope(context.Background(), p, func(g *smartpool.Group[string]) {
		g.Go("a", func(context.Context) error { panic(errBoom) })
	})
	var pe *smartpool.PanicError
	require.ErrorAs(t, err, &pe)

	g := smartpool.NewGroup(context.Background(), p)
	g.Go("nope", func(context.Context) error { return nil })
	g.Go("a", nil)
	require.ErrorIs(t, g.Wait(context.Background()), smartpool.ErrUnknownKey)

	// Nested scopes from inside a task on a one-worker pool: the waits yield.
	err = smartpool.Scope(context.Background(), p, func(outer *smartpool.Group[string]) {
		outer.Go("a", func(ctx context.Context) error {
			return smartpool.Scope(ctx, p, func(inner *smartpool.Group[string]) {
				for range 10 {
					inner.Go("b", func(context.Context) error { ran.Add(1); return nil })
				}
			})
		})
	})
	require.NoError(t, err)
	require.EqualValues(t, 110, ran.Load())
}

// scoped_op (synctest): 1,000 scoped tasks each waiting on a timer, on two
// workers; the scope ends when the last timer has fired, with no worker
// blocked meanwhile.
func TestGroup_ScopedTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, err := smartpool.New[string](&behavior{workers: 2, levels: [][]ch{{fifo("a")}}})
		require.NoError(t, err)
		began := time.Now()
		err = smartpool.Scope(context.Background(), o.Pool(), func(g *smartpool.Group[string]) {
			for i := range 1000 {
				g.Go("a", func(ctx context.Context) error { return smartpool.Sleep(ctx, time.Duration(1+i%10)*time.Second) })
			}
		})
		require.NoError(t, err)
		require.Equal(t, 10*time.Second, time.Since(began))
		_, err = o.Close(context.Background())
		require.NoError(t, err)
	})
}

// timer_and_yield (synctest): 1,000 tasks started by After, each waiting
// 3 s and then on three ticks of a ticker one second apart; Close waits for
// all of them while no worker is blocked. (Pool schedules stop at Close:
// tasks wait on runtime timers through Sleep and Recv.)
func TestSchedule_TimerAndYield(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, err := smartpool.New[string](&behavior{workers: 2, levels: [][]ch{{fifo("a")}}})
		require.NoError(t, err)
		p := o.Pool()
		var done atomic.Int32
		for range 1000 {
			_, err := p.After(time.Second, "a", func(ctx context.Context) {
				_ = smartpool.Sleep(ctx, 3*time.Second)
				ticker := time.NewTicker(time.Second)
				defer ticker.Stop()
				for range 3 {
					if _, _, err := smartpool.Recv(ctx, ticker.C); err != nil {
						return
					}
				}
				done.Add(1)
			})
			require.NoError(t, err)
		}
		time.Sleep(time.Second) // fake time: let the After timers fire
		synctest.Wait()
		began := time.Now()
		_, err = o.Close(context.Background())
		require.NoError(t, err)
		require.EqualValues(t, 1000, done.Load())
		require.Equal(t, 6*time.Second, time.Since(began))
	})
}

// Schedules: At in the past fires at once; Every with Skip and CatchUp
// behave as documented when ticks are missed; Stop cancels; Close stops
// every timer; bad arguments are errors.
func TestSchedule_Policies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, err := smartpool.New[string](&behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
		require.NoError(t, err)
		p := o.Pool()
		var at atomic.Int32
		_, err = p.At(time.Now().Add(-time.Hour), "a", func(context.Context) { at.Add(1) })
		require.NoError(t, err)
		synctest.Wait()
		require.EqualValues(t, 1, at.Load())

		// On time, both policies fire once per interval; after Stop the
		// Skip timer fires no more while the CatchUp one carries on.
		var skip, catchUp atomic.Int32
		ts, err := p.Every(time.Second, smartpool.Skip, "a", func(context.Context) { skip.Add(1) })
		require.NoError(t, err)
		tc, err := p.Every(time.Second, smartpool.CatchUp, "a", func(context.Context) { catchUp.Add(1) })
		require.NoError(t, err)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		require.EqualValues(t, 10, skip.Load())
		require.EqualValues(t, 10, catchUp.Load())
		require.True(t, ts.Stop())
		require.False(t, ts.Stop())
		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.EqualValues(t, 10, skip.Load())
		require.EqualValues(t, 15, catchUp.Load())

		_, err = p.Every(0, smartpool.Skip, "a", func(context.Context) {})
		require.ErrorIs(t, err, smartpool.ErrBadSchedule)
		_, err = p.Every(time.Second, smartpool.Missed(9), "a", func(context.Context) {})
		require.ErrorIs(t, err, smartpool.ErrBadSchedule)
		_, err = p.After(time.Second, "nope", func(context.Context) {})
		require.ErrorIs(t, err, smartpool.ErrUnknownKey)
		_, err = p.After(time.Second, "a", nil)
		require.ErrorIs(t, err, smartpool.ErrNilTask)

		_, err = o.Close(context.Background())
		require.NoError(t, err)
		require.False(t, tc.Stop(), "Close stopped the timer")
		_, err = p.After(time.Second, "a", func(context.Context) {})
		require.ErrorIs(t, err, smartpool.ErrClosed)
	})
}

// slowFIFO is a FIFO whose first Push stalls for a while of (fake) time, so
// the schedule that submitted it falls behind.
type slowFIFO struct {
	source.Plug
	source.Source // the FIFO's, with Push wrapped
	fifo          *channels.FIFO
	stall         atomic.Int64 // nanoseconds the next Push stalls
}

func newSlowFIFO() *slowFIFO {
	s := &slowFIFO{fifo: channels.NewFIFO()}
	s.Source = source.SourceOf(s.fifo)
	s.Plug = source.NewPlug(s)
	return s
}

func (s *slowFIFO) Len() int { return s.fifo.Len() }

func (s *slowFIFO) Push(t smartpool.Task, o smartpool.Order) error {
	if d := s.stall.Swap(0); d > 0 {
		time.Sleep(time.Duration(d))
	}
	return s.Source.Push(t, o)
}

// Missed ticks: a firing held up for 3.5 intervals makes Skip fire once and
// rejoin the grid, and CatchUp fire once per missed tick back to back.
func TestSchedule_MissedTicks(t *testing.T) {
	for _, c := range []struct {
		missed smartpool.Missed
		want   int32 // firings by t = 10 s
	}{{smartpool.Skip, 7}, {smartpool.CatchUp, 10}} {
		synctest.Test(t, func(t *testing.T) {
			slow := newSlowFIFO()
			o, err := smartpool.New[string](&behavior{workers: 1, levels: [][]ch{{{key: "a", c: slow, coc: true}}}})
			require.NoError(t, err)
			var fired atomic.Int32
			slow.stall.Store(int64(3500 * time.Millisecond)) // the first firing, at 1 s, returns at 4.5 s
			tm, err := o.Pool().Every(time.Second, c.missed, "a", func(context.Context) { fired.Add(1) })
			require.NoError(t, err)
			time.Sleep(10*time.Second + time.Millisecond)
			synctest.Wait()
			require.Equal(t, c.want, fired.Load(), "policy %d", c.missed)
			tm.Stop()
			_, err = o.Close(context.Background())
			require.NoError(t, err)
		})
	}
}
