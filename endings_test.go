package smartpool_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// The endings matrix: every way a task enters a pool, into every kind of
// channel, crossed with every way it can leave, must end exactly once: its
// Future or Group resolves once with the right error, Stats counts it once
// under the right counter, its ending reaches the channel's OnEnd once with
// the right Outcome, after Stats counted it (a drop also reaches the
// channel's own drop callback, for the drops it made, once), and its unit
// of Config.Limit is released once. Each combination runs in its own synctest
// bubble on a one-worker pool whose worker a gate task holds while the test
// arranges the ending, so every case is deterministic, and a hang becomes a
// failure as soon as nothing in the bubble can move.

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
	eTrySubmit                     // Bounded.Submit without a context: never waits
	ePoolSubmit
	ePoolSubmitTask
	ePoolSubmitCtx // Pool.Submit with WithContext
	eGo
	eFutureChan // NewFuture + the channel's own task submit
	eFutureCtx  // NewFuture + Pool.SubmitTask with WithContext
	eGroupGo
	eScope
	eAfter
	eAt
	eEvery
	eHandoff
	eYield         // submitted by key, yields, re-enters through its followup channel
	eChanSubmitCtx // the channel's own Submit with WithContext (through Bits.Submit)
	eKeyOrdered    // Pool.Submit with the channel's ordering option (WithDeadline, WithPriority)
	eResultsGo     // Results.Go: a Group's task that also returns a value
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
		return ch + ".Submit(no context)"
	case eChanSubmitCtx:
		return ch + ".Submit+WithContext"
	case eKeyOrdered:
		if k == kPriority {
			return "Pool.Submit+WithPriority"
		}
		return "Pool.Submit+WithDeadline"
	case eFutureChan:
		if k.bounded() {
			return "NewFuture+" + ch + ".SubmitTask(no context)"
		}
		return "NewFuture+" + ch + ".SubmitTask"
	}
	return [...]string{ePoolSubmit: "Pool.Submit", ePoolSubmitTask: "Pool.SubmitTask", ePoolSubmitCtx: "Pool.Submit+WithContext",
		eGo: "Go", eFutureCtx: "NewFuture+Pool.SubmitTask+WithContext", eGroupGo: "Group.Go", eScope: "Scope", eAfter: "After", eAt: "At",
		eEvery: "Every", eHandoff: "Handoff", eYield: "a re-entry after Yield", eResultsGo: "Results.Go"}[e]
}

func (e mxEntry) timer() bool  { return e == eAfter || e == eAt || e == eEvery }
func (e mxEntry) group() bool  { return e == eGroupGo || e == eScope || e == eResultsGo }
func (e mxEntry) future() bool { return e == eGo || e == eFutureChan || e == eFutureCtx }
func (e mxEntry) submitCtx() bool {
	return e == ePoolSubmitCtx || e == eFutureCtx || e == eChanSubmitCtx
}
func (e mxEntry) ownDeadline() bool {
	return e == eChanSubmit || e == eChanSubmitTask || e == eFutureChan || e == eChanSubmitCtx || e == eKeyOrdered
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
	// RemoveChannel(Drain) and RemoveChannel(Drop) of the task's channel,
	// while the task is queued, in the worker's run buffer (taken in a batch,
	// not started), running, or yielded (its followup is its own channel).
	xRmDrainQueued
	xRmDrainBuffered
	xRmDrainRunning
	xRmDrainYielded
	xRmDropQueued
	xRmDropBuffered
	xRmDropRunning
	xRmDropYielded
	mxExits
)

var mxExitNames = [mxExits]string{"ran", "panicked", "called runtime.Goexit", "was dropped by Close while queued",
	"was dropped by Close while yielded", "was dropped as late by DropLate", "was displaced by DropOldest",
	"ran on the caller by CallerRuns", "panicked on the caller by CallerRuns", "called runtime.Goexit on the caller by CallerRuns",
	"was cancelled by its context while queued", "was refused with ErrFull", "was refused with ErrClosed",
	"ran, queued as its channel was removed with Drain", "ran, buffered in the worker as its channel was removed with Drain",
	"ran, running as its channel was removed with Drain", "ran, yielded as its channel was removed with Drain",
	"was dropped, queued as its channel was removed with Drop", "was dropped, buffered in the worker as its channel was removed with Drop",
	"ran, running as its channel was removed with Drop", "was dropped, yielded as its channel was removed with Drop"}

func (x mxExit) String() string { return mxExitNames[x] }
func (x mxExit) dropped() bool {
	return x == xCloseQueued || x == xCloseYielded || x == xDropLate || x == xDropOldest ||
		x == xRmDropQueued || x == xRmDropBuffered || x == xRmDropYielded
}

// mxAt is where the task is when RemoveChannel is called (removal exits).
type mxAt int

const (
	atQueued mxAt = iota
	atBuffered
	atRunning
	atYielded
)

func (x mxExit) removal() bool { return x >= xRmDrainQueued && x <= xRmDropYielded }

// policy is the removal's policy; removal exits only.
func (x mxExit) policy() smartpool.RemovePolicy {
	if x >= xRmDropQueued {
		return smartpool.Drop
	}
	return smartpool.Drain
}

// at is where the task is when its channel is removed; removal exits only.
func (x mxExit) at() mxAt {
	if x >= xRmDropQueued {
		return mxAt(x - xRmDropQueued)
	}
	return mxAt(x - xRmDrainQueued)
}

// ran reports whether the task runs to its return.
func (x mxExit) ran() bool {
	return x == xRan || x == xCallerRan || x.removal() && (x.policy() == smartpool.Drain || x.at() == atRunning)
}

// yieldedAtEnd reports whether the task waits in a Yield as its ending is
// decided (Close or a removal with Drop drops it as it comes back).
func (x mxExit) yieldedAtEnd() bool {
	return x == xCloseYielded || x == xRmDrainYielded || x == xRmDropYielded
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
	{"Submit without a context is the no-wait door of Bounded only (other channels never wait)", func(e mxEntry, k mxKind, x mxExit) bool { return e == eTrySubmit && !k.bounded() }},
	{"only Deadline and Priority order by a key an option gives", func(e mxEntry, k mxKind, x mxExit) bool {
		return e == eKeyOrdered && k != kDeadline && k != kDropLate && k != kPriority
	}},
	{"only WithContext ties a queued task to its submitter's context", func(e mxEntry, k mxKind, x mxExit) bool { return x == xCancelled && !e.submitCtx() }},
	{"only a Deadline's own submit methods give a task a deadline here: by-key submits without WithDeadline and re-entries are never dropped as late", func(e mxEntry, k mxKind, x mxExit) bool {
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
	{"Group.Go, Results.Go and Scope wait for room at a full pool or channel, as errgroup's Go does (TryGo's refusal is in TestGroup_Semantics)", func(e mxEntry, k mxKind, x mxExit) bool {
		return e.group() && x == xFull
	}},
	{"WithContext waits for a unit of the limit, and for room in a full Bounded, until its context ends: it is never refused with ErrFull", func(e mxEntry, k mxKind, x mxExit) bool {
		return e.submitCtx() && x == xFull
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
	{"only FIFO and Multi (of FIFOs) are polled in batches: a task of another channel is never in a worker's run buffer", func(e mxEntry, k mxKind, x mxExit) bool {
		return x.removal() && x.at() == atBuffered && k != kFIFO && k != kMulti
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

// mxWait is the context the task passes to its waits, an axis only where
// the task waits (it yields to enter, or is dropped while yielded).
type mxWait int

const (
	wTask       mxWait = iota // the task's own ctx
	wBackground               // context.Background(): users write it
	mxWaits
)

func (w mxWait) applies(e mxEntry, x mxExit) bool {
	return w == wTask || e == eYield || x.yieldedAtEnd()
}

func (w mxWait) String() string {
	if w == wBackground {
		return ", waiting with context.Background()"
	}
	return ""
}

// mxPause says whether the task's channel is paused before Close, or held
// by its start rate (a rate of 0: no token ever), an axis
// only where Close ends the task: Close resumes a paused channel and
// ignores rates, so the task must end exactly as it does unpaused and
// unrated, and Close never waits for a token (Pool.Pause, Pool.SetRate).
type mxPause int

const (
	pRunning mxPause = iota
	pPaused
	pRateZero
	mxPauses
)

func (p mxPause) applies(x mxExit) bool {
	return p == pRunning || x == xCloseQueued || x == xCloseYielded
}

func (p mxPause) String() string {
	switch p {
	case pPaused:
		return ", its channel paused and then the pool closed"
	case pRateZero:
		return ", its channel at a rate of 0 and then the pool closed"
	}
	return ""
}

const mxLimit = 8 // Config.Limit of every matrix pool

var (
	errMxRan  = errors.New("matrix: the task's own error")
	errMxBoom = errors.New("matrix: boom")
)

func TestEndings(t *testing.T) {
	run, run0, removals, skipped := 0, 0, 0, map[string]int{}
	for e := range mxEntries {
		for k := range mxKinds {
			for x := range mxExits {
				if why := mxWhyImpossible(e, k, x); why != "" {
					skipped[why]++
					continue
				}
				run0++
				for w := range mxWaits {
					if !w.applies(e, x) {
						continue
					}
					for p := range mxPauses {
						if !p.applies(x) {
							continue
						}
						run++
						if x.removal() {
							removals++
						}
						name := fmt.Sprintf("a task entering by %s into %s %s%s%s", e.name(k), k, x, w, p)
						t.Run(name, func(t *testing.T) { mxRun(t, e, k, x, w, p) })
					}
				}
			}
		}
	}
	total := int(mxEntries) * int(mxKinds) * int(mxExits)
	t.Logf("endings matrix: %d entries x %d channels x %d exits = %d combinations, %d impossible; %d cases run (those that wait, once more with context.Background(); those Close ends, once more with their channel paused first, and once more at a rate of 0); %d of them remove the task's channel",
		mxEntries, mxKinds, mxExits, total, total-run0, run, removals)
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
func mxRun(t *testing.T, e mxEntry, k mxKind, x mxExit, w mxWait, p mxPause) {
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("goroutines of the pool or the task were left blocked: %v", r)
		}
	}()
	synctest.Test(t, func(t *testing.T) {
		m := newMxCase(t, e, k, x, w, nil)
		m.pause = p
		defer m.cleanup()
		m.play()
		m.cleanup()
		m.check()
	})
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
	started := x == xRan || x == xPanic || x == xGoexit || x == xCloseYielded || x.caller() || m.e == eYield ||
		x.removal() && (x.policy() == smartpool.Drain || x.at() == atRunning || x.at() == atYielded)
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
	want("the task returned", m.returned.Load(), one(x.ran()))
	want("the task went on after Close dropped it", m.afterClose.Load(), 0)
	// Every panic reaches the handler once, also one a Future or Group
	// reports, or one a task run by its submitter (CallerRuns) raised.
	want("Config.PanicHandler was called", m.panics.Load(), one(x == xPanic || x == xCallerPanic))
	if started && x.dropped() {
		if s := m.deferSaw.Load(); s != nil && (s.Dropped != uint64(1+m.fillersDropped) || s.Yielded != 0) {
			t.Errorf("its deferred calls saw Dropped %d, Yielded %d: the drop was not counted before the task ended", s.Dropped, s.Yielded)
		}
	}

	// the Future or Group
	if m.e.future() || m.e.group() {
		m.checkResult()
	}

	// Stats: the whole subject channel, the whole gate channel, the units
	s := m.p.Stats()
	wantS := smartpool.ChannelStats[string]{Key: "s", Level: 1, Ran: uint64(m.fillers - m.fillersDropped), Dropped: uint64(m.fillersDropped)}
	if m.pause == pRateZero {
		wantS.Rate = smartpool.Rate{Burst: 1} // the rate of 0 set before Close: Stats still shows it
	}
	if x.removal() { // the fillers went with the channel
		wantS.DroppedBy.Removed = uint64(m.fillersDropped)
	} else {
		wantS.DroppedBy.OnClose = uint64(m.fillersDropped)
	}
	switch {
	case x.ran():
		wantS.Ran++
	case x == xPanic, x == xCallerPanic:
		wantS.Panicked++
	case x == xGoexit, x == xCallerGoexit:
		wantS.Goexited++
	case x.dropped():
		wantS.Dropped++
		switch {
		case x.removal():
			wantS.DroppedBy.Removed++
		case x == xDropLate:
			wantS.DroppedBy.Late++
		case x == xDropOldest:
			wantS.DroppedBy.Displaced++
		default:
			wantS.DroppedBy.OnClose++
		}
	case x == xCancelled:
		wantS.Cancelled++
	}
	if x.removal() {
		m.checkRemoved(s, wantS)
	} else if got, _ := s.Channel("s"); !sameCounts(got, wantS) {
		t.Errorf("Stats of its channel:\n got %+v\nwant %+v", got, wantS)
	}
	wantG := smartpool.ChannelStats[string]{Key: "g", CompleteOnClose: true, Ran: uint64(m.gateTasks)}
	if got, _ := s.Channel("g"); !sameCounts(got, wantG) {
		t.Errorf("Stats of the gate's channel:\n got %+v\nwant %+v", got, wantG)
	}
	wantT := smartpool.ChannelStats[string]{Ran: wantS.Ran + wantG.Ran, Panicked: wantS.Panicked, Goexited: wantS.Goexited,
		Dropped: wantS.Dropped, DroppedBy: wantS.DroppedBy, Cancelled: wantS.Cancelled}
	if got := s.Total(); !sameCounts(got, wantT) {
		t.Errorf("Stats.Total:\n got %+v\nwant %+v", got, wantT)
	}
	if s.Limit != mxLimit || s.Admitted != 0 || s.Waiting != 0 || s.Suspended != 0 {
		t.Errorf("units of Config.Limit not back to their baseline: Limit %d Admitted %d Waiting %d Suspended %d, want %d 0 0 0",
			s.Limit, s.Admitted, s.Waiting, s.Suspended, mxLimit)
	}
	if m.report != nil && x != xCloseYielded && !x.removal() { // a yielded task is dropped after the report; a removed channel is checked by checkRemoved
		if got, _ := m.report.Channel("s"); !sameCounts(got, wantS) {
			t.Errorf("Close's report of its channel:\n got %+v\nwant %+v", got, wantS)
		}
	}

	// OnEnd: once for the task, with its outcome, after Stats counted it;
	// once as Ran for every filler and every task of the gate's channel
	m.checkOnEnd()
	want("the fillers' OnEnd as ran was called", m.fillerEnds.of(smartpool.Ran), m.fillers-m.fillersDropped)
	want("the fillers' OnEnd as dropped on close was called", m.fillerEnds.of(smartpool.DroppedOnClose), m.fillersDropped)
	want("the fillers' OnEnd was called", m.fillerEnds.total(), m.fillers)
	want("the gate channel's OnEnd as ran was called", m.gateEnds.of(smartpool.Ran), m.gateTasks)
	want("the gate channel's OnEnd was called", m.gateEnds.total(), m.gateTasks)

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

// mxOutcome is the Outcome OnEnd must receive for the task that leaves by
// x, or 0 if it never entered the pool (refused: no ending to report).
func mxOutcome(x mxExit) smartpool.Outcome {
	switch {
	case x.removal() && x.ran():
		return smartpool.Ran
	case x.removal():
		return smartpool.DroppedOnClose
	}
	switch x {
	case xRan, xCallerRan:
		return smartpool.Ran
	case xPanic, xCallerPanic:
		return smartpool.Panicked
	case xGoexit, xCallerGoexit:
		return smartpool.Goexited
	case xCloseQueued, xCloseYielded:
		return smartpool.DroppedOnClose
	case xDropLate:
		return smartpool.DroppedLate
	case xDropOldest:
		return smartpool.DroppedDisplaced
	case xCancelled:
		return smartpool.Cancelled
	}
	return 0
}

// counted returns the counter of s that an ending with outcome o adds to.
func counted(s smartpool.ChannelStats[string], o smartpool.Outcome) uint64 {
	switch o {
	case smartpool.Ran:
		return s.Ran
	case smartpool.Panicked:
		return s.Panicked
	case smartpool.Goexited:
		return s.Goexited
	case smartpool.Cancelled:
		return s.Cancelled
	case smartpool.DroppedOnClose, smartpool.DroppedLate, smartpool.DroppedDisplaced:
		return s.Dropped
	}
	return 0
}

// checkOnEnd checks the task's endings as ChannelParams.OnEnd saw them:
// exactly one for a task the pool admitted, none for one it refused, with
// the outcome of the exit, counted in Stats before the call, handed the task
// as submitted, after its Future resolved (but for a drop while yielded).
func (m *mxCase) checkOnEnd() {
	t, x := m.t, m.x
	m.endMu.Lock()
	ends := append([]mxEnd(nil), m.ends...)
	m.endMu.Unlock()
	wantO := mxOutcome(x)
	switch {
	case wantO == 0 && len(ends) != 0:
		t.Errorf("ChannelParams.OnEnd was called for a task the pool refused: %v", ends)
		return
	case wantO == 0:
		return
	case len(ends) != 1:
		t.Errorf("ChannelParams.OnEnd was called %d times for the task (%v), want once, with %v", len(ends), ends, wantO)
		return
	}
	end := ends[0]
	if end.o != wantO {
		t.Errorf("ChannelParams.OnEnd received %v, want %v", end.o, wantO)
	}
	if counted(end.saw, end.o) < 1 {
		t.Errorf("ChannelParams.OnEnd (%v) saw Stats %+v: the ending was not counted before the callback", end.o, end.saw)
	}
	switch {
	case m.probe != nil:
		if end.t != m.probe {
			t.Errorf("ChannelParams.OnEnd received %T, not the task that was submitted", end.t)
		}
	case m.submitsFunc():
		if _, ok := end.t.(smartpool.Func); !ok {
			t.Errorf("ChannelParams.OnEnd received %T, not the func that was submitted (as a Func)", end.t)
		}
	}
	// A task dropped while yielded is ended by the pool before its
	// goroutine unwinds (so that its deferred calls see it counted), and
	// its Future resolves in those deferred calls, after OnEnd.
	if end.futureOpen && !(x.dropped() && x.yieldedAtEnd()) {
		t.Errorf("ChannelParams.OnEnd (%v) was called before the task's Future resolved", end.o)
	}
}

// submitsFunc reports whether the entry submits the task as a plain func,
// which OnEnd receives as a Func.
func (m *mxCase) submitsFunc() bool {
	switch m.e {
	case eChanSubmit, eTrySubmit, ePoolSubmit, ePoolSubmitCtx, eYield, eHandoff, eChanSubmitCtx, eKeyOrdered:
		return true
	case eChanSubmitTask:
		return m.k == kFIFO || m.k == kMulti
	}
	return false
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
	if m.e == eResultsGo && !x.ran() && m.resVal != 0 {
		t.Errorf("its Results' slot holds %d, want the zero value", m.resVal)
	}
	var pe *smartpool.PanicError
	var wantErr error
	switch {
	case x.removal() && x.ran():
		x = xRan
	case x.removal():
		x = xCloseQueued // dropped
	}
	switch x {
	case xRan, xCallerRan:
		wantErr = errMxRan
		if (m.e.future() || m.e == eResultsGo) && m.resVal != 42 {
			t.Errorf("its Future or Results resolved with value %d, want 42", m.resVal)
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

// sameCounts compares two ChannelStats without their timing histograms, which
// vary from run to run: the matrix checks counts.
func sameCounts(got, want smartpool.ChannelStats[string]) bool {
	got.Wait, got.Run, want.Wait, want.Run = smartpool.Timing{}, smartpool.Timing{}, smartpool.Timing{}, smartpool.Timing{}
	got.Throttled, want.Throttled = 0, 0 // how often a worker met the rate depends on its searches
	return reflect.DeepEqual(got, want)
}

// checkRemoved checks a removal's ending: RemoveChannel returned the
// channel's final counts, and from then on Stats (and Close's report) no
// longer lists the channel but counts its tasks in Removed, which Total
// includes.
func (m *mxCase) checkRemoved(s *smartpool.Stats[string], wantS smartpool.ChannelStats[string]) {
	t := m.t
	select {
	case <-m.rmDone:
		if m.rmErr != nil {
			t.Errorf("RemoveChannel(%v): %v", m.x.policy(), m.rmErr)
		} else if !sameCounts(m.rmStats, wantS) {
			t.Errorf("RemoveChannel(%v)'s final stats of the channel:\n got %+v\nwant %+v", m.x.policy(), m.rmStats, wantS)
		}
	default:
		t.Errorf("RemoveChannel(%v) never returned", m.x.policy())
	}
	wantR := smartpool.ChannelStats[string]{Ran: wantS.Ran, Panicked: wantS.Panicked, Goexited: wantS.Goexited,
		Dropped: wantS.Dropped, DroppedBy: wantS.DroppedBy, Cancelled: wantS.Cancelled}
	for what, st := range map[string]*smartpool.Stats[string]{"Stats": s, "Close's report": m.report} {
		if st == nil {
			continue
		}
		if got, ok := st.Channel("s"); ok {
			t.Errorf("%s still lists the removed channel: %+v", what, got)
		}
		if !sameCounts(st.Removed, wantR) {
			t.Errorf("%s.Removed:\n got %+v\nwant %+v", what, st.Removed, wantR)
		}
	}
}
