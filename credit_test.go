package smartpool_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/source"
	"github.com/stretchr/testify/require"
)

// forgetful is a custom one-queue FIFO whose own submit method forgets
// Bits.Admit, as a channel author easily does.
type forgetful struct {
	source.Plug // itself: a test channel is its own Source (plugForgetful)
	mu          sync.Mutex
	q           []smartpool.Task
	bits        source.Bits
	// beforeWake, if set, runs after a task is queued and the lock released,
	// before the pool is woken: a submitter descheduled between the two.
	beforeWake func()
	// onAttach, if set, runs at the end of Attach: a channel that starts
	// queueing (or a goroutine that does) while New has not finished.
	onAttach func(f *forgetful)
	// wakeUnderLock calls Bits.Wake before releasing the lock, the way
	// `defer mu.Unlock()` makes easy.
	wakeUnderLock bool
}

// plugForgetful makes f a Channel whose Source is f.
func plugForgetful(f *forgetful) *forgetful {
	f.Plug = source.NewPlug(f)
	return f
}

func (f *forgetful) Queues() int { return 1 }

func (f *forgetful) Attach(b source.Bits) error {
	f.mu.Lock()
	f.bits = b
	f.mu.Unlock()
	if f.onAttach != nil {
		f.onAttach(f)
	}
	return nil
}

// Add queues fn without taking a unit of the limit.
func (f *forgetful) Add(fn func(context.Context)) error {
	return src(f).Push(smartpool.Func(fn), smartpool.Order{})
}

func (f *forgetful) Push(t smartpool.Task, o smartpool.Order) error {
	if err := source.Unordered(o); err != nil {
		return err
	}
	f.mu.Lock()
	if f.bits.Closed() {
		f.mu.Unlock()
		return smartpool.ErrClosed
	}
	return f.queueLocked(t)
}

func (f *forgetful) Requeue(t smartpool.Task) error {
	f.mu.Lock()
	return f.queueLocked(t)
}

func (f *forgetful) queueLocked(t smartpool.Task) error {
	f.q = append(f.q, t)
	if len(f.q) == 1 {
		f.bits.Set(0)
	}
	b := f.bits
	if f.wakeUnderLock {
		b.Wake(1)
		f.mu.Unlock()
		return nil
	}
	f.mu.Unlock()
	if f.beforeWake != nil {
		f.beforeWake()
	}
	b.Wake(1)
	return nil
}

func (f *forgetful) Poll(int) smartpool.Task {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.q) == 0 {
		return nil
	}
	t := f.q[0]
	f.q = f.q[1:]
	if len(f.q) == 0 {
		f.bits.Clear(0)
	}
	return t
}

func (f *forgetful) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.q)
}

func (f *forgetful) Close(drop bool) []smartpool.Task {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !drop {
		return nil
	}
	out := f.q
	f.q = nil
	f.bits.Clear(0)
	return out
}

// A channel whose own submits forget Bits.Admit can neither drive Admitted
// negative nor let the pool admit past its limit: the pool charges a unit
// to each such task when a worker takes it.
func TestLimit_ChannelThatForgetsAdmit(t *testing.T) {
	const limit = 2
	f := plugForgetful(&forgetful{})
	o := start(t, &behavior{workers: 1, limit: limit, levels: [][]ch{{{key: "c", c: f, coc: true}}}})
	p := o.Pool()

	// Tasks queued without a unit end without taking anyone else's.
	var ran sync.WaitGroup
	for range 5 {
		ran.Add(1)
		require.NoError(t, f.Add(func(context.Context) { ran.Done() }))
	}
	ran.Wait()
	eventually(t, func() bool { return p.Stats().Admitted == 0 && f.Len() == 0 })

	// One of them running holds a unit like any task.
	g := newGate()
	require.NoError(t, f.Add(g.task("unadmitted")))
	g.waitStarted(t, 1)
	require.Equal(t, 1, p.Stats().Admitted)
	require.NoError(t, p.Submit("c", func(context.Context) {}))
	require.ErrorIs(t, p.Submit("c", func(context.Context) {}), smartpool.ErrFull, "the limit holds")
	close(g.release)
	eventually(t, func() bool { return p.Stats().Admitted == 0 })
	for range limit {
		require.NoError(t, p.Submit("c", func(context.Context) {}))
	}
	eventually(t, func() bool { return p.Stats().Admitted == 0 })
}

// Tasks queued without a unit and dropped at Close release nothing.
func TestLimit_ForgetfulChannelDrops(t *testing.T) {
	f := plugForgetful(&forgetful{})
	var onEnd endCounter
	o := start(t, &behavior{workers: 1, limit: 4, levels: [][]ch{{fifo("busy")}, {{key: "c", c: f, onEnd: onEnd.fn}}}})
	p := o.Pool()
	g := newGate()
	submit(t, o, "busy", g.task("blocker"))
	g.waitStarted(t, 1)
	for range 3 {
		require.NoError(t, f.Add(func(context.Context) { t.Error("a dropped task ran") }))
	}
	require.NoError(t, p.Submit("c", func(context.Context) { t.Error("a dropped task ran") }))
	require.Equal(t, 2, p.Stats().Admitted, "the blocker and the by-key task")
	closed := make(chan *smartpool.Report[string], 1)
	go func() { r, _ := o.Close(context.Background()); closed <- r }()
	eventually(t, func() bool { return p.State() != smartpool.Running })
	close(g.release) // Close dropped the queue already
	var r *smartpool.Report[string]
	select {
	case r = <-closed:
	case <-time.After(long):
		t.Fatal("Close did not return")
	}
	c, _ := r.Channel("c")
	require.Equal(t, uint64(4), c.Dropped)
	require.Equal(t, int32(4), onEnd.of(smartpool.DroppedOnClose))
	require.Equal(t, int32(4), onEnd.total(), "OnEnd once per task, each dropped on close")
	require.Zero(t, r.Admitted)
}
