package smartpool_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// One combination of the endings matrix (see TestEndings): its pool, its
// task, the handshakes that drive it to its ending, and what it recorded.

// mxProbe is a pre-allocated task, so that OnEnd and drop callbacks can be
// checked to receive the very task that was submitted.
type mxProbe struct{ fn func(context.Context) }

func (p *mxProbe) Run(ctx context.Context) { p.fn(ctx) }

// mxFiller is a filler task of the subject channel, which OnEnd tells from
// the task under test by its type.
type mxFiller struct{}

func (*mxFiller) Run(context.Context) {}

// mxEnd is one call of the subject channel's OnEnd for the task under test.
type mxEnd struct {
	t          smartpool.Task
	o          smartpool.Outcome
	saw        smartpool.ChannelStats[string] // the subject's Stats as the callback saw them
	futureOpen bool                           // the task's Future had not resolved yet
}

func (e mxEnd) String() string { return fmt.Sprintf("%T %v", e.t, e.o) }

// mxGate is a task that holds the pool's only worker until released, and
// runs requests on its own goroutine meanwhile (Handoff must be called by a
// task).
type mxGate struct {
	up      chan struct{}
	req     chan func(context.Context)
	release chan struct{}
	once    sync.Once
}

func (g *mxGate) open() { g.once.Do(func() { close(g.release) }) }

type mxCase struct {
	t       *testing.T
	e       mxEntry
	k       mxKind
	x       mxExit
	w       mxWait // the context the task's waits are given
	pause   bool   // pause the task's channel before Close (mxPause)
	o       *smartpool.OwnedPool[string]
	p       *smartpool.Pool[string]
	subject smartpool.Channel

	gates     []*mxGate
	g         *mxGate // the gate holding the worker now
	gateTasks int     // tasks the gate channel runs: gates and handed-off fillers
	fillers   int     // filler tasks of the subject channel, which all run

	ctx    context.Context // WithContext's
	cancel context.CancelFunc
	quit   chan struct{} // closed by cleanup: watchers give up

	// the task's own record
	runs, returned, defers, afterClose atomic.Int32
	yielded                            chan int
	wake1, wake2                       chan struct{}
	wakeOnce1, wakeOnce2               sync.Once
	deferSaw                           atomic.Pointer[smartpool.ChannelStats[string]]

	panics atomic.Int32 // calls of Config.PanicHandler

	// ChannelParams.OnEnd of the subject channel: the task's endings, and
	// the fillers'; of the gate's channel
	endMu      sync.Mutex
	ends       []mxEnd // guarded by endMu
	fillerEnds endCounter
	gateEnds   endCounter
	probe      smartpool.Task // the Task value submitted, if the entry took one

	// results
	enterErr      error
	enterReturned bool
	enterPanic    any
	fut           *smartpool.Future[int]
	futp          atomic.Pointer[smartpool.Future[int]] // fut, for OnEnd on a worker
	resolved      chan struct{}                         // closed when the Future or Group resolved
	resVal        int
	resErr        error
	resSaw        smartpool.ChannelStats[string] // subject stats when the result became observable
	timer         *smartpool.Timer

	closeDone chan struct{}
	report    *smartpool.Report[string]
	closeErr  error
	closed    bool
}

func newMxCase(t *testing.T, e mxEntry, k mxKind, x mxExit, w mxWait) *mxCase {
	m := &mxCase{t: t, e: e, k: k, x: x, w: w, quit: make(chan struct{}), yielded: make(chan int, 2),
		wake1: make(chan struct{}), wake2: make(chan struct{}), resolved: make(chan struct{})}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.subject = m.newSubject()
	b := &behavior{workers: 1, limit: mxLimit, onPanic: func(string, *smartpool.PanicError) { m.panics.Add(1) }, levels: [][]ch{
		{{key: "g", c: channels.NewFIFO(), coc: true, onEnd: m.gateEnds.fn}},
		{{key: "s", c: m.subject, onEnd: m.recordOnEnd}},
	}}
	o, err := smartpool.New[string](b)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	m.o, m.p = o, o.Pool()
	return m
}

func (m *mxCase) newSubject() smartpool.Channel {
	switch m.k {
	case kFIFO:
		return channels.NewFIFO()
	case kDeadline:
		return channels.NewDeadline()
	case kDropLate:
		return channels.NewDeadline(channels.DropLate())
	case kPriority:
		return channels.NewPriority()
	case kBounded:
		return channels.NewBounded(1)
	case kDropOldest:
		return channels.NewBounded(1, channels.DropOldest())
	case kCallerRuns:
		return channels.NewBounded(1, channels.CallerRuns())
	case kKeyed:
		kc, err := channels.NewKeyed[string](1)
		if err != nil {
			m.t.Fatalf("NewKeyed: %v", err)
		}
		return kc
	case kMulti:
		return channels.NewMulti(2, channels.NewFIFO)
	}
	panic("unreachable")
}

// recordOnEnd is the subject channel's OnEnd.
func (m *mxCase) recordOnEnd(task smartpool.Task, o smartpool.Outcome) {
	if _, ok := task.(*mxFiller); ok {
		m.fillerEnds.fn(task, o)
		return
	}
	end := mxEnd{t: task, o: o, saw: m.stats()}
	if f := m.futp.Load(); f != nil { // nil until Go returned it: then unchecked
		select {
		case <-f.Done():
		default:
			end.futureOpen = true
		}
	}
	m.endMu.Lock()
	m.ends = append(m.ends, end)
	m.endMu.Unlock()
}

// stats returns the subject channel's stats.
func (m *mxCase) stats() smartpool.ChannelStats[string] {
	s, _ := m.p.Stats().Channel("s")
	return s
}

// ---- the task

func (m *mxCase) body(ctx context.Context) {
	m.runs.Add(1)
	defer func() {
		s := m.stats()
		m.deferSaw.Store(&s)
		m.defers.Add(1)
	}()
	wctx := ctx
	if m.w == wBackground {
		wctx = context.Background() // the calling goroutine decides, not the context
	}
	if m.e == eYield {
		smartpool.Yield(wctx, func() { m.yielded <- 1; <-m.wake1 })
	}
	switch m.x {
	case xPanic, xCallerPanic:
		panic(errMxBoom)
	case xGoexit, xCallerGoexit:
		runtime.Goexit()
	case xCloseYielded:
		smartpool.Yield(wctx, func() { m.yielded <- 2; <-m.wake2 })
		m.afterClose.Add(1)
	}
	m.returned.Add(1)
}

func (m *mxCase) futureFn(ctx context.Context) (int, error) { m.body(ctx); return 42, errMxRan }
func (m *mxCase) groupFn(ctx context.Context) error         { m.body(ctx); return errMxRan }

func (m *mxCase) filler(context.Context) {}

// deadline is the deadline of a task submitted with one: past for DropLate.
func (m *mxCase) deadline() time.Time {
	if m.x == xDropLate {
		return time.Now().Add(-time.Second)
	}
	return time.Now().Add(time.Hour)
}

// ---- handshakes, all bounded

func (m *mxCase) await(c <-chan struct{}, what string) bool {
	m.t.Helper()
	select {
	case <-c:
		return true
	case <-time.After(long):
		m.t.Errorf("%s did not happen within %v", what, long)
		return false
	}
}

func (m *mxCase) awaitYield(n int) bool {
	m.t.Helper()
	select {
	case got := <-m.yielded:
		if got != n {
			m.t.Errorf("the task reached yield %d, want %d", got, n)
		}
		return true
	case <-time.After(long):
		m.t.Errorf("the task did not reach its Yield #%d within %v", n, long)
		return false
	}
}

// gate submits a gate task and waits until it holds the worker.
func (m *mxCase) gate() bool {
	g := &mxGate{up: make(chan struct{}), req: make(chan func(context.Context)), release: make(chan struct{})}
	m.gates = append(m.gates, g)
	m.g = g
	m.gateTasks++
	err := m.p.Submit("g", func(ctx context.Context) {
		close(g.up)
		for {
			select {
			case f := <-g.req:
				f(ctx)
			case <-g.release:
				return
			}
		}
	})
	if err != nil {
		m.t.Errorf("submitting the gate: %v", err)
		return false
	}
	return m.await(g.up, "the gate task starting")
}

// gateDo runs f on the gate task's goroutine, with its context, recovering a
// panic (a CallerRuns task run by the Handoff inside it).
func (m *mxCase) gateDo(f func(ctx context.Context)) bool {
	done := make(chan struct{})
	req := func(ctx context.Context) {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				m.enterPanic = r
			}
		}()
		f(ctx)
	}
	select {
	case m.g.req <- req:
	case <-time.After(long):
		m.t.Errorf("the gate task did not take a request within %v", long)
		return false
	}
	return m.await(done, "the gate task's request")
}

func (m *mxCase) settle() { synctest.Wait() }

// tick lets fake time move on while a task is queued, as it does in any pool.
func (m *mxCase) tick() { time.Sleep(time.Millisecond) }

func (m *mxCase) closeAsync() {
	m.closed = true
	m.closeDone = make(chan struct{})
	go func() {
		defer close(m.closeDone)
		ctx, cancel := context.WithTimeout(context.Background(), 2*long)
		defer cancel()
		m.report, m.closeErr = m.o.Close(ctx)
	}()
}

func (m *mxCase) awaitClose() bool {
	if !m.await(m.closeDone, "Close returning") {
		return false
	}
	if m.closeErr != nil {
		m.t.Errorf("Close: %v", m.closeErr)
		return false
	}
	return true
}

// ---- entering

// enter submits the task the entry's way; it runs on a goroutine of its own
// (a CallerRuns task may panic or call Goexit on it), except a Handoff,
// which the gate task makes.
func (m *mxCase) enter() {
	if m.e == eYield {
		m.enterYield()
		return
	}
	if m.e == eHandoff {
		var err error
		switch m.x {
		case xClosed: // from inside a wait: a task holding a worker may still hand off while Close drains
			m.gateDo(func(ctx context.Context) {
				smartpool.Yield(ctx, func() { err = m.p.Handoff(ctx, "s", m.body) })
			})
		case xFull: // the first Handoff passes the gate's unit on; a second needs a free one
			m.gateTasks++
			m.gateDo(func(ctx context.Context) {
				if err2 := m.p.Handoff(ctx, "g", m.filler); err2 != nil {
					m.t.Errorf("the first Handoff: %v", err2)
				}
				err = m.p.Handoff(ctx, "s", m.body)
			})
		default:
			m.gateDo(func(ctx context.Context) { err = m.p.Handoff(ctx, "s", m.body) })
		}
		m.enterErr, m.enterReturned = err, m.enterPanic == nil
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				m.enterPanic = r
			}
		}()
		m.enterErr = m.submit()
		m.enterReturned = true
	}()
	m.await(done, "the submit returning or ending")
	m.afterEnter()
}

func (m *mxCase) submit() error {
	s := m.subject
	switch m.e {
	case eChanSubmit:
		switch c := s.(type) {
		case *channels.FIFO:
			return c.Submit(m.body)
		case *channels.Deadline:
			return c.Submit(m.deadline(), m.body)
		case *channels.Priority:
			return c.Submit(5, m.body)
		case *channels.Bounded:
			return c.Submit(m.body, smartpool.WithContext(context.Background()))
		case *channels.Keyed[string]:
			return c.Submit("grp", m.body)
		case *channels.Multi[*channels.FIFO]:
			return c.Submit(m.body)
		}
	case eChanSubmitTask:
		switch c := s.(type) {
		case *channels.FIFO:
			return c.SubmitBatch(m.body)
		case *channels.Multi[*channels.FIFO]:
			return c.Next().Submit(m.body)
		}
		m.probe = &mxProbe{fn: m.body}
		return m.chanSubmitTask(m.probe)
	case eTrySubmit:
		return s.(*channels.Bounded).Submit(m.body)
	case ePoolSubmit:
		return m.p.Submit("s", m.body)
	case ePoolSubmitTask:
		m.probe = &mxProbe{fn: m.body}
		return m.p.SubmitTask("s", m.probe)
	case ePoolSubmitCtx:
		return m.p.Submit("s", m.body, smartpool.WithContext(m.ctx))
	case eGo:
		m.watchFuture(smartpool.Go(m.p, "s", m.futureFn))
		return nil
	case eFutureChan:
		task, f := smartpool.NewFuture(m.futureFn)
		m.probe = task
		m.watchFuture(f) // first: a CallerRuns Goexit ends this goroutine inside the submit
		return m.chanSubmitTask(task)
	case eFutureCtx:
		task, f := smartpool.NewFuture(m.futureFn)
		m.probe = task
		m.watchFuture(f)
		return m.p.SubmitTask("s", task, smartpool.WithContext(m.ctx))
	case eGroupGo:
		g := smartpool.NewGroup(context.Background(), m.p)
		// Deferred: a CallerRuns Goexit ends this goroutine inside Go.
		defer func() { go func() { m.resolve(0, g.Wait(m.quitCtx())) }() }()
		g.Go("s", m.groupFn)
		return nil
	case eScope:
		entered := make(chan struct{})
		go func() {
			err := smartpool.Scope(m.quitCtx(), m.p, func(g *smartpool.Group[string]) {
				defer close(entered)
				g.Go("s", m.groupFn)
			})
			m.resolve(0, err)
		}()
		select {
		case <-entered:
		case <-time.After(long):
			m.t.Errorf("Scope's body did not run within %v", long)
		}
		return nil
	case eAfter:
		tm, err := m.p.After(0, "s", m.body)
		m.timer = tm
		return err
	case eAt:
		tm, err := m.p.At(time.Now(), "s", m.body)
		m.timer = tm
		return err
	case eEvery:
		tm, err := m.p.Every(time.Second, smartpool.Skip, "s", m.body)
		m.timer = tm
		return err
	}
	panic("unreachable")
}

func (m *mxCase) chanSubmitTask(task smartpool.Task) error {
	switch c := m.subject.(type) {
	case *channels.Deadline:
		return c.SubmitTask(m.deadline(), task)
	case *channels.Priority:
		return c.SubmitTask(5, task)
	case *channels.Bounded:
		if m.e == eFutureChan {
			return c.SubmitTask(task)
		}
		return c.SubmitTask(task, smartpool.WithContext(context.Background()))
	case *channels.Keyed[string]:
		return c.SubmitTask("grp", task)
	}
	panic("unreachable")
}

// afterEnter lets a timer fire once.
func (m *mxCase) afterEnter() {
	if m.timer == nil {
		return
	}
	if m.e == eEvery {
		time.Sleep(time.Second + time.Second/2) // fake time: the first tick, not the second
	}
	m.settle()
	m.timer.Stop()
}

// enterYield submits the task by key and lets it run and yield; while it
// waits, a new gate takes the worker, so that when it wakes it re-enters
// through its followup channel and stays queued there behind the gate.
func (m *mxCase) enterYield() {
	if err := m.p.Submit("s", m.body); err != nil {
		m.t.Errorf("Pool.Submit of the yielding task: %v", err)
		return
	}
	m.tick()
	m.g.open()
	if !m.awaitYield(1) || !m.gate() {
		return
	}
	m.wakeOnce1.Do(func() { close(m.wake1) })
	m.settle()
	if q := m.stats().Queued; q != 1 {
		m.t.Errorf("the woken task is not queued to re-enter: Queued = %d", q)
	}
}

func (m *mxCase) quitCtx() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-m.quit; cancel() }()
	return ctx
}

func (m *mxCase) watchFuture(f *smartpool.Future[int]) {
	m.fut = f
	m.futp.Store(f)
	go func() {
		select {
		case <-f.Done():
			v, err := f.Wait(context.Background())
			m.resolve(v, err)
		case <-m.quit:
		}
	}()
}

// resolve records the Future's or Group's result, with the stats at that
// moment: a drop must be counted before anything can observe it.
func (m *mxCase) resolve(v int, err error) {
	select {
	case <-m.quit:
		return // cleanup's cancellation, not a result
	default:
	}
	m.resVal, m.resErr, m.resSaw = v, err, m.stats()
	close(m.resolved)
}

// ---- the scenario of each exit

func (m *mxCase) play() {
	t := m.t
	if !m.gate() {
		return
	}
	if s := m.stats(); !sameCounts(s, smartpool.ChannelStats[string]{Key: "s", Level: 1}) {
		t.Errorf("stats of the empty channel before the task entered: %+v", s)
	}
	switch m.x {
	case xRan, xPanic, xGoexit, xDropLate:
		m.enter()
		m.tick()
		m.g.open()
		m.settle()
	case xCloseQueued:
		m.enter()
		m.tick()
		m.pauseSubject()
		m.closeAsync()
		m.settle()
		m.g.open()
		m.awaitClose()
		m.settle()
	case xCloseYielded:
		m.enter()
		m.tick()
		m.g.open()
		if !m.awaitYield(2) {
			return
		}
		m.pauseSubject()
		m.closeAsync()
		if !m.awaitClose() {
			return
		}
		m.wakeOnce2.Do(func() { close(m.wake2) })
		m.settle()
	case xDropOldest:
		m.enter()
		m.settle()
		m.fillers++
		if err := m.subject.(*channels.Bounded).SubmitTask(&mxFiller{}); err != nil {
			t.Errorf("the displacing TrySubmit: %v", err)
		}
		m.settle()
		m.g.open()
		m.settle()
	case xCallerRan, xCallerPanic, xCallerGoexit:
		m.fillers++
		if err := m.subject.(*channels.Bounded).SubmitTask(&mxFiller{}); err != nil {
			t.Errorf("the TrySubmit that fills the channel: %v", err)
		}
		m.enter()
		m.settle()
		m.g.open()
		m.settle()
	case xCancelled:
		m.enter()
		m.tick()
		m.cancel()
		m.settle()
		if a := m.p.Stats().Admitted; a != 1 { // the gate's: the cancelled task's unit is back at once
			t.Errorf("Admitted %d after the queued task was cancelled, want 1 (the gate's)", a)
		}
		m.g.open()
		m.settle()
	case xFull:
		if err := m.p.SetLimit(1); err != nil { // the gate holds the only unit
			t.Errorf("SetLimit(1): %v", err)
		}
		m.enter()
		m.settle()
		if err := m.p.SetLimit(mxLimit); err != nil {
			t.Errorf("SetLimit(%d): %v", mxLimit, err)
		}
		m.g.open()
		m.settle()
	case xClosed:
		m.closeAsync()
		m.settle()
		m.enter()
		m.settle()
		m.g.open()
		m.awaitClose()
		m.settle()
	}
}

// pauseSubject pauses the task's channel if the case says so, and checks
// that Stats shows it.
func (m *mxCase) pauseSubject() {
	if !m.pause {
		return
	}
	if err := m.p.Pause("s"); err != nil {
		m.t.Errorf("Pause: %v", err)
	}
	if !m.stats().Paused {
		m.t.Errorf("Stats does not show the channel paused")
	}
}

// cleanup lets everything go and closes the pool, once; what is still
// blocked after it is reported by mxRun.
func (m *mxCase) cleanup() {
	select {
	case <-m.quit:
		return
	default:
	}
	for _, g := range m.gates {
		g.open()
	}
	m.wakeOnce1.Do(func() { close(m.wake1) })
	m.wakeOnce2.Do(func() { close(m.wake2) })
	m.cancel()
	m.settle()
	if !m.closed {
		m.closeAsync()
	}
	m.awaitClose()
	m.settle()
	close(m.quit)
	m.settle()
}
