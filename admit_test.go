package smartpool_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/source"
	"github.com/stretchr/testify/require"
)

// Submit is refused with ErrFull at the limit; SetLimit raises it at once
// and lowering it revokes nothing; every end gives the unit back.
func TestLimit_SubmitAndSetLimit(t *testing.T) {
	o := start(t, &behavior{workers: 8, limit: 3, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	g := newGate()
	for range 3 {
		submit(t, o, "a", g.task("a"))
	}
	require.ErrorIs(t, p.Submit("a", func(context.Context) {}), smartpool.ErrFull)
	st := p.Stats()
	require.Equal(t, 3, st.Limit)
	require.Equal(t, 3, st.Admitted)

	require.NoError(t, p.SetLimit(5))
	submit(t, o, "a", g.task("a"))
	submit(t, o, "a", g.task("a"))
	require.ErrorIs(t, p.Submit("a", func(context.Context) {}), smartpool.ErrFull)
	g.waitStarted(t, 5)

	require.NoError(t, p.SetLimit(1)) // five admitted tasks keep running
	require.Equal(t, 5, p.Stats().Admitted)
	close(g.release)
	eventually(t, func() bool { return p.Stats().Admitted == 0 })
	submit(t, o, "a", func(context.Context) {})
	eventually(t, func() bool { return p.Stats().Admitted == 0 })

	require.ErrorIs(t, p.SetLimit(-1), smartpool.ErrBadLimit) // 0 stops admission: pause_test.go
	unlimited := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	require.ErrorIs(t, unlimited.Pool().SetLimit(3), smartpool.ErrConfig)
	require.Zero(t, unlimited.Pool().Stats().Limit)

	_, err := smartpool.New[string](&behavior{limit: -1, levels: [][]ch{{fifo("a")}}})
	require.ErrorIs(t, err, smartpool.ErrConfig)
	require.ErrorIs(t, err, smartpool.ErrBadLimit)
}

// A WithContext submit waits for a unit, gives up with ctx, and is released with
// ErrClosed when Close starts.
func TestLimit_WithContextWaits(t *testing.T) {
	o := start(t, &behavior{workers: 2, limit: 1, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	g := newGate()
	submit(t, o, "a", g.task("first"))
	g.waitStarted(t, 1)

	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	require.ErrorIs(t, p.Submit("a", smartpool.Func(func(context.Context) {}), smartpool.WithContext(ctx)), context.DeadlineExceeded)

	done := make(chan error, 1)
	go func() {
		done <- p.Submit("a", smartpool.Func(g.task("second")), smartpool.WithContext(context.Background()))
	}()
	eventually(t, func() bool { return p.Stats().Waiting == 1 })
	g.release <- struct{}{} // the first ends: the waiter gets its unit
	require.NoError(t, <-done)
	g.waitStarted(t, 1)
	require.Equal(t, 1, p.Stats().Admitted)

	// A submitter waiting when Close starts gets ErrClosed.
	go func() {
		done <- p.Submit("a", smartpool.Func(func(context.Context) {}), smartpool.WithContext(context.Background()))
	}()
	eventually(t, func() bool { return p.Stats().Waiting == 1 })
	closed := make(chan *smartpool.Report[string], 1)
	go func() { closed <- closeWithin(t, o, long) }()
	require.ErrorIs(t, <-done, smartpool.ErrClosed)
	g.release <- struct{}{}
	r := <-closed
	require.Zero(t, r.Admitted)
	require.Equal(t, uint64(2), r.Total().Ran)
}

// A yielded task keeps its unit while it waits and while it re-enters.
func TestLimit_YieldKeepsUnit(t *testing.T) {
	o := start(t, &behavior{workers: 1, limit: 2, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	wake := make(chan struct{})
	var waiting sync.WaitGroup
	for range 2 {
		waiting.Add(1)
		submit(t, o, "a", func(ctx context.Context) {
			smartpool.Yield(ctx, func() { waiting.Done(); <-wake })
		})
	}
	waiting.Wait() // both suspended, no worker held
	require.ErrorIs(t, p.Submit("a", func(context.Context) {}), smartpool.ErrFull)
	require.Equal(t, 2, p.Stats().Admitted)
	close(wake)
	eventually(t, func() bool { return p.Stats().Admitted == 0 })
}

// The pipeline of Paul Khuong's critique of generic pools: A tasks wait on
// I/O, then hand off to B, which waits too. With K units and any number of
// workers >= 1 the pool never deadlocks (every A finishes through its B) and
// never holds more than K units.
func TestLimit_PipelineHandoffNeverDeadlocks(t *testing.T) {
	const k = 4
	n := scale(2000)
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) {
			b := &behavior{workers: workers, limit: k, levels: [][]ch{{fifo("b")}, {fifo("a")}}}
			o := start(t, b)
			p := o.Pool()
			var over atomic.Int32 // samples above the limit
			check := func() {
				if p.Stats().Admitted > k {
					over.Add(1)
				}
			}
			var finished atomic.Int32
			io := func(ctx context.Context) { smartpool.Yield(ctx, check) } // the "I/O": no worker held
			taskB := smartpool.Func(func(ctx context.Context) {
				io(ctx)
				check()
				finished.Add(1)
			})
			taskA := smartpool.Func(func(ctx context.Context) {
				io(ctx)
				if err := p.Handoff(ctx, "b", taskB); err != nil {
					t.Errorf("Handoff: %v", err)
				}
			})
			for range n {
				require.NoError(t, p.Submit("a", taskA, smartpool.WithContext(t.Context())))
				check()
			}
			eventually(t, func() bool { return finished.Load() == int32(n) })
			r := closeWithin(t, o, long)
			require.Zero(t, over.Load(), "Admitted went above %d", k)
			require.Zero(t, r.Admitted)
			require.Equal(t, uint64(2*n), r.Total().Ran)
		})
	}
}

// Handoff outside a task is refused; a second Handoff from the same task,
// and one from a pool without a limit, admit like Submit.
func TestLimit_HandoffRules(t *testing.T) {
	o := start(t, &behavior{workers: 2, limit: 2, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	nop := smartpool.Func(func(context.Context) {})
	require.ErrorIs(t, p.Handoff(context.Background(), "a", nop), smartpool.ErrNotInTask)

	g := newGate()
	submit(t, o, "a", g.task("holder")) // holds the second unit
	g.waitStarted(t, 1)
	errs := make(chan error, 4)
	submit(t, o, "a", func(ctx context.Context) {
		errs <- p.Handoff(ctx, "a", smartpool.Func(g.task("heir"))) // takes this task's unit
		errs <- p.Handoff(ctx, "a", nop)                            // needs a free one: none
		errs <- p.Handoff(ctx, "nope", nop)
	})
	require.NoError(t, <-errs)
	require.ErrorIs(t, <-errs, smartpool.ErrFull)
	require.ErrorIs(t, <-errs, smartpool.ErrUnknownKey)
	g.waitStarted(t, 1)
	require.Equal(t, 2, p.Stats().Admitted) // holder and heir
	close(g.release)
	eventually(t, func() bool { return p.Stats().Admitted == 0 })

	other := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
	done := make(chan error, 1)
	submit(t, other, "a", func(ctx context.Context) {
		done <- p.Handoff(ctx, "a", nop) // a task of another pool
	})
	require.ErrorIs(t, <-done, smartpool.ErrNotInTask)
}

// A task whose submitter's context ends while it is queued never runs: it is
// counted as cancelled and its unit comes back at once, before the channel
// reaches it. One dropped at Close is not counted twice, and OnEnd gets the
// task that was submitted, once, as dropped on close.
func TestCancel_QueuedTaskSkipped(t *testing.T) {
	var onEnd endLog
	b := &behavior{workers: 1, limit: 10, levels: [][]ch{{fifo("hold")}, {
		{key: "drop", c: channels.NewFIFO(), onEnd: onEnd.fn},
	}}}
	o := start(t, b)
	p := o.Pool()
	g := newGate()
	submit(t, o, "hold", g.task("hold"))
	g.waitStarted(t, 1)

	var ran atomic.Int32
	run := smartpool.Func(func(context.Context) { ran.Add(1) })
	ctx, cancel := context.WithCancel(context.Background())
	for range 3 {
		require.NoError(t, p.Submit("hold", run, smartpool.WithContext(ctx)))
	}
	kept := &countTask{}
	require.NoError(t, p.SubmitTask("hold", kept, smartpool.WithContext(context.Background())))
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	toDrop := &countTask{}
	require.NoError(t, p.SubmitTask("drop", toDrop, smartpool.WithContext(ctx2)))
	require.Equal(t, 6, p.Stats().Admitted)

	cancel()
	eventually(t, func() bool { return p.Stats().Admitted == 3 }) // units back while still queued
	st, _ := p.Stats().Channel("hold")
	require.Equal(t, uint64(3), st.Cancelled)
	require.ErrorIs(t, p.Submit("hold", run, smartpool.WithContext(ctx)), context.Canceled)

	closed := make(chan *smartpool.Report[string], 1)
	go func() { closed <- closeWithin(t, o, long) }() // drops "drop" while the worker is held
	eventually(t, func() bool { return p.State() != smartpool.Running })
	close(g.release)
	r := <-closed
	cancel2() // after the drop: changes nothing
	require.EqualValues(t, 1, kept.n.Load())
	require.Zero(t, ran.Load())
	h, _ := r.Channel("hold")
	require.Equal(t, uint64(3), h.Cancelled)
	require.Equal(t, uint64(2), h.Ran)
	d, _ := r.Channel("drop")
	require.Equal(t, uint64(1), d.Dropped)
	require.Zero(t, d.Cancelled)
	require.Equal(t, []taskEnd{{toDrop, smartpool.DroppedOnClose}}, onEnd.all())
	require.Equal(t, uint64(6), r.Total().Finished())
	require.Zero(t, r.Admitted)
}

type countTask struct{ n atomic.Int32 }

func (c *countTask) Run(context.Context) { c.n.Add(1) }

// Every channel's own submit methods take a unit of the limit, and every way
// a task leaves the pool gives it back: after a mixed workload the count is
// zero. Overflow and late drops inside channels release their units too.
func TestLimit_ChannelsAdmitAndRelease(t *testing.T) {
	fifoC, prio, dl := channels.NewFIFO(), channels.NewPriority(), channels.NewDeadline(channels.DropLate())
	bnd := channels.NewBounded(2, channels.DropOldest())
	multi := channels.NewMulti(2, channels.NewFIFO)
	b := &behavior{workers: 2, limit: 6, levels: [][]ch{{fifo("hold")}, {
		{key: "fifo", c: fifoC, coc: true}, {key: "prio", c: prio, coc: true},
		{key: "dl", c: dl, coc: true}, {key: "bnd", c: bnd, coc: true}, {key: "multi", c: multi, coc: true},
	}}}
	o := start(t, b)
	p := o.Pool()
	g := newGate()
	submit(t, o, "hold", g.task("hold"))
	submit(t, o, "hold", g.task("hold"))
	g.waitStarted(t, 2) // both workers held: nothing below runs

	nop := func(context.Context) {}
	require.NoError(t, fifoC.Submit(nop))
	require.NoError(t, prio.Submit(1, nop))
	require.NoError(t, dl.Submit(time.Now().Add(-time.Hour), nop)) // late: DropLate drops it
	require.NoError(t, multi.Submit(nop))
	require.Equal(t, 6, p.Stats().Admitted)
	for _, err := range []error{fifoC.Submit(nop), prio.Submit(1, nop), dl.Submit(time.Now(), nop), multi.Submit(nop), bnd.Submit(nop), fifoC.SubmitBatch(nop)} {
		require.ErrorIs(t, err, smartpool.ErrFull)
	}
	// Bounded.Submit waits for a unit.
	done := make(chan error, 1)
	go func() { done <- bnd.Submit(nop, smartpool.WithContext(context.Background())) }()
	eventually(t, func() bool { return p.Stats().Waiting == 1 })
	g.release <- struct{}{}
	require.NoError(t, <-done)
	g.release <- struct{}{}
	eventually(t, func() bool { return p.Stats().Admitted == 0 })
	// The late task's unit is released by Bits.Discard, and the Deadline
	// counts it after Discard returns: wait for the count.
	eventually(t, func() bool { return dl.Stats().DroppedLate == 1 })

	// DropOldest: a displaced task gives its unit back.
	submit(t, o, "hold", g.task("hold"))
	submit(t, o, "hold", g.task("hold"))
	g.waitStarted(t, 2)
	for range 3 {
		require.NoError(t, bnd.Submit(nop))
	}
	require.Equal(t, uint64(1), bnd.Stats().Dropped)
	require.Equal(t, 4, p.Stats().Admitted) // 2 holders + 2 queued
	close(g.release)
	r := closeWithin(t, o, long)
	require.Zero(t, r.Admitted)
}

// CallerRuns runs the task outside the pool: its unit is not kept.
func TestLimit_CallerRunsRefunds(t *testing.T) {
	bnd := channels.NewBounded(1, channels.CallerRuns())
	o := start(t, &behavior{workers: 1, limit: 5, levels: [][]ch{{fifo("hold")}, {{key: "bnd", c: bnd, coc: true}}}})
	p := o.Pool()
	g := newGate()
	submit(t, o, "hold", g.task("hold"))
	g.waitStarted(t, 1)
	var here atomic.Int32
	for range 3 {
		require.NoError(t, p.Submit("bnd", func(context.Context) { here.Add(1) }))
	}
	require.EqualValues(t, 2, here.Load()) // ran on this goroutine
	require.Equal(t, 2, p.Stats().Admitted)
	close(g.release)
	eventually(t, func() bool { return p.Stats().Admitted == 0 })
}

// An Every timer whose firing finds the limit reached skips that tick and
// carries on.
func TestLimit_EverySkipsTicksWhenFull(t *testing.T) {
	o := start(t, &behavior{workers: 1, limit: 1, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	g := newGate()
	submit(t, o, "a", g.task("hold"))
	g.waitStarted(t, 1)
	ticks := make(chan struct{}, 1)
	tm, err := p.Every(time.Millisecond, smartpool.Skip, "a", func(context.Context) {
		select {
		case ticks <- struct{}{}:
		default:
		}
	})
	require.NoError(t, err)
	defer tm.Stop()
	eventually(t, func() bool { return tm.Skipped() >= 2 })
	close(g.release) // refused ticks did not stop the timer
	select {
	case <-ticks:
	case <-time.After(long):
		t.Fatal("no tick after the limit freed")
	}
}

// Cancellation and drops see through a channel that wraps its tasks
// (channels.Keyed): a cancelled task does not run and is counted once, and
// both reach OnEnd once, as they were submitted, with their outcomes.
func TestCancel_ThroughWrappingChannel(t *testing.T) {
	k, err := channels.NewKeyed[string](1)
	require.NoError(t, err)
	var onEnd endLog
	b := &behavior{workers: 1, limit: 10, levels: [][]ch{{fifo("hold")}, {
		{key: "keyed", c: k, onEnd: onEnd.fn},
	}}}
	o := start(t, b)
	p := o.Pool()
	g := newGate()
	submit(t, o, "hold", g.task("hold"))
	g.waitStarted(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int32
	require.NoError(t, p.Submit("keyed", smartpool.Func(func(context.Context) { ran.Add(1) }), smartpool.WithContext(ctx)))
	cancel()
	// The cancellation runs on the context's AfterFunc goroutine: its unit
	// is released and counted first, its OnEnd comes after. Wait for both.
	eventually(t, func() bool { return p.Stats().Admitted == 1 && len(onEnd.all()) == 1 })
	g.release <- struct{}{}
	eventually(t, func() bool { return k.Len() == 0 })
	submit(t, o, "hold", g.task("hold"))
	g.waitStarted(t, 1)
	kept := &countTask{}
	require.NoError(t, p.SubmitTask("keyed", kept))

	closed := make(chan *smartpool.Report[string], 1)
	go func() { closed <- closeWithin(t, o, long) }()
	eventually(t, func() bool { return p.State() != smartpool.Running })
	close(g.release)
	r := <-closed
	require.Zero(t, ran.Load())
	st, _ := r.Channel("keyed")
	require.Equal(t, uint64(1), st.Cancelled)
	require.Zero(t, st.Ran)
	require.Equal(t, uint64(1), st.Dropped)
	ends := onEnd.all()
	require.Len(t, ends, 2)
	require.IsType(t, smartpool.Func(nil), ends[0].t, "the cancelled task as submitted")
	require.Equal(t, smartpool.Cancelled, ends[0].o)
	require.Equal(t, taskEnd{kept, smartpool.DroppedOnClose}, ends[1])
	require.Zero(t, r.Admitted)
}

// A task whose submitter cancels it while it is queued does not run even if
// a worker reaches it before the context's AfterFunc goroutine is scheduled
// (found by FuzzPoolOps: cancelled_queued_task_runs).
func TestCancel_BeforeAfterFuncRuns(t *testing.T) {
	for range scale(400) {
		o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("a")}}})
		p := o.Pool()
		g := newGate()
		submit(t, o, "a", g.task("hold"))
		g.waitStarted(t, 1)
		ctx, cancel := context.WithCancel(context.Background())
		var ran atomic.Int32
		require.NoError(t, p.Submit("a", smartpool.Func(func(context.Context) { ran.Add(1) }), smartpool.WithContext(ctx)))
		cancel()
		close(g.release)
		r := closeWithin(t, o, long)
		require.Zero(t, ran.Load())
		st, _ := r.Channel("a")
		require.Equal(t, uint64(1), st.Cancelled)
		require.Equal(t, uint64(1), st.Ran)
	}
}

// Every submitter waiting for a unit when Close starts gets ErrClosed, even
// when a unit frees at the same moment and one of them wins it (found by
// FuzzPoolOps: admitwait_lost_wakeup).
func TestLimit_CloseReleasesEveryWaiter(t *testing.T) {
	for range scale(400) {
		o, err := smartpool.New[string](&behavior{workers: 2, limit: 1, levels: [][]ch{{fifo("a")}}})
		require.NoError(t, err)
		p := o.Pool()
		g := newGate()
		submit(t, o, "a", g.task("hold"))
		g.waitStarted(t, 1)
		res := make(chan error, 3)
		for range 3 {
			go func() {
				res <- p.Submit("a", smartpool.Func(func(context.Context) {}), smartpool.WithContext(t.Context()))
			}()
		}
		eventually(t, func() bool { return p.Stats().Waiting == 3 })
		closed := make(chan *smartpool.Report[string], 1)
		go func() { closed <- closeWithin(t, o, long) }()
		close(g.release) // frees the unit while Close starts
		<-closed
		for range 3 {
			select {
			case err := <-res:
				if err != nil {
					require.ErrorIs(t, err, smartpool.ErrClosed)
				}
			case <-time.After(long):
				t.Fatal("a WithContext submit is still waiting after Close returned")
			}
		}
	}
}

// A context cancelled while a WithContext submit registers its AfterFunc is handled
// like any other cancellation (the AfterFunc may run at once; -race checks
// that it touches nothing the submit is still writing).
func TestCancel_WhileSubmitting(t *testing.T) {
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("hold")}, {fifo("a")}}})
	p := o.Pool()
	g := newGate()
	submit(t, o, "hold", g.task("hold"))
	g.waitStarted(t, 1)
	n := scale(2000)
	for range n {
		ctx, cancel := context.WithCancel(context.Background())
		go cancel()
		if err := p.Submit("a", smartpool.Func(func(context.Context) {}), smartpool.WithContext(ctx)); err != nil {
			require.ErrorIs(t, err, context.Canceled)
		}
	}
	close(g.release)
	r := closeWithin(t, o, long)
	st, _ := r.Channel("a")
	require.Equal(t, st.Finished(), st.Ran+st.Cancelled)
	require.LessOrEqual(t, int(st.Finished()), n)
}

// slowPush is a FIFO whose Push waits for its test to let it go and then
// fails with err (or queues the task, if err is nil).
type slowPush struct {
	source.Plug
	source.Source    // the FIFO's, with Push wrapped
	fifo             *channels.FIFO
	entered, proceed chan struct{}
	err              error
}

func newSlowPush() *slowPush {
	c := &slowPush{fifo: channels.NewFIFO(), entered: make(chan struct{}), proceed: make(chan struct{})}
	c.Source = source.SourceOf(c.fifo)
	c.Plug = source.NewPlug(c)
	return c
}

func (c *slowPush) Len() int { return c.fifo.Len() }

func (c *slowPush) Push(t smartpool.Task, o smartpool.Order) error {
	c.entered <- struct{}{}
	<-c.proceed
	if c.err != nil {
		return c.err
	}
	return c.Source.Push(t, o)
}

// A WithContext submit whose context ends while the channel's Push is under way
// is cancelled only if Push queued the task: a refused task is the submit's
// error, never also a cancellation (found by FuzzPoolOps: 55de1567). Both
// ways the unit comes back and the task does not run.
func TestCancel_DuringPush(t *testing.T) {
	for _, refused := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			c := newSlowPush()
			if refused {
				c.err = smartpool.ErrClosed
			}
			o, err := smartpool.New[string](&behavior{workers: 1, limit: 4, levels: [][]ch{{fifo("hold")}, {{key: "slow", c: c, coc: true}}}})
			require.NoError(t, err)
			p := o.Pool()
			g := newGate()
			submit(t, o, "hold", g.task("hold")) // the worker stays away from "slow"
			g.waitStarted(t, 1)
			ctx, cancel := context.WithCancel(context.Background())
			var ran atomic.Int32
			res := make(chan error, 1)
			go func() {
				res <- p.Submit("slow", smartpool.Func(func(context.Context) { ran.Add(1) }), smartpool.WithContext(ctx))
			}()
			<-c.entered
			cancel()
			synctest.Wait() // the context's AfterFunc has run
			close(c.proceed)
			err = <-res
			want := uint64(1)
			if refused {
				require.ErrorIs(t, err, smartpool.ErrClosed)
				want = 0
			} else {
				require.NoError(t, err)
			}
			synctest.Wait()
			require.Equal(t, 1, p.Stats().Admitted, "the gate's unit only")
			close(g.release)
			r := closeWithin(t, o, long)
			st, _ := r.Channel("slow")
			require.Equal(t, want, st.Cancelled, "refused %v", refused)
			require.Zero(t, st.Ran)
			require.Zero(t, ran.Load())
			require.Zero(t, r.Admitted)
		})
	}
}

// A WithContext task whose context never ends always runs and is never
// counted as cancelled, however its submit and the worker that takes it
// interleave. FuzzPoolOps found one interleaving that broke this (input
// 452d56aa: the claim tried "queued" and then "pushing", and a submit that
// moved the task from one to the other between the two made Run count it
// cancelled); that window is two instructions wide, so this test pins the
// property rather than reproducing the window. It does catch the wider one:
// with Run unable to claim a task its submit has not yet marked queued, it
// fails every time.
func TestCancel_LiveContextAlwaysRuns(t *testing.T) {
	o := start(t, &behavior{workers: 2, levels: [][]ch{{fifo("a")}}})
	p := o.Pool()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ran atomic.Int64
	n := scale(20000)
	for range n {
		require.NoError(t, p.Submit("a", smartpool.Func(func(context.Context) { ran.Add(1) }), smartpool.WithContext(ctx)))
	}
	r := closeWithin(t, o, long)
	st, _ := r.Channel("a")
	require.Zero(t, st.Cancelled)
	require.EqualValues(t, n, ran.Load())
}

// attachFails is a channel whose Attach fails, so that New fails after
// attaching the channels before it.
type attachFails struct{ forgetful }

// plugAttachFails makes a a Channel whose Source is a, Attach and all.
func plugAttachFails(a *attachFails) *attachFails {
	a.Plug = source.NewPlug(a)
	return a
}

func (a *attachFails) Attach(source.Bits) error { return errBoom }

// Bits.AdmitWait keeps its promises without an in-flight limit too: it waits
// for the pool to start, refuses a pool whose New failed or whose Close
// started, and refuses a call from Attach. A channel's fetcher started in
// Attach must not queue work that no pool will run.
func TestLimit_AdmitWaitWithoutLimit(t *testing.T) {
	t.Run("New fails", func(t *testing.T) {
		admitted := make(chan error, 1)
		f := plugForgetful(&forgetful{onAttach: func(f *forgetful) {
			b := f.bits
			go func() { admitted <- b.AdmitWait(context.Background()) }()
		}})
		_, err := smartpool.New[string](&behavior{workers: 1, levels: [][]ch{{{key: "c", c: f, coc: true}, {key: "x", c: plugAttachFails(&attachFails{}), coc: true}}}})
		require.ErrorIs(t, err, errBoom)
		select {
		case err := <-admitted:
			require.ErrorIs(t, err, smartpool.ErrClosed, "AdmitWait for a pool whose New failed")
		case <-time.After(long):
			t.Fatalf("AdmitWait did not return within %v of a failed New", long)
		}
	})
	t.Run("waits for the start", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			admitted := make(chan error, 1)
			f := plugForgetful(&forgetful{onAttach: func(f *forgetful) {
				b := f.bits
				go func() { admitted <- b.AdmitWait(context.Background()) }()
				synctest.Wait() // the goroutine has run as far as it can before New returns
				select {
				case err := <-admitted:
					t.Errorf("AdmitWait returned %v before the pool started", err)
					admitted <- err
				default:
				}
			}})
			o, err := smartpool.New[string](&behavior{workers: 1, idle: -1, levels: [][]ch{{{key: "c", c: f, coc: true}}}})
			require.NoError(t, err)
			require.NoError(t, <-admitted)
			_, err = o.Close(context.Background())
			require.NoError(t, err)
			require.ErrorIs(t, f.bits.AdmitWait(context.Background()), smartpool.ErrClosed, "AdmitWait after Close")
		})
	})
	t.Run("from Attach", func(t *testing.T) {
		var err error
		f := plugForgetful(&forgetful{onAttach: func(f *forgetful) { err = f.bits.AdmitWait(context.Background()) }})
		o := start(t, &behavior{workers: 1, levels: [][]ch{{{key: "c", c: f, coc: true}}}})
		closeWithin(t, o, long)
		require.ErrorIs(t, err, smartpool.ErrConfig)
	})
}

// Close does not return while a cancelled task's OnEnd runs on the
// goroutine that cancelled it (the context's AfterFunc goroutine, a
// Handle's caller): a user who counts endings in OnEnd has them all once
// Close returned.
func TestCancel_CloseWaitsForOnEnd(t *testing.T) {
	for _, byHandle := range []bool{false, true} {
		t.Run(fmt.Sprintf("byHandle=%v", byHandle), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testCloseWaitsForOnEnd(t, byHandle) })
		})
	}
}

func testCloseWaitsForOnEnd(t *testing.T, byHandle bool) {
	inOnEnd, leave := make(chan struct{}), make(chan struct{})
	onEnd := func(_ smartpool.Task, o smartpool.Outcome) {
		if o == smartpool.Cancelled {
			close(inOnEnd)
			<-leave
		}
	}
	o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("hold")}, {{key: "a", c: channels.NewFIFO(), onEnd: onEnd}}}})
	p := o.Pool()
	g := newGate()
	submit(t, o, "hold", g.task("hold"))
	g.waitStarted(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := new(smartpool.Handle)
	require.NoError(t, p.Submit("a", func(context.Context) {}, smartpool.WithContext(ctx), smartpool.WithHandle(h)))
	if byHandle {
		go h.Cancel()
	} else {
		cancel()
	}
	<-inOnEnd
	release := sync.OnceFunc(func() { close(leave) })
	defer release() // before the pool's Close, should the test fail

	closed := make(chan *smartpool.Report[string], 1)
	go func() { closed <- closeWithin(t, o, long) }()
	close(g.release)
	synctest.Wait() // the worker ran the held task, met the cancelled one and exited
	select {
	case <-closed:
		t.Fatal("Close returned while a cancelled task's OnEnd was running")
	default:
	}
	release()
	st, _ := (<-closed).Channel("a")
	require.Equal(t, uint64(1), st.Cancelled)
}
