package smartpool_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// The endings matrix: every way a task enters a pool, into every kind of
// channel, crossed with every way it can leave, must end exactly once: its
// Future or Group resolves once with the right error, Stats counts it once
// under the right counter, a drop reaches the channel's OnDrop (and the
// channel's own drop callback, for the drops it made) once, and its unit of
// Config.Limit is released once. Each combination runs in its own synctest
// bubble on a one-worker pool whose worker a gate task holds while the test
// arranges the ending, so every case is deterministic, and a hang becomes a
// failure as soon as nothing in the bubble can move.

// SubmitContext and Handoff are the submit methods whose task parameter is
// changing from a Task to a func(ctx): they are called only through these
// adapters, so that the switch is one line each (submitContextTask then
// passes t.Run).
func submitContext(p *smartpool.Pool[string], ctx context.Context, key string, fn func(context.Context)) error {
	return p.SubmitContext(ctx, key, smartpool.Func(fn))
}

func submitContextTask(p *smartpool.Pool[string], ctx context.Context, key string, t smartpool.Task) error {
	return p.SubmitContext(ctx, key, t)
}

func handoff(p *smartpool.Pool[string], ctx context.Context, key string, fn func(context.Context)) error {
	return p.Handoff(ctx, key, smartpool.Func(fn))
}

// mxKind is the kind of channel the task enters.
type mxKind int

const (
	kFIFO mxKind = iota
	kDeadline
	kDropLate
	kPriority
	kBounded
	kDropOldest
	kCallerRuns
	kKeyed
	kMulti
	mxKinds
)

var mxKindNames = [mxKinds]string{"FIFO", "Deadline", "Deadline(DropLate)", "Priority", "Bounded", "Bounded(DropOldest)", "Bounded(CallerRuns)", "Keyed", "Multi"}

func (k mxKind) String() string { return mxKindNames[k] }
func (k mxKind) bounded() bool  { return k == kBounded || k == kDropOldest || k == kCallerRuns }

// mxEntry is how the task enters the pool.
type mxEntry int

const (
	eChanSubmit     mxEntry = iota // the channel's own Submit
	eChanSubmitTask                // the channel's own SubmitTask (FIFO: SubmitBatch; Multi: Next().Submit)
	eTrySubmit                     // Bounded.TrySubmit
	ePoolSubmit
	ePoolSubmitTask
	ePoolSubmitContext
	eGo
	eFutureChan // NewFuture + the channel's own task submit
	eFutureCtx  // NewFuture + Pool.SubmitContext
	eGroupGo
	eScope
	eAfter
	eAt
	eEvery
	eHandoff
	eYield // submitted by key, yields, re-enters through its followup channel
	mxEntries
)

func (e mxEntry) name(k mxKind) string {
	ch := strings.SplitN(k.String(), "(", 2)[0]
	switch e {
	case eChanSubmit:
		return ch + ".Submit"
	case eChanSubmitTask:
		switch k {
		case kFIFO:
			return "FIFO.SubmitBatch"
		case kMulti:
			return "Multi.Next().Submit"
		}
		return ch + ".SubmitTask"
	case eTrySubmit:
		return ch + ".TrySubmit"
	case eFutureChan:
		if k.bounded() {
			return "NewFuture+" + ch + ".TrySubmitTask"
		}
		return "NewFuture+" + ch + ".SubmitTask"
	}
	return [...]string{ePoolSubmit: "Pool.Submit", ePoolSubmitTask: "Pool.SubmitTask", ePoolSubmitContext: "Pool.SubmitContext",
		eGo: "Go", eFutureCtx: "NewFuture+Pool.SubmitContext", eGroupGo: "Group.Go", eScope: "Scope", eAfter: "After", eAt: "At",
		eEvery: "Every", eHandoff: "Handoff", eYield: "a re-entry after Yield"}[e]
}

func (e mxEntry) timer() bool     { return e == eAfter || e == eAt || e == eEvery }
func (e mxEntry) group() bool     { return e == eGroupGo || e == eScope }
func (e mxEntry) future() bool    { return e == eGo || e == eFutureChan || e == eFutureCtx }
func (e mxEntry) submitCtx() bool { return e == ePoolSubmitContext || e == eFutureCtx }
func (e mxEntry) ownDeadline() bool {
	return e == eChanSubmit || e == eChanSubmitTask || e == eFutureChan
}

// mxExit is how the task leaves the pool.
type mxExit int

const (
	xRan mxExit = iota
	xPanic
	xGoexit
	xCloseQueued
	xCloseYielded
	xDropLate
	xDropOldest
	xCallerRan
	xCallerPanic
	xCallerGoexit
	xCancelled
	xFull
	xClosed
	mxExits
)

var mxExitNames = [mxExits]string{"ran", "panicked", "called runtime.Goexit", "was dropped by Close while queued",
	"was dropped by Close while yielded", "was dropped as late by DropLate", "was displaced by DropOldest",
	"ran on the caller by CallerRuns", "panicked on the caller by CallerRuns", "called runtime.Goexit on the caller by CallerRuns",
	"was cancelled by its context while queued", "was refused with ErrFull", "was refused with ErrClosed"}

func (x mxExit) String() string { return mxExitNames[x] }
func (x mxExit) dropped() bool {
	return x == xCloseQueued || x == xCloseYielded || x == xDropLate || x == xDropOldest
}
func (x mxExit) caller() bool { return x == xCallerRan || x == xCallerPanic || x == xCallerGoexit }

// mxImpossible lists the combinations the API makes impossible (or that the
// test cannot drive without crashing the test binary), with the reason; the
// first rule that matches names the reason.
var mxImpossible = []struct {
	reason string
	match  func(e mxEntry, k mxKind, x mxExit) bool
}{
	{"DropLate exists only on a Deadline built with DropLate", func(e mxEntry, k mxKind, x mxExit) bool { return x == xDropLate && k != kDropLate }},
	{"DropOldest exists only on a Bounded built with DropOldest", func(e mxEntry, k mxKind, x mxExit) bool { return x == xDropOldest && k != kDropOldest }},
	{"CallerRuns exists only on a Bounded built with CallerRuns", func(e mxEntry, k mxKind, x mxExit) bool { return x.caller() && k != kCallerRuns }},
	{"FIFO and Multi have no submit method of their own that takes a Task", func(e mxEntry, k mxKind, x mxExit) bool {
		return e == eFutureChan && (k == kFIFO || k == kMulti)
	}},
	{"TrySubmit exists only on Bounded", func(e mxEntry, k mxKind, x mxExit) bool { return e == eTrySubmit && !k.bounded() }},
	{"only SubmitContext ties a queued task to its submitter's context", func(e mxEntry, k mxKind, x mxExit) bool { return x == xCancelled && !e.submitCtx() }},
	{"only a Deadline's own submit methods give a task a deadline: by-key submits and re-entries are never dropped as late", func(e mxEntry, k mxKind, x mxExit) bool {
		return x == xDropLate && !e.ownDeadline()
	}},
	{"a re-entry is requeued, never submitted: DropOldest never displaces it and CallerRuns never runs it", func(e mxEntry, k mxKind, x mxExit) bool {
		return e == eYield && (x == xDropOldest || x.caller())
	}},
	{"a re-entry is never refused: after Close it ends as dropped while yielded", func(e mxEntry, k mxKind, x mxExit) bool {
		return e == eYield && (x == xFull || x == xClosed)
	}},
	{"Bounded.Submit and Bounded.SubmitTask wait for room and for a unit instead of refusing or running on the caller", func(e mxEntry, k mxKind, x mxExit) bool {
		return k.bounded() && (e == eChanSubmit || e == eChanSubmitTask) && (x == xFull || x.caller())
	}},
	{"SubmitContext waits for a unit of the limit: only a full Bounded (default policy) refuses it", func(e mxEntry, k mxKind, x mxExit) bool {
		return e.submitCtx() && x == xFull && k != kBounded
	}},
	{"unsafe to drive: a panic on the runtime's timer goroutine (CallerRuns runs a timer's task there) cannot be recovered by the test", func(e mxEntry, k mxKind, x mxExit) bool {
		return e.timer() && x == xCallerPanic
	}},
	{"Handoff is called by a task: runtime.Goexit on the caller would end the calling task too", func(e mxEntry, k mxKind, x mxExit) bool {
		return e == eHandoff && x == xCallerGoexit
	}},
	{"Go returns the Future on its caller's goroutine: runtime.Goexit on the caller ends it before Go returns", func(e mxEntry, k mxKind, x mxExit) bool {
		return e == eGo && x == xCallerGoexit
	}},
	{"Scope's body runs on Scope's goroutine: runtime.Goexit on the caller ends Scope before it waits", func(e mxEntry, k mxKind, x mxExit) bool {
		return e == eScope && x == xCallerGoexit
	}},
}

func mxWhyImpossible(e mxEntry, k mxKind, x mxExit) string {
	for _, r := range mxImpossible {
		if r.match(e, k, x) {
			return r.reason
		}
	}
	return ""
}

const mxLimit = 8 // Config.Limit of every matrix pool

var (
	errMxRan  = errors.New("matrix: the task's own error")
	errMxBoom = errors.New("matrix: boom")
)

func TestEndings(t *testing.T) {
	run, skipped := 0, map[string]int{}
	for e := range mxEntries {
		for k := range mxKinds {
			for x := range mxExits {
				if why := mxWhyImpossible(e, k, x); why != "" {
					skipped[why]++
					continue
				}
				run++
				name := fmt.Sprintf("a task entering by %s into %s %s", e.name(k), k, x)
				t.Run(name, func(t *testing.T) { mxRun(t, e, k, x) })
			}
		}
	}
	total := int(mxEntries) * int(mxKinds) * int(mxExits)
	t.Logf("endings matrix: %d entries x %d channels x %d exits = %d combinations: %d run, %d impossible",
		mxEntries, mxKinds, mxExits, total, run, total-run)
	reasons := make([]string, 0, len(skipped))
	for r := range skipped {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		t.Logf("  %4d impossible: %s", skipped[r], r)
	}
}

// mxRun runs one combination in a bubble; goroutines a failing case leaves
// blocked make synctest panic, which becomes this case's failure.
func mxRun(t *testing.T, e mxEntry, k mxKind, x mxExit) {
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("goroutines of the pool or the task were left blocked: %v", r)
		}
	}()
	synctest.Test(t, func(t *testing.T) {
		m := newMxCase(t, e, k, x)
		defer m.cleanup()
		m.play()
		m.cleanup()
		m.check()
	})
}

// mxProbe is a pre-allocated task, so that drop callbacks can be checked to
// receive the very task that was submitted.
type mxProbe struct{ fn func(context.Context) }

func (p *mxProbe) Run(ctx context.Context) { p.fn(ctx) }

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
	o       *smartpool.OwnedPool[string]
	p       *smartpool.Pool[string]
	subject smartpool.Channel

	gates     []*mxGate
	g         *mxGate // the gate holding the worker now
	gateTasks int     // tasks the gate channel runs: gates and handed-off fillers
	fillers   int     // filler tasks of the subject channel, which all run

	ctx    context.Context // SubmitContext's
	cancel context.CancelFunc
	quit   chan struct{} // closed by cleanup: watchers give up

	// the task's own record
	runs, returned, defers, afterClose atomic.Int32
	yielded                            chan int
	wake1, wake2                       chan struct{}
	wakeOnce1, wakeOnce2               sync.Once
	deferSaw                           atomic.Pointer[smartpool.ChannelStats[string]]

	panics atomic.Int32 // calls of Config.PanicHandler

	// drop callbacks: ChannelParams.OnDrop, and the channel's own
	onDrop, ownDrop         atomic.Int32
	onDropSaw, ownDropSaw   atomic.Int32 // Dropped as Stats showed it to the callback (minimum)
	onDropTask, ownDropTask atomic.Pointer[smartpool.Task]
	probe                   smartpool.Task // the Task value submitted, if the entry took one

	// results
	enterErr      error
	enterReturned bool
	enterPanic    any
	fut           *smartpool.Future[int]
	resolved      chan struct{} // closed when the Future or Group resolved
	resVal        int
	resErr        error
	resSaw        smartpool.ChannelStats[string] // subject stats when the result became observable
	timer         *smartpool.Timer

	closeDone chan struct{}
	report    *smartpool.Report[string]
	closeErr  error
	closed    bool
}

func newMxCase(t *testing.T, e mxEntry, k mxKind, x mxExit) *mxCase {
	m := &mxCase{t: t, e: e, k: k, x: x, quit: make(chan struct{}), yielded: make(chan int, 2),
		wake1: make(chan struct{}), wake2: make(chan struct{}), resolved: make(chan struct{})}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.subject = m.newSubject()
	b := &behavior{workers: 1, limit: mxLimit, onPanic: func(string, *smartpool.PanicError) { m.panics.Add(1) }, levels: [][]ch{
		{{key: "g", c: channels.NewFIFO(), coc: true}},
		{{key: "s", c: m.subject, onDrop: m.recordOnDrop}},
	}}
	o, err := smartpool.New[string](b)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	m.o, m.p = o, o.Pool()
	return m
}

func (m *mxCase) newSubject() smartpool.Channel {
	own := func(task smartpool.Task) {
		m.ownDrop.Add(1)
		m.ownDropTask.Store(&task)
		m.ownDropSaw.Store(int32(m.stats().Dropped))
	}
	switch m.k {
	case kFIFO:
		return channels.NewFIFO()
	case kDeadline:
		return channels.NewDeadline()
	case kDropLate:
		return channels.NewDeadline(channels.DropLate(own))
	case kPriority:
		return channels.NewPriority()
	case kBounded:
		return channels.NewBounded(1)
	case kDropOldest:
		return channels.NewBounded(1, channels.DropOldest(own))
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

func (m *mxCase) recordOnDrop(task smartpool.Task) {
	m.onDrop.Add(1)
	m.onDropTask.Store(&task)
	m.onDropSaw.Store(int32(m.stats().Dropped))
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
	if m.e == eYield {
		smartpool.Yield(ctx, func() { m.yielded <- 1; <-m.wake1 })
	}
	switch m.x {
	case xPanic, xCallerPanic:
		panic(errMxBoom)
	case xGoexit, xCallerGoexit:
		runtime.Goexit()
	case xCloseYielded:
		smartpool.Yield(ctx, func() { m.yielded <- 2; <-m.wake2 })
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
				smartpool.Yield(ctx, func() { err = handoff(m.p, ctx, "s", m.body) })
			})
		case xFull: // the first Handoff passes the gate's unit on; a second needs a free one
			m.gateTasks++
			m.gateDo(func(ctx context.Context) {
				if err2 := handoff(m.p, ctx, "g", m.filler); err2 != nil {
					m.t.Errorf("the first Handoff: %v", err2)
				}
				err = handoff(m.p, ctx, "s", m.body)
			})
		default:
			m.gateDo(func(ctx context.Context) { err = handoff(m.p, ctx, "s", m.body) })
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
			return c.Submit(context.Background(), m.body)
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
		return s.(*channels.Bounded).TrySubmit(m.body)
	case ePoolSubmit:
		return m.p.Submit("s", m.body)
	case ePoolSubmitTask:
		m.probe = &mxProbe{fn: m.body}
		return m.p.SubmitTask("s", m.probe)
	case ePoolSubmitContext:
		return submitContext(m.p, m.ctx, "s", m.body)
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
		return submitContextTask(m.p, m.ctx, "s", task)
	case eGroupGo:
		g := smartpool.NewGroup(m.p)
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
			return c.TrySubmitTask(task)
		}
		return c.SubmitTask(context.Background(), task)
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
	if s := m.stats(); s != (smartpool.ChannelStats[string]{Key: "s", Level: 1}) {
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
		if err := m.subject.(*channels.Bounded).TrySubmit(m.filler); err != nil {
			t.Errorf("the displacing TrySubmit: %v", err)
		}
		m.settle()
		m.g.open()
		m.settle()
	case xCallerRan, xCallerPanic, xCallerGoexit:
		m.fillers++
		if err := m.subject.(*channels.Bounded).TrySubmit(m.filler); err != nil {
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
		m.g.open()
		m.settle()
	case xFull:
		if m.e.submitCtx() { // a full Bounded: see mxImpossible
			m.fillers++
			if err := m.subject.(*channels.Bounded).TrySubmit(m.filler); err != nil {
				t.Errorf("the TrySubmit that fills the channel: %v", err)
			}
		} else if err := m.p.SetLimit(1); err != nil { // the gate holds the only unit
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

// ---- what must hold

func (m *mxCase) check() {
	t, x := m.t, m.x

	// the submit itself
	wantEnter := error(nil)
	switch {
	case x == xFull && !m.e.group() && m.e != eGo && !m.e.timer():
		wantEnter = smartpool.ErrFull
	case x == xClosed && !m.e.group() && m.e != eGo:
		wantEnter = smartpool.ErrClosed
	}
	switch {
	case m.enterPanic != nil && x != xCallerPanic:
		t.Errorf("the submit panicked: %v", m.enterPanic)
	case !m.enterReturned && m.enterPanic == nil && x != xCallerGoexit && m.e != eYield:
		t.Errorf("the submit never returned")
	case m.enterReturned && !errors.Is(m.enterErr, wantEnter):
		t.Errorf("the submit returned %v, want %v", m.enterErr, wantEnter)
	}

	// the task's own record
	started := x == xRan || x == xPanic || x == xGoexit || x == xCloseYielded || x.caller() || m.e == eYield
	want := func(what string, got int32, n int) {
		if int(got) != n {
			t.Errorf("%s %d times, want %d", what, got, n)
		}
	}
	one := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	want("the task started", m.runs.Load(), one(started))
	want("the task's deferred calls ran", m.defers.Load(), one(started))
	want("the task returned", m.returned.Load(), one(x == xRan || x == xCallerRan))
	want("the task went on after Close dropped it", m.afterClose.Load(), 0)
	if !m.e.future() && !m.e.group() && !x.caller() { // a Future or Group takes its task's panic; CallerRuns runs outside the pool
		want("Config.PanicHandler was called", m.panics.Load(), one(x == xPanic))
	}
	if started && x.dropped() {
		if s := m.deferSaw.Load(); s != nil && (s.Dropped != 1 || s.Yielded != 0) {
			t.Errorf("its deferred calls saw Dropped %d, Yielded %d: the drop was not counted before the task ended", s.Dropped, s.Yielded)
		}
	}

	// the Future or Group
	if m.e.future() || m.e.group() {
		m.checkResult()
	}

	// Stats: the whole subject channel, the whole gate channel, the units
	s := m.p.Stats()
	wantS := smartpool.ChannelStats[string]{Key: "s", Level: 1, Ran: uint64(m.fillers)}
	switch x {
	case xRan, xCallerRan:
		wantS.Ran++
	case xPanic, xCallerPanic:
		wantS.Panicked++
	case xGoexit, xCallerGoexit:
		wantS.Goexited++
	case xCloseQueued, xCloseYielded, xDropLate, xDropOldest:
		wantS.Dropped++
	case xCancelled:
		wantS.Cancelled++
	}
	if got, _ := s.Channel("s"); got != wantS {
		t.Errorf("Stats of its channel:\n got %+v\nwant %+v", got, wantS)
	}
	wantG := smartpool.ChannelStats[string]{Key: "g", CompleteOnClose: true, Ran: uint64(m.gateTasks)}
	if got, _ := s.Channel("g"); got != wantG {
		t.Errorf("Stats of the gate's channel:\n got %+v\nwant %+v", got, wantG)
	}
	wantT := smartpool.ChannelStats[string]{Ran: wantS.Ran + wantG.Ran, Panicked: wantS.Panicked, Goexited: wantS.Goexited,
		Dropped: wantS.Dropped, Cancelled: wantS.Cancelled}
	if got := s.Total(); got != wantT {
		t.Errorf("Stats.Total:\n got %+v\nwant %+v", got, wantT)
	}
	if s.Limit != mxLimit || s.Admitted != 0 || s.Waiting != 0 || s.Suspended != 0 {
		t.Errorf("units of Config.Limit not back to their baseline: Limit %d Admitted %d Waiting %d Suspended %d, want %d 0 0 0",
			s.Limit, s.Admitted, s.Waiting, s.Suspended, mxLimit)
	}
	if m.report != nil && x != xCloseYielded { // a yielded task is dropped after the report
		if got, _ := m.report.Channel("s"); got != wantS {
			t.Errorf("Close's report of its channel:\n got %+v\nwant %+v", got, wantS)
		}
	}

	// drop callbacks
	want("ChannelParams.OnDrop was called", m.onDrop.Load(), one(x.dropped()))
	want("the channel's own drop callback was called", m.ownDrop.Load(), one(x == xDropLate || x == xDropOldest))
	if x.dropped() && m.onDrop.Load() > 0 && m.onDropSaw.Load() < 1 {
		t.Errorf("OnDrop saw Dropped %d: the drop was not counted before the callback", m.onDropSaw.Load())
	}
	if m.ownDrop.Load() > 0 && m.ownDropSaw.Load() < 1 {
		t.Errorf("the channel's own drop callback saw Dropped %d: the drop was not counted before the callback", m.ownDropSaw.Load())
	}
	if m.probe != nil {
		for what, p := range map[string]*atomic.Pointer[smartpool.Task]{"OnDrop": &m.onDropTask, "the channel's own drop callback": &m.ownDropTask} {
			if got := p.Load(); got != nil && *got != m.probe {
				t.Errorf("%s received %T, not the task that was submitted", what, *got)
			}
		}
	}

	// the channel's own counters
	switch c := m.subject.(type) {
	case *channels.Deadline:
		if m.k == kDropLate {
			if got := c.Stats().DroppedLate; got != uint64(one(x == xDropLate)) {
				t.Errorf("DeadlineStats.DroppedLate = %d, want %d", got, one(x == xDropLate))
			}
		}
	case *channels.Bounded:
		bs := c.Stats()
		if bs.Dropped != uint64(one(x == xDropOldest)) || bs.CallerRan != uint64(one(x.caller())) {
			t.Errorf("BoundedStats: Dropped %d CallerRan %d, want %d %d", bs.Dropped, bs.CallerRan, one(x == xDropOldest), one(x.caller()))
		}
	}
	if m.timer != nil {
		if got := m.timer.Skipped(); got != uint64(one(x == xFull)) {
			t.Errorf("Timer.Skipped = %d, want %d", got, one(x == xFull))
		}
	}
}

func (m *mxCase) checkResult() {
	t, x := m.t, m.x
	if (m.e == eFutureChan || m.e == eFutureCtx) && (x == xFull || x == xClosed) {
		return // the submit's error is the answer: see NewFuture
	}
	select {
	case <-m.resolved:
	default:
		what := "its Future"
		if m.e.group() {
			what = "its Group's Wait"
		}
		t.Errorf("%s never resolved", what)
		return
	}
	var pe *smartpool.PanicError
	var wantErr error
	switch x {
	case xRan, xCallerRan:
		wantErr = errMxRan
		if m.e.future() && m.resVal != 42 {
			t.Errorf("its Future resolved with value %d, want 42", m.resVal)
		}
	case xPanic, xCallerPanic:
		if !errors.As(m.resErr, &pe) {
			t.Errorf("it resolved with %v, want a *PanicError", m.resErr)
		}
	case xGoexit, xCallerGoexit:
		wantErr = smartpool.ErrGoexit
	case xCloseQueued, xCloseYielded, xDropLate, xDropOldest:
		wantErr = smartpool.ErrDropped
		if m.resSaw.Dropped < 1 {
			t.Errorf("it resolved before the drop was counted: Stats showed %+v", m.resSaw)
		}
	case xCancelled:
		wantErr = context.Canceled
	case xFull:
		wantErr = smartpool.ErrFull
	case xClosed:
		wantErr = smartpool.ErrClosed
	}
	if wantErr != nil && !errors.Is(m.resErr, wantErr) {
		t.Errorf("it resolved with %v, want %v", m.resErr, wantErr)
	}
}
