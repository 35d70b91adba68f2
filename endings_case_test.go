package smartpool_test

import (
	"context"
	"errors"
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
// the task under test by its type. A blocker (hold set) closes up when it
// starts and returns once hold is closed: it keeps the worker while the
// task waits in the worker's run buffer behind it.
type mxFiller struct{ up, hold chan struct{} }

func (f *mxFiller) Run(context.Context) {
	if f.hold != nil {
		close(f.up)
		<-f.hold
	}
}

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
	w       mxWait  // the context the task's waits are given
	pause   mxPause // pause the task's channel, or hold it by a rate, before Close
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
	obs    *mxObserver   // Config.Observe's records, in TestObservedEndings; nil otherwise

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

	// removal exits: RemoveChannel of the subject, and what holds the task
	// (running) or the blocker ahead of it (buffered) meanwhile
	rmDone         chan struct{} // closed when RemoveChannel returned; nil until called
	rmStats        smartpool.ChannelStats[string]
	rmErr          error
	runUp          chan struct{} // closed when the task runs, held (atRunning)
	hold           chan struct{} // released by release: the running task, or the blocker
	holdOnce       sync.Once
	upOnce         sync.Once
	refusedRan     atomic.Int32 // tasks submitted to the channel being removed, or removed, that ran
	blocker        *mxFiller    // the blocker ahead of the buffered task
	fillersDropped int          // fillers a Drop dropped (queued in a Multi's other shard)
	lastFiller     *mxFiller
}

func newMxCase(t *testing.T, e mxEntry, k mxKind, x mxExit, w mxWait, obs *mxObserver) *mxCase {
	m := &mxCase{t: t, e: e, k: k, x: x, w: w, obs: obs, quit: make(chan struct{}), yielded: make(chan int, 2),
		wake1: make(chan struct{}), wake2: make(chan struct{}), resolved: make(chan struct{}),
		runUp: make(chan struct{}), hold: make(chan struct{})}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.subject = m.newSubject()
	b := &behavior{workers: 1, limit: mxLimit, onPanic: func(string, *smartpool.PanicError) { m.panics.Add(1) }, levels: [][]ch{
		{{key: "g", c: channels.NewFIFO(), coc: true, onEnd: m.gateEnds.fn}},
		{{key: "s", c: m.subject, onEnd: m.recordOnEnd}},
	}}
	if x.removal() {
		b.spare = []int{0, 0} // removable channels, the same two levels: s stays on the lowest, polled in batches
	}
	if m.obs != nil {
		b.observe = m.obs.observe
	}
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

// stats returns the subject channel's stats; once it was removed, its
// final counts as Stats.Removed has them (the only channel removed).
func (m *mxCase) stats() smartpool.ChannelStats[string] {
	st := m.p.Stats()
	s, ok := st.Channel("s")
	if !ok && m.x.removal() {
		s = st.Removed
		s.Key, s.Level = "s", 1
	}
	return s
}

// ---- the task

func (m *mxCase) body(ctx context.Context) {
	m.runs.Add(1)
	if m.obs != nil && ctx.Value(obsCtxKey{}) == nil && !m.x.caller() {
		m.obs.lost.Add(1) // the context TaskObserver.Start returned did not reach the task
	}
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
	case xCloseYielded, xRmDropYielded:
		smartpool.Yield(wctx, func() { m.yielded <- 2; <-m.wake2 })
		m.afterClose.Add(1)
	case xRmDrainYielded:
		smartpool.Yield(wctx, func() { m.yielded <- 2; <-m.wake2 })
	case xRmDrainRunning, xRmDropRunning:
		m.upOnce.Do(func() { close(m.runUp) })
		<-m.hold
	}
	m.returned.Add(1)
}

func (m *mxCase) futureFn(ctx context.Context) (int, error) { m.body(ctx); return 42, errMxRan }
func (m *mxCase) groupFn(ctx context.Context) error         { m.body(ctx); return errMxRan }

// resultsSlot turns what a Results of one Go returned into a Future's
// answer: its one slot, and errMxRan for a task that ran to its end (it
// returned 42 and no error, so that the slot keeps the value). Any other
// number of slots is an error no case expects.
func resultsSlot(vals []int, err error) (int, error) {
	switch {
	case len(vals) != 1:
		return -1, fmt.Errorf("Results.Wait returned %d values (%v), want 1", len(vals), err)
	case err == nil:
		return vals[0], errMxRan
	}
	return vals[0], err
}

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
	case eChanSubmitCtx:
		ctx := smartpool.WithContext(m.ctx)
		switch c := s.(type) {
		case *channels.FIFO:
			return c.Submit(m.body, ctx)
		case *channels.Deadline:
			return c.Submit(m.deadline(), m.body, ctx)
		case *channels.Priority:
			return c.Submit(5, m.body, ctx)
		case *channels.Bounded:
			return c.Submit(m.body, ctx)
		case *channels.Keyed[string]:
			return c.Submit("grp", m.body, ctx)
		case *channels.Multi[*channels.FIFO]:
			return c.Submit(m.body, ctx)
		}
	case eKeyOrdered:
		if _, ok := s.(*channels.Priority); ok {
			return m.p.Submit("s", m.body, smartpool.WithPriority(5))
		}
		return m.p.Submit("s", m.body, smartpool.WithDeadline(m.deadline()))
	case eGo:
		m.watchFuture(goF(smartpool.Go(m.p, "s", m.futureFn)))
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
	case eResultsGo:
		g := smartpool.NewResults[int](context.Background(), m.p)
		// Deferred: a CallerRuns Goexit ends this goroutine inside Go.
		defer func() { go func() { m.resolve(resultsSlot(g.Wait(m.quitCtx()))) }() }()
		g.Go("s", func(ctx context.Context) (int, error) { m.body(ctx); return 42, nil })
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
	blockers := m.blockers()
	m.wakeOnce1.Do(func() { close(m.wake1) })
	m.settle()
	if q := m.stats().Queued; q != 1+blockers {
		m.t.Errorf("the woken task is not queued to re-enter: Queued = %d, want %d", q, 1+blockers)
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
	default:
		if m.x.removal() {
			m.playRemoval()
		}
	}
}

// blockers arranges, for a removal while the task is buffered, that a
// blocker is polled in the same batch just ahead of it: it submits the
// blocker by key, and into a Multi a filler after it, so that the task's
// push (or requeue) lands in the blocker's shard again. It returns the
// number of tasks it submitted.
func (m *mxCase) blockers() int {
	if !m.x.removal() || m.x.at() != atBuffered {
		return 0
	}
	n := 0
	submit := func(f *mxFiller) {
		m.lastFiller = f
		m.fillers++
		n++
		if err := m.p.SubmitTask("s", f); err != nil {
			m.t.Errorf("submitting a filler: %v", err)
		}
	}
	submit(&mxFiller{up: make(chan struct{}), hold: m.hold})
	m.blocker = m.lastFiller
	if m.k == kMulti {
		submit(&mxFiller{})
	}
	return n
}

// release lets the held task, or the blocker, return.
func (m *mxCase) release() { m.holdOnce.Do(func() { close(m.hold) }) }

func (m *mxCase) removeAsync() {
	m.rmDone = make(chan struct{})
	go func() {
		defer close(m.rmDone)
		ctx, cancel := context.WithTimeout(context.Background(), 2*long)
		defer cancel()
		m.rmStats, m.rmErr = m.p.RemoveChannel(ctx, "s", m.x.policy())
	}()
}

// playRemoval brings the task where the exit says (queued behind the gate,
// in the worker's run buffer behind a blocker, running, or yielded), removes
// its channel, checks what the removal in progress shows, then lets the
// task go and waits for RemoveChannel.
func (m *mxCase) playRemoval() {
	t, x := m.t, m.x
	if m.e != eYield {
		m.blockers()
	}
	m.enter()
	m.tick()
	switch x.at() {
	case atBuffered:
		m.g.open()
		if m.blocker == nil || !m.await(m.blocker.up, "the blocker ahead of the task starting") {
			return
		}
		m.settle()
		q, n := m.stats().Queued, m.subject.Len()
		if started := m.runs.Load(); started != 0 && m.e != eYield || q-n != 1 {
			t.Errorf("the task is not in the worker's run buffer: it started %d times; Stats.Queued %d, the channel's Len %d",
				m.runs.Load(), q, n)
		}
		// A Multi's other filler is still queued if the worker took the
		// blocker's shard first: a Drop drops it too.
		if x.policy() == smartpool.Drop {
			m.fillersDropped = n
		}
	case atRunning:
		m.g.open()
		if !m.await(m.runUp, "the task running") {
			return
		}
	case atYielded:
		m.g.open()
		if !m.awaitYield(2) {
			return
		}
	}
	m.removeAsync()
	m.settle()
	m.tick()
	m.settle()
	// A queued task's Drop empties the channel at once: nothing of it is
	// held, so the channel is detached (RemoveChannel then waits for the
	// worker's grace, behind the gate). Otherwise it is being removed.
	m.checkRemoving(!(x.policy() == smartpool.Drop && x.at() == atQueued))
	switch x.at() {
	case atQueued:
		m.g.open()
	case atBuffered, atRunning:
		m.release()
	case atYielded:
		m.wakeOnce2.Do(func() { close(m.wake2) })
	}
	if !m.await(m.rmDone, "RemoveChannel returning") {
		return
	}
	m.settle()
	m.checkRemoving(false)
	if _, err := m.p.RemoveChannel(context.Background(), "s", x.policy()); !errors.Is(err, smartpool.ErrUnknownKey) {
		t.Errorf("RemoveChannel of the removed channel again: %v, want ErrUnknownKey", err)
	}
	if n := m.refusedRan.Load(); n != 0 {
		t.Errorf("%d tasks submitted to the channel being removed or removed ran", n)
	}
}

// checkRemoving checks the channel while its removal runs (listed) or after
// it detached it: listed, Stats shows it Removing and RemoveChannel has not
// returned; a submit by key says ErrClosed while it is listed and
// ErrUnknownKey after; the channel's own submit says ErrClosed.
func (m *mxCase) checkRemoving(listed bool) {
	t := m.t
	c, ok := m.p.Stats().Channel("s")
	switch {
	case listed && !ok:
		t.Errorf("Stats no longer lists the channel while the removal waits for its task")
	case listed && !c.Removing:
		t.Errorf("Stats does not show the channel Removing: %+v", c)
	case !listed && ok:
		t.Errorf("Stats still lists the channel after its removal: %+v", c)
	}
	if listed && isClosed(m.rmDone) {
		t.Errorf("RemoveChannel(%v) returned (%v) while the channel held the task", m.x.policy(), m.rmErr)
	}
	refused := func(context.Context) { m.refusedRan.Add(1) }
	want := smartpool.ErrUnknownKey
	if listed {
		want = smartpool.ErrClosed
	}
	if err := m.p.Submit("s", refused); !errors.Is(err, want) {
		t.Errorf("a submit by key to the channel (removing %v): %v, want %v", listed, err, want)
	}
	if err := m.ownSubmit(refused); !errors.Is(err, smartpool.ErrClosed) {
		t.Errorf("a submit through the channel's own method (removing %v): %v, want ErrClosed", listed, err)
	}
}

// ownSubmit submits f through the subject's own method, without waiting.
func (m *mxCase) ownSubmit(f func(context.Context)) error {
	switch c := m.subject.(type) {
	case *channels.FIFO:
		return c.Submit(f)
	case *channels.Deadline:
		return c.Submit(time.Now().Add(time.Hour), f)
	case *channels.Priority:
		return c.Submit(5, f)
	case *channels.Bounded:
		return c.Submit(f)
	case *channels.Keyed[string]:
		return c.Submit("grp", f)
	case *channels.Multi[*channels.FIFO]:
		return c.Submit(f)
	}
	panic("unreachable")
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// pauseSubject pauses the task's channel, or holds it by a rate, if the
// case says so, and checks that Stats shows it.
func (m *mxCase) pauseSubject() {
	switch m.pause {
	case pPaused:
		if err := m.p.Pause("s"); err != nil {
			m.t.Errorf("Pause: %v", err)
		}
		if !m.stats().Paused {
			m.t.Errorf("Stats does not show the channel paused")
		}
	case pRateZero:
		if err := m.p.SetRate("s", smartpool.Rate{}); err != nil {
			m.t.Errorf("SetRate: %v", err)
		}
		if got := m.stats().Rate; got != (smartpool.Rate{Burst: 1}) {
			m.t.Errorf("Stats shows rate %v, want a rate of 0", got)
		}
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
	m.release()
	m.wakeOnce1.Do(func() { close(m.wake1) })
	m.wakeOnce2.Do(func() { close(m.wake2) })
	m.cancel()
	m.settle()
	if m.rmDone != nil {
		m.await(m.rmDone, "RemoveChannel returning")
	}
	if !m.closed {
		m.closeAsync()
	}
	m.awaitClose()
	m.settle()
	close(m.quit)
	m.settle()
}
