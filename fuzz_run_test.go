// FuzzPoolOps, its run: the harness that executes the decoded operations
// against a pool and records every push, start and end (fzRun, fzTask).
package smartpool_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

type fzOutcome uint8

func (o fzOutcome) String() string {
	switch o {
	case outRan:
		return "ran"
	case outPanicked:
		return "panicked"
	case outGoexited:
		return "goexited"
	case outDropped:
		return "dropped"
	case outDroppedSuspended:
		return "dropped while suspended"
	case fzSideCancelled:
		return "cancelled"
	case fzSideRefused:
		return "refused"
	}
	return fmt.Sprintf("fzOutcome(%d)", uint8(o))
}

const (
	outRan fzOutcome = iota
	outPanicked
	outGoexited
	outDropped          // removed from a queue by Close: OnEnd received it as dropped
	outDroppedSuspended // a DROP task refused re-entry after Close: Yield did not return; OnEnd received it as dropped
)

type fzEvKind uint8

const (
	evPush    fzEvKind = iota // a task was accepted into queue q with order key (a, b)
	evStart                   // a task's Run began (its first piece)
	evEnd                     // a task reached its outcome (id -1: the gate), before the pool releases its unit and Keyed slot
	evClose                   // Close started: by the test (id -1) or from inside task id
	evChild                   // task id was a child submitted from inside its parent
	evHandoff                 // task from handed off to its heir, task id
	evCancel                  // one worker, pinned: the test cancelled queued task id's context
	evLimit                   // SetLimit(n) succeeded
	evKLimit                  // the Keyed channels' SetLimit(n) succeeded
	evOpen                    // the gate opened
)

// fzEvent is one entry of the run's log. With one worker the log is a true
// linearization: pushes happen before the gate opens or on the one worker
// slot, and a task logs its start and its end on that slot, between the
// poll that took it and the next poll (its unit of the in-flight limit and
// its Keyed slot are released after its end is logged and before that poll).
type fzEvent struct {
	kind     fzEvKind
	id       int
	from     int // evHandoff: the task that handed off
	q        int
	a, b     int64
	n        int  // evLimit, evKLimit
	heir     bool // evPush: through Handoff (no unit of its own; maybe through Requeue)
	slot     int8 // evPush into a Keyed channel: 1 takes a group slot, -1 maybe not (a Requeue during Close)
	resolved bool // evCancel: the test saw the pool count it before going on
	err      error
	state    smartpool.State
}

type fzPanic struct{ id int }

type fzChan struct {
	c     smartpool.Channel
	typed func(t smartpool.Task, s *fzSpec) (shard int, err error)
}

func fzMulti[C smartpool.Channel](n int, mk func() C, submit func(C, smartpool.Task, int) error) fzChan {
	m := channels.NewMulti(n, mk)
	shards := m.Shards()
	return fzChan{c: m, typed: func(t smartpool.Task, s *fzSpec) (int, error) {
		sh := m.Next()
		i := slices.IndexFunc(shards, func(c C) bool { return any(c) == any(sh) })
		return i, submit(sh, t, s.param)
	}}
}

type fzRun struct {
	t       *testing.T
	workers int
	limit   int // Config.Limit; 0: none
	klimit  int // the Keyed channels' limit at New
	specs   []*fzSpec
	o       *smartpool.OwnedPool[string]
	pool    *smartpool.Pool[string]
	chans   [fzChans]fzChan
	keyed   [2]*channels.Keyed[int] // kC, kD
	base    time.Time
	wake    []chan struct{}
	inWait  []atomic.Bool
	phantom atomic.Int32 // tasks submitted to an unknown key, or refused calls, that ran
	running atomic.Int32 // task pieces running user code now
	peak    atomic.Int32 // the most running at once: at most the most workers ever asked for (B5)
	// maxLimit is the highest in-flight limit ever set, raised before the
	// SetLimit call: lowering the limit revokes nothing, so Admitted may
	// exceed the current limit but never this.
	maxLimit atomic.Int64

	// Test goroutine only.
	exact        bool   // the order model applies: see degrade
	woken        []bool // wake channels closed
	target       int    // Stats.Workers: Config.Workers or the last SetWorkers
	maxWorkers   int    // the most workers ever asked for
	curLimit     int    // the in-flight limit in force
	kCur, kMax   int    // the Keyed limit in force; the highest ever set
	cancels      []context.CancelFunc
	cancelled    []bool             // by task: the test cancelled its WithContext context
	pending      map[int]chan error // WithContext submits left waiting for a unit, by task
	unresolved   []int              // exact phase: cancelled queued tasks the pool has not been seen to count
	held         int                // exact phase: the units the pool holds (the gate's and the queued tasks')
	expCancelled [fzChans]uint64    // exact phase: cancellations counted per channel
	opened       bool               // the gate opened
	nCancels     int                // contexts cancelled by the test
	nPending     int                // WithContext submits ever left waiting

	mu        sync.Mutex
	events    []fzEvent                                       // guarded by mu
	accepted  []int8                                          // guarded by mu: 1 accepted, -1 refused, 0 never submitted
	outcomes  [][]fzOutcome                                   // guarded by mu
	ends      [][]smartpool.Outcome                           // guarded by mu: by task, what ChannelParams.OnEnd received for it
	books     [fzChans][smartpool.DroppedDisplaced + 1]uint64 // guarded by mu: every OnEnd call, by channel and outcome
	starts    []int                                           // guarded by mu
	multiNext [fzChans]int                                    // guarded by mu: each Multi's rotation, as the model sees it
	panics    map[string]int                                  // guarded by mu
	problems  []string                                        // guarded by mu: violations seen off the test goroutine

	// Side tasks (opSide): appended by the test goroutine under mu; their
	// records are written under mu by whoever sees them end.
	side       []*fzSideRec
	sideTasks  map[smartpool.Task]*fzSideRec // guarded by mu: the Task values submitted, for OnEnd
	sideAnon   [fzChans][2]int               // guarded by mu: OnEnd calls with a drop, and with the channel's own drop, with a task of Go or Group.Go
	sideCalls  [fzChans][2]int               // guarded by mu: every OnEnd call with a drop, and with the channel's own drop
	sidePanics map[string]int                // guarded by mu: side panics the panic handler saw
	sideWake   chan struct{}                 // closed by the test after Close started: yielded side tasks wake

	// Nested groups (opNest): appended by the test goroutine, read by it.
	nests      []*fzNest
	nestOwners atomic.Int32 // nest owners still spawning their root: each may wait for a unit
	// ownersAtStats is nestOwners as liveStats read it just before its
	// snapshot: the owners that may be waiting in it (test goroutine only).
	ownersAtStats int
	// Owners spawning when the first Close began, plus those launched after:
	// each may hold a unit it took before Close and gives back after the
	// report was built (its push then fails). Test goroutine only.
	ownersAtClose int
	closeBegun    bool

	// Reshaping (opReshape): a pool built with Config.Spare.
	reshaping   bool
	reshaped    [fzChans]bool // test goroutine: a removal of the channel was started
	dropRemoved [fzChans]bool // test goroutine: ... with Drop, which drops even complete-on-close tasks
	rmMu        sync.Mutex
	chStates    [fzChans]fzChState // guarded by rmMu; written by the test goroutine
	removedC    [fzChans][5]uint64 // guarded by rmMu: the counts the channel's removals returned
	rmPending   *fzRemoval         // guarded by rmMu: the removal in flight
}

func newFzRun(t *testing.T, workers int, h fzHeader, specs []*fzSpec) *fzRun {
	n := len(specs)
	r := &fzRun{
		t: t, workers: workers, limit: h.limit, klimit: h.klimit, exact: workers == 1, specs: specs, base: time.Now().Add(time.Hour),
		wake: make([]chan struct{}, n), woken: make([]bool, n), inWait: make([]atomic.Bool, n),
		target: workers, maxWorkers: workers, curLimit: h.limit, kCur: h.klimit, kMax: h.klimit,
		cancels: make([]context.CancelFunc, n), cancelled: make([]bool, n), pending: map[int]chan error{},
		accepted: make([]int8, n), outcomes: make([][]fzOutcome, n), ends: make([][]smartpool.Outcome, n), starts: make([]int, n), panics: map[string]int{},
		sideTasks: map[smartpool.Task]*fzSideRec{}, sidePanics: map[string]int{}, sideWake: make(chan struct{}),
	}
	r.maxLimit.Store(int64(h.limit))
	for i := range r.wake {
		r.wake[i] = make(chan struct{})
	}
	for i := range fzLayout {
		r.chans[i] = r.newChan(i)
	}
	return r
}

// newChan makes channel i of the layout: at New, and again for AddChannel
// after its removal (opReshape).
func (r *fzRun) newChan(i int) fzChan {
	l := fzLayout[i]
	switch {
	case l.side != sideNone:
		return fzChan{c: r.newSideChannel(i, l.side)}
	case l.keyed:
		k, err := channels.NewKeyed[int](r.klimit)
		if err != nil {
			r.t.Fatalf("NewKeyed(%d): %v", r.klimit, err)
		}
		r.keyed[i-fzKC] = k
		return fzChan{c: k, typed: func(t smartpool.Task, s *fzSpec) (int, error) { return 0, k.SubmitTask(s.group, t) }}
	case l.shards > 0 && l.order == fzFIFO:
		return fzMulti(l.shards, channels.NewFIFO, func(c *channels.FIFO, t smartpool.Task, _ int) error { return src(c).Push(t, smartpool.Order{}) })
	case l.shards > 0:
		return fzMulti(l.shards, channels.NewPriority, func(c *channels.Priority, t smartpool.Task, p int) error {
			return c.SubmitTask(fzPriority(p), t)
		})
	case l.order == fzPrio:
		// Typed submits alternate between the channel's own method and
		// Pool.SubmitTask with the ordering option: the same key either way.
		c, key := channels.NewPriority(), l.key
		return fzChan{c: c, typed: func(t smartpool.Task, s *fzSpec) (int, error) {
			if s.id%2 == 1 {
				return 0, r.pool.SubmitTask(key, t, smartpool.WithPriority(fzPriority(s.param)))
			}
			return 0, c.SubmitTask(fzPriority(s.param), t)
		}}
	case l.order == fzDeadline:
		c, key := channels.NewDeadline(), l.key
		return fzChan{c: c, typed: func(t smartpool.Task, s *fzSpec) (int, error) {
			if s.id%2 == 1 {
				return 0, r.pool.SubmitTask(key, t, smartpool.WithDeadline(r.deadline(s.param)))
			}
			return 0, c.SubmitTask(r.deadline(s.param), t)
		}}
	default:
		c := channels.NewFIFO()
		return fzChan{c: c, typed: func(t smartpool.Task, _ *fzSpec) (int, error) { return 0, src(c).Push(t, smartpool.Order{}) }}
	}
}

func (r *fzRun) deadline(p int) time.Time {
	a, b := fzDeadlineKey(p)
	if a == 0 {
		return time.Time{}
	}
	return r.base.Add(time.Duration(b) * time.Millisecond)
}

func (r *fzRun) behavior() *behavior {
	b := &behavior{workers: r.workers, limit: r.limit, levels: make([][]ch, fzLevels), onPanic: r.onPanic}
	for i, l := range fzLayout {
		onEnd := func(t smartpool.Task, o smartpool.Outcome) { r.onEnd(i, t, o) }
		b.levels[l.level] = append(b.levels[l.level], ch{key: l.key, c: r.chans[i].c, coc: l.coc, followup: l.followup, onEnd: onEnd})
	}
	return b
}

// degrade gives up the order model for the rest of a one-worker run, when
// an op makes the order depend on the Go scheduler: SetWorkers above one (a
// second worker runs queued tasks while the gate pins the first), or a unit
// of the in-flight limit freed while a WithContext submit waits for one (a
// cancel, a SetLimit, the gate opening: the waiter's push races the test's
// next ops and the worker). The run goes on with the invariant checks only,
// as a two-worker run does.
func (r *fzRun) degrade() {
	r.exact = false
	r.unresolved = nil
}

func (r *fzRun) problem(format string, args ...any) {
	r.mu.Lock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// end records task id's outcome and logs its end at once.
func (r *fzRun) end(id int, o fzOutcome) {
	r.mu.Lock()
	r.outcomes[id] = append(r.outcomes[id], o)
	r.events = append(r.events, fzEvent{kind: evEnd, id: id})
	r.mu.Unlock()
}

func (r *fzRun) log(ev fzEvent) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

// onEnd is channel ch's OnEnd: it keeps the books of every ending (checked
// against Stats by booksMatch), records each submitted task's ending (checked
// against its outcome by checkLedger), and records a drop as the task's
// outcome. A task that started was dropped as it came back from a Yield
// after Close: OnEnd sees it before its deferred calls run, which then find
// it recorded (fzTask.Run).
func (r *fzRun) onEnd(ch int, t smartpool.Task, o smartpool.Outcome) {
	r.mu.Lock()
	if o < smartpool.Ran || o > smartpool.DroppedDisplaced {
		r.problems = append(r.problems, fmt.Sprintf("%s's OnEnd got %v (%T)", fzLayout[ch].key, o, t))
		r.mu.Unlock()
		return
	}
	r.books[ch][o]++
	r.mu.Unlock()
	if fzLayout[ch].side != sideNone {
		r.sideOnEnd(ch, t, o)
		return
	}
	ft, ok := t.(*fzTask)
	if !ok {
		if o.Dropped() { // the gate and the nests' tasks are never dropped
			r.problem("%s's OnEnd got %T %v, not a submitted task", fzLayout[ch].key, t, o)
		}
		return
	}
	id := ft.s.id
	r.mu.Lock()
	defer r.mu.Unlock()
	if ft.s.ch != ch {
		r.problems = append(r.problems, fmt.Sprintf("task %d of %s ended (%v) through the OnEnd of %s", id, fzLayout[ft.s.ch].key, o, fzLayout[ch].key))
	}
	r.ends[id] = append(r.ends[id], o)
	switch {
	case !o.Dropped():
	case o != smartpool.DroppedOnClose:
		r.problems = append(r.problems, fmt.Sprintf("task %d of %s ended %v: only Close drops in its channel", id, fzLayout[ch].key, o))
	case r.starts[id] > 0:
		r.outcomes[id] = append(r.outcomes[id], outDroppedSuspended)
	default:
		r.outcomes[id] = append(r.outcomes[id], outDropped)
	}
}

// fzEnding is the Outcome OnEnd must give a task whose ledger outcome is o.
func fzEnding(o fzOutcome) smartpool.Outcome {
	switch o {
	case outRan:
		return smartpool.Ran
	case outPanicked:
		return smartpool.Panicked
	case outGoexited:
		return smartpool.Goexited
	case outDropped, outDroppedSuspended:
		return smartpool.DroppedOnClose
	case fzSideCancelled:
		return smartpool.Cancelled
	}
	return 0
}

// booksMatch reports nil once the books OnEnd kept match the final Stats,
// channel by channel: every ending reached OnEnd, as what it was.
func (r *fzRun) booksMatch() error {
	s := r.stats()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range s.Channels {
		b := r.books[i]
		got := [5]uint64{b[smartpool.Ran], b[smartpool.Panicked], b[smartpool.Goexited],
			b[smartpool.DroppedOnClose] + b[smartpool.DroppedLate] + b[smartpool.DroppedDisplaced], b[smartpool.Cancelled]}
		if want := fzStatCounts(c); got != want {
			return fmt.Errorf("OnEnd of %s: ran/panicked/goexited/dropped/cancelled %v; stats %v", c.Key, got, want)
		}
	}
	return nil
}

func (r *fzRun) onPanic(key string, pe *smartpool.PanicError) {
	if sp, ok := pe.Value.(fzSidePanic); ok {
		r.mu.Lock()
		if rec := r.side[sp.id]; fzLayout[rec.ch].key != key {
			r.problems = append(r.problems, fmt.Sprintf("panic of side task %d (channel %s) reported for channel %s", sp.id, fzLayout[rec.ch].key, key))
		}
		r.sidePanics[key]++
		r.mu.Unlock()
		return
	}
	p, ok := pe.Value.(fzPanic)
	switch {
	case !ok:
		r.problem("panic handler got %v from %s, not a task's panic", pe.Value, key)
	case fzLayout[r.specs[p.id].ch].key != key:
		r.problem("panic of task %d (channel %s) reported for channel %s", p.id, fzLayout[r.specs[p.id].ch].key, key)
	case len(pe.Stack) == 0:
		r.problem("panic of task %d reported without a stack", p.id)
	}
	r.mu.Lock()
	r.panics[key]++
	r.mu.Unlock()
}

// push submits s with do and records the result: accepted, with its push
// logged (queue, order key, Keyed slot), or refused.
func (r *fzRun) push(s *fzSpec, typed bool, do func(smartpool.Task) (shard int, err error)) error {
	shard, err := do(&fzTask{r: r, s: s})
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := fzLayout[s.ch].shards; n > 0 {
		// Push rotates exactly like Next; a push refused before it reached
		// the Multi (ErrFull, ErrClosed, a context) did not move the
		// rotation, and one the Multi refused (only during Close) no push
		// accepted later depends on.
		if typed {
			r.multiNext[s.ch] = shard + 1
		} else if err == nil {
			shard = r.multiNext[s.ch] % n
			r.multiNext[s.ch]++
		}
	}
	if err != nil {
		r.accepted[s.id] = -1
		return err
	}
	r.accepted[s.id] = 1
	a, b := fzKey(s.ch, s.param, typed)
	ev := fzEvent{kind: evPush, id: s.id, q: fzFirst[s.ch] + shard, a: a, b: b}
	if fzLayout[s.ch].keyed {
		ev.slot = 1
	}
	r.events = append(r.events, ev)
	return nil
}

// submit queues s by key or through its channel's own method. A FIFO's own
// method is Push, which the pool calls for tasks it admitted already; in a
// pool with an in-flight limit a typed FIFO submit goes by key instead, so
// that it takes its unit (the order is the same).
func (r *fzRun) submit(s *fzSpec, typed bool) error {
	if s.ch < 0 {
		err := r.pool.SubmitTask("nope", &fzTask{r: r, s: s})
		r.mu.Lock()
		r.accepted[s.id] = -1
		r.mu.Unlock()
		return err
	}
	l := fzLayout[s.ch]
	if typed && r.limit > 0 && l.order == fzFIFO && !l.keyed {
		typed = false
	}
	return r.push(s, typed, func(t smartpool.Task) (int, error) {
		if typed {
			return r.chans[s.ch].typed(t, s)
		}
		return 0, r.pool.SubmitTask(l.key, t)
	})
}

func (r *fzRun) wakeTask(id int) {
	if !r.woken[id] {
		r.woken[id] = true
		close(r.wake[id])
	}
}

// alivePending counts the WithContext submits left waiting that have not
// returned.
func (r *fzRun) alivePending() int {
	n := 0
	for _, res := range r.pending {
		if len(res) == 0 {
			n++
		}
	}
	return n
}

// sample checks a Stats snapshot taken from inside a task.
func (r *fzRun) sample() {
	if r.limit == 0 {
		return
	}
	s := r.pool.Stats()
	if m := r.maxLimit.Load(); s.Admitted < 0 || int64(s.Admitted) > m || s.Waiting < 0 {
		r.problem("Stats inside a task: %d admitted, %d waiting; no limit above %d was ever set", s.Admitted, s.Waiting, m)
	}
}

// fzTask is a submitted task. It never asserts (t.Fatal or require in a task
// would only Goexit the goroutine running it): it logs and records, and the
// test goroutine checks.
type fzTask struct {
	r *fzRun
	s *fzSpec
}

// enter and leave bracket a piece of a task: its run up to its first Yield,
// between two Yields, or after its last one.
func (r *fzRun) enter() {
	n := r.running.Add(1)
	for p := r.peak.Load(); n > p && !r.peak.CompareAndSwap(p, n); p = r.peak.Load() {
	}
}

func (r *fzRun) leave() { r.running.Add(-1) }

func (t *fzTask) Run(ctx context.Context) {
	r, s := t.r, t.s
	r.enter()
	r.mu.Lock()
	r.starts[s.id]++
	r.events = append(r.events, fzEvent{kind: evStart, id: s.id})
	r.mu.Unlock()
	settled := false
	defer func() {
		if !settled {
			// Unwinding without having reached its end: a panic or Goexit
			// of ours is recorded before it starts, so this is the pool
			// ending a DROP task that re-entered after Close, which OnEnd
			// recorded already, before these deferred calls.
			r.mu.Lock()
			if outs := r.outcomes[s.id]; len(outs) != 1 || outs[0] != outDroppedSuspended {
				r.problems = append(r.problems, fmt.Sprintf("task %d dropped after a yield: outcomes %v as its deferred calls run, want OnEnd's alone", s.id, outs))
			}
			r.events = append(r.events, fzEvent{kind: evEnd, id: s.id})
			r.mu.Unlock()
		}
	}()
	if c := s.child; c != nil {
		err := r.submit(c, false)
		r.log(fzEvent{kind: evChild, id: c.id, err: err, state: r.pool.State()})
	}
	if s.handoff != nil && !s.late {
		t.handoff(ctx)
	}
	if s.closer {
		_, err := r.o.Close(ctx)
		r.log(fzEvent{kind: evClose, id: s.id, err: err})
	}
	for range s.yields {
		r.leave()
		smartpool.Yield(ctx, func() {
			if s.block {
				r.inWait[s.id].Store(true)
				<-r.wake[s.id]
				r.inWait[s.id].Store(false)
			}
		})
		r.enter()
	}
	if s.handoff != nil && s.late {
		t.handoff(ctx)
	}
	r.leave()
	settled = true
	switch s.final {
	case 1:
		r.end(s.id, outPanicked)
		panic(fzPanic{s.id})
	case 2:
		r.end(s.id, outGoexited)
		runtime.Goexit()
	default:
		r.end(s.id, outRan)
	}
}

// handoff passes the task's unit to its heir with Pool.Handoff and records
// the result, then samples Stats from inside the task.
func (t *fzTask) handoff(ctx context.Context) {
	r, h := t.r, t.s.handoff
	key := "nope"
	if h.ch >= 0 {
		key = fzLayout[h.ch].key
	}
	err := r.pool.HandoffTask(ctx, key, &fzTask{r: r, s: h})
	st := r.pool.State()
	r.mu.Lock()
	if err == nil && h.ch < 0 {
		r.problems = append(r.problems, fmt.Sprintf("Handoff of task %d to an unknown key accepted", t.s.id))
		err = errors.New("accepted")
	}
	if err == nil {
		r.accepted[h.id] = 1
		a, b := fzKey(h.ch, 0, false)
		ev := fzEvent{kind: evPush, id: h.id, q: fzFirst[h.ch], a: a, b: b, heir: true}
		if fzLayout[h.ch].keyed {
			// Into group 0 by Push, unless Close had started: then maybe
			// by Requeue, outside the groups.
			ev.slot = 1
			if st != smartpool.Running {
				ev.slot = -1
			}
		}
		r.events = append(r.events, ev)
	} else {
		r.accepted[h.id] = -1
	}
	r.events = append(r.events, fzEvent{kind: evHandoff, id: h.id, from: t.s.id, err: err, state: st})
	r.mu.Unlock()
	r.sample()
}

// fzLong bounds every wait of the fuzz targets. It is below the fuzz
// worker's own limit of 10 s per input (internal/fuzz panics "deadlocked!"
// in the worker process, whose output the coordinator discards: a hang
// would be reported without a word about where), and each input runs two
// pools; a healthy run waits microseconds to milliseconds.
const fzLong = 3 * time.Second

// fzWait polls cond until it returns nil, failing with its last error and
// every goroutine's stack after fzLong.
func fzWait(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(fzLong)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			var buf bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
			t.Fatalf("%s: not within %v: %v\n%s", what, fzLong, err, buf.String())
		}
		runtime.Gosched()
	}
}

// fzRecv receives from c, failing after fzLong with every goroutine's stack.
func fzRecv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(fzLong):
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		t.Fatalf("%s: not within %v\n%s", what, fzLong, buf.String())
		panic("unreachable")
	}
}

// ghostLocked reports whether accepted task id may have been cancelled: the
// test cancelled its context and it never started. Such a task ends with no
// outcome of its own: the pool counts it in ChannelStats.Cancelled.
func (r *fzRun) ghostLocked(id int) bool { return r.cancelled[id] && r.starts[id] == 0 }

// settled reports nil once the side channels are empty and every accepted
// task has finished, waits for a wake-up nobody sent yet, waits in a Keyed
// channel behind its group's limit (the log shows that many of the group in progress: they hold their
// slots at least that long), or was cancelled and counted so (the channels'
// Cancelled counts equal the tasks cancelled and never started: one that a
// worker took before the cancellation would start soon).
func (r *fzRun) settled() error {
	s := r.stats()
	r.mu.Lock()
	defer r.mu.Unlock()
	var ghosts [fzChans]uint64
	inProgress := r.keyedRunningLocked(nil)
	for id, a := range r.accepted {
		sp := r.specs[id]
		switch {
		case a != 1 || len(r.outcomes[id]) > 0:
		case r.ghostLocked(id):
			ghosts[sp.ch]++
		case r.starts[id] == 0 && fzLayout[sp.ch].keyed && inProgress[[2]int{sp.ch, sp.group}] >= r.kCur:
		case !r.inWait[id].Load() || r.woken[id]:
			var keyed any
			if fzLayout[sp.ch].keyed {
				keyed = r.keyed[sp.ch-fzKC].Stats()
			}
			return fmt.Errorf("task %d has neither finished nor suspended on its wake channel (started %d; its channel: %+v %+v; pool: %d workers, %d suspended, %d wake-ups)",
				id, r.starts[id], s.Channels[sp.ch], keyed, s.Workers, s.Suspended, s.Wakeups)
		}
	}
	for ch := fzSL; ch <= fzSR; ch++ { // side tasks never wait: once polled they end
		if q := s.Channels[ch].Queued; q != 0 {
			return fmt.Errorf("%s still holds %d side tasks", s.Channels[ch].Key, q)
		}
	}
	// A closer task may have started Close before the test's own: a nest's
	// spawn it refused cancelled the nest's group, whose queued tasks are
	// then skipped and counted cancelled (fzNestChans).
	var nestSlack [fzChans]uint64
	if r.pool.State() >= smartpool.Closing {
		var unused [fzChans][5]uint64
		nestSlack = r.nestCounts(&unused)
	}
	for i, c := range s.Channels {
		if c.Cancelled < ghosts[i] || c.Cancelled > ghosts[i]+nestSlack[i] {
			return fmt.Errorf("%s counts %d cancelled; %d were cancelled and have not started", c.Key, c.Cancelled, ghosts[i])
		}
	}
	return nil
}

func (r *fzRun) allDone() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, a := range r.accepted {
		if a == 1 && len(r.outcomes[id]) == 0 && !r.ghostLocked(id) {
			return fmt.Errorf("accepted task %d has no outcome", id)
		}
	}
	return nil
}

// counts returns the ledger's outcomes per channel: ran, panicked, goexited,
// dropped (both kinds), cancelled (accepted, cancelled by the test, never
// started). The gate ran once.
func (r *fzRun) counts() (c [fzChans][5]uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, outs := range r.outcomes {
		ch := r.specs[id].ch
		if ch < 0 { // an unknown-key task has none unless checkLedger fails
			continue
		}
		for _, o := range outs {
			c[ch][min(int(o), 3)]++
		}
		if r.accepted[id] == 1 && len(outs) == 0 && r.ghostLocked(id) {
			c[ch][4]++
		}
	}
	for _, rec := range r.side {
		switch o, ok := rec.endingLocked(); {
		case !ok || o == fzSideRefused:
		case o == fzSideCancelled:
			c[rec.ch][4]++
		default:
			c[rec.ch][min(int(o), 3)]++
		}
	}
	c[fzGate][0] = 1
	return c
}

// countsWithNests is counts with the nests' tasks that ran, and the most
// of their other tasks each channel may count as cancelled.
func (r *fzRun) countsWithNests() (c [fzChans][5]uint64, slack [fzChans]uint64) {
	c = r.counts()
	return c, r.nestCounts(&c)
}
