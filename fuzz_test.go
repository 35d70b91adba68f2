package smartpool_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/scheduler"
)

// H1 FuzzPoolOps and H2 FuzzConfig (TESTPLAN §5.H). Both run their seed
// corpus as ordinary tests; CI fuzzes each for 60 s with
// -fuzzminimizetime=10s, and failing inputs are committed under
// testdata/fuzz/<Target>/.

// ---------------------------------------------------------------------------
// H1 FuzzPoolOps: the fixed behavior

type fzOrder uint8

const (
	fzFIFO     fzOrder = iota
	fzPrio             // channels.Priority: higher first, then submission order
	fzDeadline         // channels.Deadline: earliest first, then submission order
)

// fzChanSpec is one channel of FuzzPoolOps' fixed behavior.
type fzChanSpec struct {
	key      string
	level    int
	coc      bool
	order    fzOrder
	shards   int    // 0: a plain channel; n: a Multi of n shards
	followup string // "" means itself
}

// fzLayout lists the channels in configuration order: levels highest first,
// COC and DROP mixed, followups that stay or go up a level (one DROP channel
// follows up into a COC one). No followup goes into a Multi, so a Multi's
// rotation moves only with submits and the model knows every task's shard.
// The gate, alone on the lowest level, pins the worker.
var fzLayout = [...]fzChanSpec{
	{key: "hiF", level: 0, coc: true},
	{key: "hiP", level: 0, order: fzPrio},
	{key: "midD", level: 1, coc: true, order: fzDeadline, followup: "hiF"},
	{key: "midF", level: 1, followup: "hiP"},
	{key: "midM", level: 1, coc: true, shards: 2, followup: "hiF"},
	{key: "loP", level: 2, coc: true, order: fzPrio, followup: "midD"},
	{key: "loM", level: 2, order: fzPrio, shards: 3, followup: "midF"},
	{key: "loF", level: 2, followup: "hiF"},
	{key: "gate", level: 3, coc: true},
}

const (
	fzChans  = len(fzLayout)
	fzGate   = fzChans - 1 // ops address channels 0..fzGate-1
	fzLevels = 4
)

var (
	fzFirst   [fzChans + 1]int // channel -> global number of its queue 0
	fzQueueCh []int            // global queue -> channel
)

func init() {
	for i, c := range fzLayout {
		n := max(c.shards, 1)
		fzFirst[i+1] = fzFirst[i] + n
		for range n {
			fzQueueCh = append(fzQueueCh, i)
		}
	}
}

// fzPriority maps a parameter to a priority, extremes included.
func fzPriority(p int) int {
	return [...]int{0, 1, -1, 2, -2, math.MaxInt, math.MinInt, 1}[p%8]
}

// fzDeadlineKey maps a parameter to a deadline class and offset: class 0 is
// the zero Time, class 1 time.Now() (Push), class 2 the run's base (an hour
// ahead) plus b ms. Within a class, smaller b first, then submission order.
// (Push's time.Now() readings are taken in submission order: the model
// assumes the wall clock does not step back during a run.)
func fzDeadlineKey(p int) (a, b int64) {
	switch p % 8 {
	case 0:
		return 0, 0
	case 7:
		return 2, 1e12 // about 30 years ahead
	}
	return 2, int64(p % 4)
}

// fzKey is the order key the model gives a task queued in channel ch, by key
// (typed false: the channel's Push) or through its own submit method.
func fzKey(ch, param int, typed bool) (a, b int64) {
	switch fzLayout[ch].order {
	case fzPrio:
		if typed {
			return int64(^fzPriority(param)), 0 // ^ reverses the order without overflow
		}
		return ^0, 0 // priority 0
	case fzDeadline:
		if typed {
			return fzDeadlineKey(param)
		}
		return 1, 0
	}
	return 0, 0
}

// ---------------------------------------------------------------------------
// H1: decoding

type fzOpKind uint8

const (
	opSubmit         fzOpKind = iota
	opWake                    // close task i's wake channel (idempotent)
	opClose                   // the first: the phase boundary; later: a concurrent second Close
	opCloseCancelled          // after the first: Close with a cancelled context
	opUnknown                 // submit to a key no level lists
	opNil                     // nil submits by key and through the channel
	opStats                   // read Stats and check its invariants
)

type fzOp struct {
	kind fzOpKind
	id   int // opSubmit, opWake: the task
	ch   int // opNil: the channel
}

// fzSpec is one task: where it goes and what it does.
type fzSpec struct {
	id     int
	ch     int // channel index; -1 is the unknown key (children only)
	typed  bool
	param  int // priority or deadline parameter; a child's target
	yields int
	block  bool  // each wait blocks until opWake closes the task's wake channel
	final  uint8 // 0 return, 1 panic, 2 runtime.Goexit
	closer bool  // calls Close with its own context before yielding
	child  *fzSpec
}

const (
	fzMaxOps   = 48
	fzMaxTasks = 40
)

// Kind byte of a submit op.
const (
	kYield1 = 1
	kYield2 = 2
	kYield3 = 3
	kPanic  = 1 << 2
	kGoexit = 2 << 2
	kBlock  = 1 << 4
	kChild  = 1 << 5 // submits a child task by key to channel param%9 (8: unknown key)
	kCloser = 1 << 6
	kTyped  = 1 << 7
)

// fzDecode reads a header byte (bit 0: close while the gate still pins the
// workers) and then ops. A submit op is 3 bytes: op, channel|param<<3, kind.
func fzDecode(data []byte) (pinnedClose bool, ops []fzOp, specs []*fzSpec) {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	pinnedClose = next()&1 != 0
	for len(data) > 0 && len(ops) < fzMaxOps {
		b := next()
		switch b % 16 {
		case 6, 7:
			i := int(next())
			if len(specs) > 0 {
				ops = append(ops, fzOp{kind: opWake, id: i % len(specs)})
			}
		case 8, 9:
			ops = append(ops, fzOp{kind: opClose})
		case 10:
			ops = append(ops, fzOp{kind: opCloseCancelled})
		case 11:
			ops = append(ops, fzOp{kind: opUnknown})
		case 12:
			ops = append(ops, fzOp{kind: opNil, ch: int(b>>4) % fzGate})
		case 13:
			ops = append(ops, fzOp{kind: opStats})
		default:
			cb, kb := next(), next()
			if len(specs) >= fzMaxTasks {
				continue
			}
			s := &fzSpec{
				id: len(specs), ch: int(cb) % fzGate, param: int(cb >> 3), typed: kb&kTyped != 0,
				yields: int(kb & 3), final: ((kb >> 2) & 3) % 3, block: kb&kBlock != 0, closer: kb&kCloser != 0,
			}
			specs = append(specs, s)
			if kb&kChild != 0 {
				c := &fzSpec{id: len(specs), ch: s.param % (fzGate + 1)}
				if c.ch == fzGate {
					c.ch = -1
				}
				s.child = c
				specs = append(specs, c)
			}
			ops = append(ops, fzOp{kind: opSubmit, id: s.id})
		}
	}
	return pinnedClose, ops, specs
}

// fzSeed builds FuzzPoolOps inputs readably.
type fzSeed []byte

func fzStart(pinnedClose bool) fzSeed {
	if pinnedClose {
		return fzSeed{1}
	}
	return fzSeed{0}
}

func (s fzSeed) submit(ch, param int, kind byte) fzSeed {
	return append(s, 0, byte(ch%fzGate|param<<3), kind)
}
func (s fzSeed) wake(i int) fzSeed       { return append(s, 6, byte(i)) }
func (s fzSeed) close() fzSeed           { return append(s, 8) }
func (s fzSeed) closeCancelled() fzSeed  { return append(s, 10) }
func (s fzSeed) unknown() fzSeed         { return append(s, 11) }
func (s fzSeed) nilSubmit(ch int) fzSeed { return append(s, byte(12|ch<<4)) }
func (s fzSeed) stats() fzSeed           { return append(s, 13) }
func (s fzSeed) each(f func(fzSeed, int) fzSeed, n int) fzSeed {
	for i := range n {
		s = f(s, i)
	}
	return s
}

// ---------------------------------------------------------------------------
// H1: one run

type fzOutcome uint8

const (
	outRan fzOutcome = iota
	outPanicked
	outGoexited
	outDropped          // removed from a queue by Close: OnDrop received it
	outDroppedSuspended // a DROP task refused re-entry after Close: Yield did not return
)

type fzEvKind uint8

const (
	evPush  fzEvKind = iota // a task was accepted into queue q with order key (a, b)
	evStart                 // a task's Run began (its first piece)
	evClose                 // Close started: by the test (id -1) or from inside task id
	evChild                 // task id was a child submitted from inside its parent
)

// fzEvent is one entry of the run's log. With one worker the log is a true
// linearization: pushes happen before the gate opens or on the one worker
// slot, and a task logs its start on that slot before the next poll.
type fzEvent struct {
	kind  fzEvKind
	id    int
	q     int
	a, b  int64
	err   error
	state smartpool.State
}

type fzPanic struct{ id int }

type fzChan struct {
	c     smartpool.Channel
	typed func(t smartpool.Task, param int) (shard int, err error)
}

func fzMulti[C smartpool.Channel](n int, mk func() C, submit func(C, smartpool.Task, int) error) fzChan {
	m := channels.NewMulti(n, mk)
	shards := m.Shards()
	return fzChan{c: m, typed: func(t smartpool.Task, p int) (int, error) {
		s := m.Next()
		i := slices.IndexFunc(shards, func(c C) bool { return any(c) == any(s) })
		return i, submit(s, t, p)
	}}
}

type fzRun struct {
	t       *testing.T
	workers int
	exact   bool // one worker: the log is checked against the order model
	specs   []*fzSpec
	o       *smartpool.OwnedPool[string]
	pool    *smartpool.Pool[string]
	chans   [fzChans]fzChan
	base    time.Time
	wake    []chan struct{}
	woken   []bool // test goroutine only
	inWait  []atomic.Bool
	phantom atomic.Int32 // tasks submitted to an unknown key that ran
	running atomic.Int32 // task pieces running user code now
	peak    atomic.Int32 // the most running at once: at most workers (B5)

	mu        sync.Mutex
	events    []fzEvent      // guarded by mu
	accepted  []int8         // guarded by mu: 1 accepted, -1 refused, 0 never submitted
	outcomes  [][]fzOutcome  // guarded by mu
	multiNext [fzChans]int   // guarded by mu: each Multi's rotation, as the model sees it
	panics    map[string]int // guarded by mu
	problems  []string       // guarded by mu: violations seen off the test goroutine
}

func newFzRun(t *testing.T, workers int, specs []*fzSpec) *fzRun {
	r := &fzRun{
		t: t, workers: workers, exact: workers == 1, specs: specs, base: time.Now().Add(time.Hour),
		wake: make([]chan struct{}, len(specs)), woken: make([]bool, len(specs)), inWait: make([]atomic.Bool, len(specs)),
		accepted: make([]int8, len(specs)), outcomes: make([][]fzOutcome, len(specs)), panics: map[string]int{},
	}
	for i := range r.wake {
		r.wake[i] = make(chan struct{})
	}
	for i, l := range fzLayout {
		switch {
		case l.shards > 0 && l.order == fzFIFO:
			r.chans[i] = fzMulti(l.shards, channels.NewFIFO, func(c *channels.FIFO, t smartpool.Task, _ int) error { return c.Push(t) })
		case l.shards > 0:
			r.chans[i] = fzMulti(l.shards, channels.NewPriority, func(c *channels.Priority, t smartpool.Task, p int) error {
				return c.SubmitTask(fzPriority(p), t)
			})
		case l.order == fzPrio:
			c := channels.NewPriority()
			r.chans[i] = fzChan{c: c, typed: func(t smartpool.Task, p int) (int, error) { return 0, c.SubmitTask(fzPriority(p), t) }}
		case l.order == fzDeadline:
			c := channels.NewDeadline()
			r.chans[i] = fzChan{c: c, typed: func(t smartpool.Task, p int) (int, error) { return 0, c.SubmitTask(r.deadline(p), t) }}
		default:
			c := channels.NewFIFO()
			r.chans[i] = fzChan{c: c, typed: func(t smartpool.Task, _ int) (int, error) { return 0, c.Push(t) }}
		}
	}
	return r
}

func (r *fzRun) deadline(p int) time.Time {
	a, b := fzDeadlineKey(p)
	if a == 0 {
		return time.Time{}
	}
	return r.base.Add(time.Duration(b) * time.Millisecond)
}

func (r *fzRun) behavior() *behavior {
	b := &behavior{workers: r.workers, levels: make([][]ch, fzLevels), onPanic: r.onPanic}
	for i, l := range fzLayout {
		b.levels[l.level] = append(b.levels[l.level], ch{key: l.key, c: r.chans[i].c, coc: l.coc, followup: l.followup, onDrop: r.onDrop})
	}
	return b
}

func (r *fzRun) problem(format string, args ...any) {
	r.mu.Lock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *fzRun) record(id int, o fzOutcome) {
	r.mu.Lock()
	r.outcomes[id] = append(r.outcomes[id], o)
	r.mu.Unlock()
}

func (r *fzRun) log(ev fzEvent) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

func (r *fzRun) onDrop(t smartpool.Task) {
	ft, ok := t.(*fzTask)
	if !ok {
		r.problem("OnDrop got %T, not a submitted task", t)
		return
	}
	r.record(ft.s.id, outDropped)
}

func (r *fzRun) onPanic(key string, pe *smartpool.PanicError) {
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

// submit queues s by key or through its channel's own method and records
// the result; an accepted task's push is logged with its queue and order key.
func (r *fzRun) submit(s *fzSpec, typed bool) error {
	task := &fzTask{r: r, s: s}
	if s.ch < 0 {
		err := r.pool.SubmitTask("nope", task)
		r.mu.Lock()
		r.accepted[s.id] = -1
		r.mu.Unlock()
		return err
	}
	var shard int
	var err error
	if typed {
		shard, err = r.chans[s.ch].typed(task, s.param)
	} else {
		err = r.pool.SubmitTask(fzLayout[s.ch].key, task)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := fzLayout[s.ch].shards; n > 0 {
		// Push rotates exactly like Next; a refused push may or may not
		// have moved the rotation, but no push is accepted after a refusal.
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
	r.events = append(r.events, fzEvent{kind: evPush, id: s.id, q: fzFirst[s.ch] + shard, a: a, b: b})
	return nil
}

func (r *fzRun) wakeTask(id int) {
	if !r.woken[id] {
		r.woken[id] = true
		close(r.wake[id])
	}
}

// fzTask is a submitted task. It never asserts (TESTPLAN §4.2): it logs and
// records, and the test goroutine checks.
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
	r.log(fzEvent{kind: evStart, id: s.id})
	settled := false
	defer func() {
		if !settled {
			// Unwinding without having reached its end: a panic or Goexit
			// of ours is recorded before it starts, so this is the pool
			// ending a DROP task that re-entered after Close.
			r.record(s.id, outDroppedSuspended)
		}
	}()
	if c := s.child; c != nil {
		err := r.submit(c, false)
		r.log(fzEvent{kind: evChild, id: c.id, err: err, state: r.pool.State()})
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
	r.leave()
	settled = true
	switch s.final {
	case 1:
		r.record(s.id, outPanicked)
		panic(fzPanic{s.id})
	case 2:
		r.record(s.id, outGoexited)
		runtime.Goexit()
	default:
		r.record(s.id, outRan)
	}
}

// fzWait polls cond until it returns nil, failing with its last error and
// every goroutine's stack after long.
func fzWait(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(long)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			var buf bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
			t.Fatalf("%s: not within %v: %v\n%s", what, long, err, buf.String())
		}
		runtime.Gosched()
	}
}

// settled reports nil once every accepted task has finished or waits for a
// wake-up nobody sent yet.
func (r *fzRun) settled() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, a := range r.accepted {
		if a == 1 && len(r.outcomes[id]) == 0 && (!r.inWait[id].Load() || r.woken[id]) {
			return fmt.Errorf("task %d has neither finished nor suspended on its wake channel", id)
		}
	}
	return nil
}

func (r *fzRun) allDone() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, a := range r.accepted {
		if a == 1 && len(r.outcomes[id]) == 0 {
			return fmt.Errorf("accepted task %d has no outcome", id)
		}
	}
	return nil
}

// counts returns the ledger's outcomes per channel: ran, panicked, goexited,
// dropped (both kinds). The gate ran once.
func (r *fzRun) counts() (c [fzChans][4]uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, outs := range r.outcomes {
		for _, o := range outs {
			if ch := r.specs[id].ch; ch >= 0 { // an unknown-key child has none unless checkLedger fails
				c[ch][min(int(o), 3)]++
			}
		}
	}
	c[fzGate][0] = 1
	return c
}

func fzStatCounts(s smartpool.ChannelStats[string]) [4]uint64 {
	return [4]uint64{s.Ran, s.Panicked, s.Goexited, s.Dropped}
}

// checkShape checks what every Stats snapshot must satisfy.
func (r *fzRun) checkShape(s *smartpool.Stats[string]) error {
	if s.Workers != r.workers || len(s.Channels) != fzChans || s.Suspended < 0 {
		return fmt.Errorf("stats: %d workers, %d channels, %d suspended", s.Workers, len(s.Channels), s.Suspended)
	}
	for i, c := range s.Channels {
		l := fzLayout[i]
		if c.Key != l.key || c.Level != l.level || c.CompleteOnClose != l.coc || c.Queued < 0 {
			return fmt.Errorf("stats channel %d: %+v, want %s on level %d, coc %v", i, c, l.key, l.level, l.coc)
		}
		if l.coc && c.Dropped != 0 {
			return fmt.Errorf("complete-on-close channel %s dropped %d tasks", l.key, c.Dropped)
		}
	}
	return nil
}

// checkPinned checks a snapshot taken while the only worker is pinned:
// nothing has run and every accepted task is queued.
func (r *fzRun) checkPinned(s *smartpool.Stats[string]) error {
	var queued [fzChans]int
	r.mu.Lock()
	for _, ev := range r.events {
		if ev.kind == evPush {
			queued[fzQueueCh[ev.q]]++
		}
	}
	r.mu.Unlock()
	for i, c := range s.Channels {
		if c.Queued != queued[i] || c.Finished() != 0 {
			return fmt.Errorf("pinned stats of %s: %d queued, %d finished; want %d queued, none finished", c.Key, c.Queued, c.Finished(), queued[i])
		}
	}
	return nil
}

// checkReport checks the report of the first Close to return. Every
// complete-on-close task has finished by then, so those channels match the
// ledger exactly; DROP channels may still see suspended tasks dropped later.
func (r *fzRun) checkReport(rep *smartpool.Report[string]) {
	t := r.t
	if rep == nil {
		t.Fatal("Close returned a nil report")
	}
	if st := r.pool.State(); st != smartpool.Closed {
		t.Fatalf("State after Close returned: %v", st)
	}
	select {
	case <-r.o.Done():
	default:
		t.Fatal("Done not closed after Close returned")
	}
	if err := r.checkShape(rep); err != nil {
		t.Fatalf("report: %v", err)
	}
	led := r.counts()
	r.mu.Lock()
	for id, a := range r.accepted {
		if a == 1 && fzLayout[r.specs[id].ch].coc && len(r.outcomes[id]) == 0 {
			t.Errorf("Close returned before complete-on-close task %d (%s) finished", id, fzLayout[r.specs[id].ch].key)
		}
	}
	r.mu.Unlock()
	for i, c := range rep.Channels {
		got := fzStatCounts(c)
		if c.Queued != 0 {
			t.Errorf("report: %s still has %d queued", c.Key, c.Queued)
		}
		for k := range got {
			if fzLayout[i].coc && got[k] != led[i][k] || got[k] > led[i][k] {
				t.Errorf("report for %s: ran/panicked/goexited/dropped %v, ledger %v", c.Key, got, led[i])
				break
			}
		}
	}
}

// countsMatch compares a snapshot with the ledger once everything ended.
func (r *fzRun) countsMatch() error {
	s := r.pool.Stats()
	if err := r.checkShape(s); err != nil {
		return err
	}
	if s.Suspended != 0 {
		return fmt.Errorf("%d tasks still suspended", s.Suspended)
	}
	led := r.counts()
	for i, c := range s.Channels {
		if got := fzStatCounts(c); got != led[i] || c.Queued != 0 {
			return fmt.Errorf("stats for %s: ran/panicked/goexited/dropped %v, %d queued; ledger %v", c.Key, got, c.Queued, led[i])
		}
	}
	return nil
}

// checkLedger: each accepted task has exactly one outcome and started at most
// once, and it started exactly when it was not dropped from a queue;
// refused ones never ran; complete-on-close tasks are never dropped; the
// panic handler saw each panic once, for the task's channel; no more task
// pieces ran at once than there are workers.
func (r *fzRun) checkLedger() {
	t := r.t
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.problems {
		t.Error(p)
	}
	starts := make([]int, len(r.specs))
	for _, ev := range r.events {
		switch {
		case ev.kind == evStart:
			starts[ev.id]++
		case ev.kind == evClose && ev.id >= 0 && !errors.Is(ev.err, smartpool.ErrCloseFromTask):
			t.Errorf("Close from inside task %d returned %v, want ErrCloseFromTask", ev.id, ev.err)
		case ev.kind == evChild && !r.exact:
			// With two workers a child races Close: only the error kinds
			// are known. (With one, checkOrder knows each result.)
			unknown := r.specs[ev.id].ch < 0
			switch {
			case errors.Is(ev.err, smartpool.ErrClosed):
				if ev.state < smartpool.Closing {
					t.Errorf("child %d refused with ErrClosed while the pool was %v", ev.id, ev.state)
				}
			case ev.err == nil && unknown, ev.err != nil && !(unknown && errors.Is(ev.err, smartpool.ErrUnknownKey)):
				t.Errorf("child %d (unknown key %v): Submit returned %v", ev.id, unknown, ev.err)
			}
		}
	}
	panicked := map[string]int{}
	for id, outs := range r.outcomes {
		s := r.specs[id]
		switch {
		case r.accepted[id] != 1 && (len(outs) != 0 || starts[id] != 0):
			t.Errorf("task %d was not accepted (%d) but has outcomes %v and %d starts", id, r.accepted[id], outs, starts[id])
		case r.accepted[id] != 1:
		case len(outs) != 1 || starts[id] > 1:
			t.Errorf("task %d (%s): outcomes %v, %d starts; want exactly one outcome", id, fzLayout[s.ch].key, outs, starts[id])
		case (outs[0] == outDropped) != (starts[id] == 0):
			t.Errorf("task %d (%s): outcome %v after %d starts", id, fzLayout[s.ch].key, outs[0], starts[id])
		case fzLayout[s.ch].coc && outs[0] >= outDropped:
			t.Errorf("complete-on-close task %d (%s) was dropped (%v)", id, fzLayout[s.ch].key, outs[0])
		case outs[0] == outPanicked:
			panicked[fzLayout[s.ch].key]++
		}
	}
	for k, n := range r.panics {
		if panicked[k] != n {
			t.Errorf("panic handler saw %d panics from %s, ledger %d", n, k, panicked[k])
		}
	}
	for k, n := range panicked {
		if r.panics[k] != n {
			t.Errorf("ledger has %d panics from %s, handler saw %d", n, k, r.panics[k])
		}
	}
	if n := r.phantom.Load(); n != 0 {
		t.Errorf("%d tasks submitted to an unknown key ran", n)
	}
	if p := r.peak.Load(); p > int32(r.workers) {
		t.Errorf("%d task pieces ran at once on %d workers", p, r.workers)
	}
}

// ---------------------------------------------------------------------------
// H1: the reference model of one worker (levels highest first, each level's
// queues in rotation from the worker's cursor, FIFO / priority / deadline
// order inside a queue, a Multi's shards as separate queues).
//
// A yield makes the exact order intractable: the resumption is pushed by the
// task's own goroutine while the worker goes on, so whether the worker polls
// it first, and how the rotation cursor moves, is a race. So the predicted
// order is checked exactly up to the start of the first task that yields;
// after that, each start is checked against what stays exact with one
// worker: it is its queue's head among queued tasks (resumptions never
// reorder other tasks), and no higher level holds a queued task.

type fzItem struct {
	id   int
	a, b int64
	seq  int
}

type fzModel struct {
	queues [][]fzItem // per global queue
	cursor [fzLevels]int
	exact  bool
	closed bool
	seq    int
}

func (m *fzModel) head(q int) int {
	best := -1
	for i, it := range m.queues[q] {
		if best < 0 {
			best = i
			continue
		}
		b := m.queues[q][best]
		if it.a < b.a || it.a == b.a && (it.b < b.b || it.b == b.b && it.seq < b.seq) {
			best = i
		}
	}
	return best
}

func fzLevelRange(l int) (first, n int) {
	for q, c := range fzQueueCh {
		if fzLayout[c].level == l {
			if n == 0 {
				first = q
			}
			n++
		}
	}
	return first, n
}

// pick is worker.find with HighestFirst and pollLevel's rotation.
func (m *fzModel) pick() int {
	for l := range fzLevels {
		first, n := fzLevelRange(l)
		for k := range n {
			i := (m.cursor[l] + k) % n
			if len(m.queues[first+i]) > 0 {
				m.cursor[l] = (i + 1) % n
				return first + i
			}
		}
	}
	return -1
}

func (m *fzModel) start(id int) error {
	q, at := -1, -1
	for i := range m.queues {
		for j, it := range m.queues[i] {
			if it.id == id {
				q, at = i, j
			}
		}
	}
	if q < 0 {
		return fmt.Errorf("task %d started but is not queued (dropped at close, refused, or started twice)", id)
	}
	if m.exact {
		if p := m.pick(); p != q || m.head(p) != at {
			return fmt.Errorf("task %d (queue %d) started; the model expected task %d (queue %d)", id, q, m.queues[p][m.head(p)].id, p)
		}
	} else {
		if h := m.head(q); h != at {
			return fmt.Errorf("task %d started ahead of task %d in queue %d", id, m.queues[q][h].id, q)
		}
		for p := range fzFirst[fzChans] {
			if fzLayout[fzQueueCh[p]].level < fzLayout[fzQueueCh[q]].level && len(m.queues[p]) > 0 {
				return fmt.Errorf("task %d started on level %d while task %d waited in queue %d of a higher level",
					id, fzLayout[fzQueueCh[q]].level, m.queues[p][0].id, p)
			}
		}
	}
	m.queues[q] = slices.Delete(m.queues[q], at, at+1)
	return nil
}

// checkOrder replays the one-worker log through the model.
func (r *fzRun) checkOrder() {
	t := r.t
	r.mu.Lock()
	events := slices.Clone(r.events)
	r.mu.Unlock()
	m := &fzModel{queues: make([][]fzItem, fzFirst[fzChans]), exact: true}
	fail := func(i int, format string, args ...any) {
		var b strings.Builder
		for j, ev := range events[:i+1] {
			fmt.Fprintf(&b, "\n  %3d %+v", j, ev)
		}
		t.Fatalf("event %d: %s; log:%s", i, fmt.Sprintf(format, args...), b.String())
	}
	for i, ev := range events {
		switch ev.kind {
		case evPush:
			m.seq++
			m.queues[ev.q] = append(m.queues[ev.q], fzItem{id: ev.id, a: ev.a, b: ev.b, seq: m.seq})
		case evClose:
			m.closed = true
			for q := range m.queues {
				if !fzLayout[fzQueueCh[q]].coc {
					m.queues[q] = nil // dropped by Close; checkLedger checks they were
				}
			}
		case evChild:
			want := error(nil)
			switch {
			case m.closed:
				want = smartpool.ErrClosed
			case r.specs[ev.id].ch < 0:
				want = smartpool.ErrUnknownKey
			}
			if !errors.Is(ev.err, want) || (want == nil) != (ev.err == nil) {
				fail(i, "child %d: Submit returned %v, want %v", ev.id, ev.err, want)
			}
		case evStart:
			if err := m.start(ev.id); err != nil {
				fail(i, "%v", err)
			}
			if r.specs[ev.id].yields > 0 {
				m.exact = false
			}
		}
	}
	for q, items := range m.queues {
		if fzLayout[fzQueueCh[q]].coc && len(items) > 0 {
			fail(len(events)-1, "complete-on-close task %d never started", items[0].id)
		}
	}
}

// ---------------------------------------------------------------------------
// H1: the driver

type fzCloseResult struct {
	rep *smartpool.Report[string]
	err error
}

// fzExec runs ops on a fresh pool of the given size. The gate task pins one
// worker (with one worker: all of them) until every op up to the first close
// is applied; then, depending on pinnedClose, Close starts while it is still
// pinned (queued DROP tasks all dropped) or the gate opens, the pool runs
// until every task finished or waits for a wake-up, and Close starts then.
// The ops after the first close run while the pool closes.
func fzExec(t *testing.T, workers int, pinnedClose bool, ops []fzOp, specs []*fzSpec) {
	baseline := runtime.NumGoroutine()
	r := newFzRun(t, workers, specs)
	o, err := smartpool.New[string](r.behavior())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r.o, r.pool = o, o.Pool()

	started, release := make(chan struct{}), make(chan struct{})
	if err := r.pool.Submit("gate", func(context.Context) { close(started); <-release }); err != nil {
		t.Fatalf("gate: %v", err)
	}
	waitFor(t, started, "the gate task")
	released := false
	open := func() {
		if !released {
			released = true
			close(release)
		}
	}
	closes := make(chan fzCloseResult, len(ops)+1)
	nCloses := 0
	launchClose := func() {
		nCloses++
		go func() {
			rep, err := o.Close(context.Background())
			closes <- fzCloseResult{rep, err}
		}()
	}
	closing := false
	firstClose := func() {
		closing = true
		if pinnedClose {
			launchClose()
			if r.exact {
				// Until Close has emptied the DROP queues, the worker
				// could poll one of their tasks and drop it itself, which
				// moves its rotation cursor differently.
				want := uint64(0)
				r.mu.Lock()
				for _, ev := range r.events {
					if ev.kind == evPush && !fzLayout[fzQueueCh[ev.q]].coc {
						want++
					}
				}
				r.mu.Unlock()
				fzWait(t, "Close dropping the queued DROP tasks", func() error {
					if r.pool.State() < smartpool.Closing {
						return errors.New("Close has not started")
					}
					if got := r.pool.Stats().Total().Dropped; got != want {
						return fmt.Errorf("%d dropped, want %d", got, want)
					}
					return nil
				})
				r.log(fzEvent{kind: evClose, id: -1})
			}
			open()
		} else {
			open()
			fzWait(t, "the pool settling before Close", r.settled)
			r.log(fzEvent{kind: evClose, id: -1}) // nothing is queued: its place in the log is exact
			launchClose()
		}
		if r.exact {
			eventually(t, func() bool { return r.pool.State() >= smartpool.Closing })
		}
	}
	// With one worker every result is known. With two, a submit may race a
	// Close started from inside a task, or the test's own Close, which runs
	// on its own goroutine: ErrClosed is then fine once the pool says so.
	checkSubmit := func(what string, err error, unknown bool) {
		t.Helper()
		want := error(nil)
		switch {
		case closing:
			want = smartpool.ErrClosed
		case unknown:
			want = smartpool.ErrUnknownKey
		}
		switch {
		case r.exact:
			if (want == nil) != (err == nil) || !errors.Is(err, want) {
				t.Fatalf("%s: %v, want %v", what, err, want)
			}
		case errors.Is(err, smartpool.ErrClosed):
			if st := r.pool.State(); st < smartpool.Closing {
				t.Fatalf("%s: ErrClosed while the pool is %v", what, st)
			}
		case unknown && !errors.Is(err, smartpool.ErrUnknownKey), !unknown && err != nil:
			t.Fatalf("%s: %v, want %v or ErrClosed", what, err, want)
		}
	}
	for _, op := range ops {
		switch op.kind {
		case opSubmit:
			s := specs[op.id]
			checkSubmit(fmt.Sprintf("submit %d to %s (typed %v)", s.id, fzLayout[s.ch].key, s.typed), r.submit(s, s.typed), false)
		case opWake:
			r.wakeTask(op.id)
		case opClose, opCloseCancelled:
			switch {
			case !closing:
				firstClose()
			case op.kind == opClose:
				launchClose()
			default:
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				rep, err := o.Close(ctx)
				switch {
				case err == nil && rep != nil:
					select {
					case <-o.Done():
					default:
						t.Fatal("Close with a cancelled context returned a report before Done")
					}
				case errors.Is(err, context.Canceled) && rep == nil:
				default:
					t.Fatalf("Close with a cancelled context: %v, %v", rep, err)
				}
			}
		case opUnknown:
			checkSubmit("submit to an unknown key", r.pool.Submit("nope", func(context.Context) { r.phantom.Add(1) }), true)
		case opNil:
			key := fzLayout[op.ch].key
			for what, err := range map[string]error{
				"Submit(nil)":       r.pool.Submit(key, nil),
				"SubmitTask(nil)":   r.pool.SubmitTask(key, nil),
				"Submit(nope, nil)": r.pool.Submit("nope", nil),
				"Channel.Push(nil)": r.chans[op.ch].c.Push(nil),
			} {
				if !errors.Is(err, smartpool.ErrNilTask) {
					t.Fatalf("%s on %s: %v, want ErrNilTask", what, key, err)
				}
			}
		case opStats:
			s := r.pool.Stats()
			if err := r.checkShape(s); err != nil {
				t.Fatal(err)
			}
			if r.exact && !closing {
				if err := r.checkPinned(s); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if !closing {
		firstClose()
	}
	open()
	for id := range specs {
		r.wakeTask(id)
	}

	var rep *smartpool.Report[string]
	timeout := time.After(long)
	for range nCloses {
		select {
		case res := <-closes:
			if res.err != nil || res.rep == nil {
				t.Fatalf("Close: %v, %v", res.rep, res.err)
			}
			if rep == nil {
				rep = res.rep
				r.checkReport(rep)
			} else if res.rep != rep {
				t.Fatalf("two Close calls returned different reports")
			}
		case <-timeout:
			var buf bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
			t.Fatalf("Close did not return within %v\n%s", long, buf.String())
		}
	}
	// Suspended DROP tasks end (dropped) on their own goroutines after Close.
	fzWait(t, "every accepted task reaching an outcome", r.allDone)
	fzWait(t, "final stats matching the ledger", r.countsMatch)
	r.checkLedger()
	if r.exact && !t.Failed() {
		r.checkOrder()
	}
	fzWait(t, "goroutines back to the baseline", func() error {
		if n := runtime.NumGoroutine(); n > baseline {
			return fmt.Errorf("%d goroutines, %d before the pool", n, baseline)
		}
		return nil
	})
}

// H1 FuzzPoolOps: random operation sequences on a real pool, with one worker
// against the reference model and with two against the invariants.
func FuzzPoolOps(f *testing.F) {
	const (
		hiF, hiP, midD, midF, midM, loP, loM, loF = 0, 1, 2, 3, 4, 5, 6, 7
	)
	all := func(s fzSeed, kind byte) fzSeed {
		return s.each(func(s fzSeed, i int) fzSeed { return s.submit(i, i, kind) }, fzGate)
	}
	seeds := []fzSeed{
		// Submit racing shutdown: a full queue, Close while pinned, then
		// submits of every kind after it, by key and through the channel.
		all(all(fzStart(true), 0), kTyped).close().
			submit(hiF, 0, 0).submit(loM, 3, kTyped).submit(midD, 2, kTyped).unknown().nilSubmit(loF).stats(),
		// Shutdown with blocked work: tasks of every channel suspended on
		// wake-ups that come only after Close started.
		all(fzStart(false), kYield1|kBlock).stats().close().stats().
			each(func(s fzSeed, i int) fzSeed { return s.wake(i) }, fzGate),
		// Panicking tasks, before and after a yield, between normal ones:
		// the worker lives on and each panic reaches the handler once.
		all(all(fzStart(false), kPanic), kYield2|kPanic).submit(hiF, 0, 0).submit(loP, 1, kTyped).close(),
		// Re-entrant submit: every channel and an unknown key from inside
		// tasks, before Close ...
		fzStart(false).each(func(s fzSeed, i int) fzSeed { return s.submit(i, i, kChild) }, 9).close(),
		// ... and while Close drains (every child refused).
		all(fzStart(true), kChild|kYield1).close().closeCancelled(),
		// Shutdown from inside a task, with DROP and COC work queued behind
		// it, and a closer that then yields across its own close.
		fzStart(false).submit(midF, 0, kCloser).submit(loF, 0, 0).submit(loM, 1, kTyped).
			submit(loP, 4, kTyped).submit(loP, 5, kTyped|kCloser|kYield1).submit(hiP, 2, kCloser|kYield2),
		// Goexit in a task: on the worker, after yields, COC and DROP.
		all(all(fzStart(false), kGoexit), kGoexit|kYield3).submit(hiF, 0, 0).close(),
		// Yields across close: COC tasks suspended while Close drains, woken
		// after it, plus second and cancelled closes while it waits.
		fzStart(true).submit(hiF, 0, kYield2|kBlock).submit(midD, 3, kYield1|kBlock|kTyped).
			submit(midM, 0, kYield3|kBlock).submit(loP, 6, kYield1|kBlock|kTyped).close().close().closeCancelled().
			wake(0).stats().wake(1).wake(2).close().wake(3),
		// DROP tasks suspended at Close and woken after it: dropped once,
		// their goroutines end (background goroutines after close).
		fzStart(false).submit(hiP, 0, kYield1|kBlock).submit(midF, 0, kYield2|kBlock).
			submit(loF, 0, kYield1|kBlock).submit(loM, 0, kYield3|kBlock|kTyped).close().stats().wake(2).wake(0),
		// Deadline and priority order, by key and typed, extremes included.
		fzStart(false).each(func(s fzSeed, i int) fzSeed {
			return s.submit([]int{midD, hiP, loP, loM}[i%4], (i*5)%32, byte(i%2)*kTyped)
		}, 32).stats().close(),
		// Multi shards and the level rotation: interleaved submits to the
		// channels sharing levels 1 and 2, with the COC queues drained
		// after a pinned Close.
		fzStart(true).each(func(s fzSeed, i int) fzSeed {
			return s.submit([]int{midM, midD, loM, loP, midM, loF, midF}[i%7], i, byte(i%3/2)*kTyped)
		}, 35).stats().close(),
		// Followups into a higher level: yields with immediate waits from
		// the low channels, COC and DROP (loF follows up into hiF).
		fzStart(false).submit(loP, 0, kYield3).submit(loF, 0, kYield2).submit(midD, 1, kYield1|kTyped).
			submit(midM, 0, kYield2).submit(loM, 0, kYield1).submit(midF, 0, kYield3).submit(loP, 0, 0).submit(hiF, 0, 0).close(),
		// Bad calls: nil and unknown-key submits before and after Close.
		fzStart(false).each(func(s fzSeed, i int) fzSeed { return s.nilSubmit(i) }, fzGate).unknown().
			submit(hiF, 0, 0).close().unknown().each(func(s fzSeed, i int) fzSeed { return s.nilSubmit(i) }, fzGate),
		// Wake-ups before the task runs and twice over.
		fzStart(false).submit(midD, 0, kYield3|kBlock).wake(0).wake(0).submit(hiP, 0, kYield2|kBlock).
			wake(1).close().wake(1).wake(0),
		// Nothing: the implicit Close of an idle pool; then two closes.
		{},
		fzStart(true).close().close(),
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pinnedClose, ops, specs := fzDecode(data)
		fzExec(t, 1, pinnedClose, ops, specs)
		fzExec(t, 2, pinnedClose, ops, specs)
	})
}

// ---------------------------------------------------------------------------
// H2 FuzzConfig

// fzConfig is a decoded configuration and the rules it breaks, by the
// oracle's reading of New's documentation.
type fzConfig struct {
	b      *behavior
	keys   []string
	broken []error
}

var (
	fzSlices  = []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, 0, -time.Millisecond, scheduler.MaxSlice, scheduler.MaxSlice + 1}
	fzWeights = []int{1, 2, 3, 0, -1, scheduler.MaxWeight, scheduler.MaxWeight + 1}
)

// fzDecodeConfig reads: levels (0-5), workers (-2..4), scheduler (nil,
// HighestFirst, RoundRobin, Weighted; the last two with a count byte that
// may be wrong and one byte per slice or weight), then per level a channel
// count (0-4) and per channel three bytes: kind, key, followup.
func fzDecodeConfig(data []byte) *fzConfig {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	cfg := &fzConfig{b: &behavior{}}
	b := cfg.b
	broken := map[error]bool{}
	nLevels := int(next() % 6)
	b.workers = int(next()%7) - 2
	if b.workers < 0 {
		broken[smartpool.ErrNegativeWorker] = true
	}
	if nLevels == 0 {
		broken[smartpool.ErrNoLevels] = true
	}
	switch kind := next() % 4; kind {
	case 1:
		b.sched = scheduler.HighestFirst()
	case 2, 3:
		rr := kind == 2
		n := max(nLevels+[]int{0, 0, -1, 1, 0, 0, 0, 0}[next()%8], 0) // mostly right
		bad := n != nLevels
		if rr {
			var s []time.Duration
			for range n {
				d := fzSlices[int(next())%len(fzSlices)]
				bad = bad || d <= 0 || d > scheduler.MaxSlice
				s = append(s, d)
			}
			b.sched = scheduler.RoundRobin(s...)
		} else {
			var w []int
			for range n {
				x := fzWeights[int(next())%len(fzWeights)]
				bad = bad || x <= 0 || x > scheduler.MaxWeight
				w = append(w, x)
			}
			b.sched = scheduler.Weighted(w...)
		}
		if bad {
			broken[scheduler.ErrBadPolicy] = true
		}
	}
	var follows []byte
	var objs []smartpool.Channel
	for range nLevels {
		n := []int{0, 1, 2, 3, 4, 1, 2, 3}[next()%8] // empty one time in eight
		if n == 0 {
			broken[smartpool.ErrEmptyLevel] = true
		}
		var lv []ch
		for range n {
			kb, keyb, fb := next(), next(), next()
			c := ch{coc: kb&0x80 != 0, key: fmt.Sprintf("c%d", len(cfg.keys))}
			switch {
			case keyb%8 == 7 && len(cfg.keys) > 0:
				c.key = cfg.keys[int(keyb>>3)%len(cfg.keys)] // a forced duplicate
				broken[smartpool.ErrDuplicateKey] = true
			case keyb%8 == 6 && len(objs) > 0:
				c.c = objs[int(keyb>>3)%len(objs)] // one channel under two keys
				broken[smartpool.ErrAttached] = true
			}
			if c.c == nil {
				switch kb & 7 {
				case 0, 5:
					c.c = channels.NewFIFO()
				case 1:
					c.c = channels.NewDeadline()
				case 2, 6:
					c.c = channels.NewPriority()
				case 3, 4:
					shards := int(kb>>3) % 4
					switch (kb >> 5) % 3 {
					case 0:
						c.c = channels.NewMulti(shards, channels.NewFIFO)
					case 1:
						c.c = channels.NewMulti(shards, func() *channels.Deadline { return channels.NewDeadline() })
					default:
						c.c = channels.NewMulti(shards, channels.NewPriority)
					}
					if shards == 0 {
						broken[smartpool.ErrNoQueues] = true
					}
				default:
					c.c = nilFIFO
					broken[smartpool.ErrNilChannel] = true
				}
				if c.c != nilFIFO {
					objs = append(objs, c.c)
				}
			}
			cfg.keys = append(cfg.keys, c.key)
			follows = append(follows, fb)
			lv = append(lv, c)
		}
		b.levels = append(b.levels, lv)
	}
	// Followups: mostly itself, else another channel's key or a key no
	// level lists.
	i := 0
	for _, lv := range b.levels {
		for j := range lv {
			switch fb := follows[i]; fb % 8 {
			case 4, 5, 6:
				lv[j].followup = cfg.keys[int(fb>>3)%len(cfg.keys)]
			case 7:
				lv[j].followup = "nope"
			}
			i++
		}
	}
	if !broken[smartpool.ErrDuplicateKey] { // with duplicates, Followup's answer names an ambiguous channel
		for _, lv := range b.levels {
			for _, c := range lv {
				if c.followup == "" {
					continue
				}
				to := b.find(c.followup)
				if to == nil || c.coc && !to.coc {
					broken[smartpool.ErrFollowup] = true
				}
			}
		}
	}
	for err := range broken {
		cfg.broken = append(cfg.broken, err)
	}
	return cfg
}

// fzConfigSeed builds FuzzConfig inputs: a header and then, per level, the
// channels as (kind, key, followup) triples.
func fzConfigSeed(levels, workers, sched byte, schedBytes []byte, chans ...[][3]byte) []byte {
	s := append([]byte{levels, workers, sched}, schedBytes...)
	for _, lv := range chans {
		s = append(s, byte(len(lv)))
		for _, c := range lv {
			s = append(s, c[:]...)
		}
	}
	return s
}

// H2 FuzzConfig: New either returns a pool that serves one task per channel
// (each yields once, so followups are exercised) and closes cleanly, or an
// error wrapping ErrConfig and one of the rules the config breaks; it never
// panics and never leaves a goroutine behind.
func FuzzConfig(f *testing.F) {
	const (
		fifoK, sdfK, prioK = 0, 1, 2
		coc                = 0x80
		nilK               = 7
		dupKey             = 7 // duplicates the first key
		reuse              = 6 // reuses the first channel
		followSelf         = 0
		followNope         = 7
	)
	multi := func(shards, kind byte) byte { return 3 | shards<<3 | kind<<5 }
	follow := func(i byte) byte { return 4 | i<<3 }
	w := func(n int) byte { return byte(n + 2) } // workers byte
	seeds := [][]byte{
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{fifoK, 0, followSelf}}),
		fzConfigSeed(0, w(1), 0, nil),
		fzConfigSeed(2, w(2), 1, nil, [][3]byte{{fifoK, 0, 0}}, nil),
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{fifoK, 0, 0}, {sdfK, dupKey, 0}}),
		fzConfigSeed(1, w(-1), 0, nil, [][3]byte{{fifoK, 0, 0}}),
		fzConfigSeed(1, w(-2), 0, nil, [][3]byte{{fifoK, 0, 0}}),
		fzConfigSeed(1, w(0), 0, nil, [][3]byte{{prioK | coc, 0, 0}, {fifoK | coc, 0, follow(0)}}),
		// RoundRobin: a count byte (2: one too few; 3: one too many; else
		// one per level), then a byte per slice: valid ...
		fzConfigSeed(2, w(2), 2, []byte{0, 2, 1}, [][3]byte{{fifoK, 0, follow(1)}}, [][3]byte{{sdfK, 0, 0}}),
		// ... a wrong count, a zero slice, a slice above MaxSlice.
		fzConfigSeed(2, w(1), 2, []byte{2, 2}, [][3]byte{{fifoK, 0, 0}}, [][3]byte{{fifoK, 0, 0}}),
		fzConfigSeed(1, w(1), 2, []byte{0, 3}, [][3]byte{{fifoK, 0, 0}}),
		fzConfigSeed(1, w(1), 2, []byte{0, 6}, [][3]byte{{fifoK, 0, 0}}),
		// Weighted: valid, one too many, zero and negative weights.
		fzConfigSeed(3, w(4), 3, []byte{1, 0, 1, 5}, [][3]byte{{fifoK, 0, 0}}, [][3]byte{{prioK, 0, follow(0)}}, [][3]byte{{multi(2, 0), 0, 0}}),
		fzConfigSeed(2, w(1), 3, []byte{3, 0, 0, 0}, [][3]byte{{fifoK, 0, 0}}, [][3]byte{{fifoK, 0, 0}}),
		fzConfigSeed(2, w(1), 3, []byte{1, 3, 4}, [][3]byte{{fifoK, 0, 0}}, [][3]byte{{fifoK, 0, 0}}),
		// Followups: unknown key; COC into DROP; DROP into COC (valid).
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{fifoK, 0, followNope}}),
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{fifoK | coc, 0, follow(1)}, {fifoK, 0, 0}}),
		fzConfigSeed(2, w(2), 0, nil, [][3]byte{{fifoK | coc, 0, 0}}, [][3]byte{{sdfK, 0, follow(0)}}),
		// Multi of zero shards; a nil channel; one channel under two keys.
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{multi(0, 1), 0, 0}}),
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{nilK, 0, 0}}),
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{fifoK, 0, 0}, {fifoK, reuse, 0}}),
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{multi(2, 2), 0, 0}, {fifoK, reuse, 0}}),
		// Five full levels of mixed kinds, with upward followups.
		fzConfigSeed(5, w(3), 1, nil,
			[][3]byte{{fifoK | coc, 0, 0}, {sdfK, 0, 0}, {prioK | coc, 0, 0}, {multi(3, 0), 0, 0}},
			[][3]byte{{multi(1, 1) | coc, 0, follow(0)}, {fifoK, 0, follow(1)}, {sdfK | coc, 0, follow(2)}, {prioK, 0, 0}},
			[][3]byte{{multi(2, 2), 0, follow(3)}, {fifoK | coc, 0, follow(4)}, {sdfK, 0, 0}, {prioK, 0, 0}},
			[][3]byte{{fifoK, 0, 0}, {fifoK, 0, follow(7)}, {fifoK, 0, 0}, {fifoK, 0, 0}},
			[][3]byte{{fifoK | coc, 0, follow(2)}, {prioK | coc, 0, follow(0)}, {sdfK, 0, 0}, {multi(3, 1), 0, follow(5)}},
		),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		baseline := runtime.NumGoroutine()
		cfg := fzDecodeConfig(data)
		noLeak := func() {
			fzWait(t, "goroutines back to the baseline", func() error {
				if n := runtime.NumGoroutine(); n > baseline {
					return fmt.Errorf("%d goroutines, %d before New", n, baseline)
				}
				return nil
			})
		}
		o, err := smartpool.New[string](cfg.b)
		if err != nil {
			if o != nil {
				t.Fatalf("New returned a pool and %v", err)
			}
			if !errors.Is(err, smartpool.ErrConfig) {
				t.Fatalf("New: %v does not wrap ErrConfig", err)
			}
			if !slices.ContainsFunc(cfg.broken, func(rule error) bool { return errors.Is(err, rule) }) {
				t.Fatalf("New: %v; the config breaks %v", err, cfg.broken)
			}
			noLeak()
			return
		}
		if len(cfg.broken) > 0 {
			closeWithin(t, o, long)
			t.Fatalf("New accepted a config that breaks %v", cfg.broken)
		}
		want := cfg.b.workers
		if want == 0 {
			want = runtime.GOMAXPROCS(0)
		}
		if n := o.Pool().Stats().Workers; n != want {
			t.Errorf("%d workers, want %d", n, want)
		}
		var done atomic.Int32
		for _, k := range cfg.keys {
			err := o.Pool().Submit(k, func(ctx context.Context) {
				smartpool.Yield(ctx, func() {})
				done.Add(1)
			})
			if err != nil {
				t.Fatalf("Submit(%s): %v", k, err)
			}
		}
		fzWait(t, "one task per channel", func() error {
			if n := done.Load(); int(n) != len(cfg.keys) {
				return fmt.Errorf("%d of %d ran", n, len(cfg.keys))
			}
			return nil
		})
		rep := closeWithin(t, o, long)
		for _, c := range rep.Channels {
			if c.Ran != 1 || c.Panicked+c.Goexited+c.Dropped != 0 || c.Queued != 0 {
				t.Errorf("channel %s: %+v, want one task ran", c.Key, c)
			}
		}
		if len(rep.Channels) != len(cfg.keys) || rep.Suspended != 0 {
			t.Errorf("report has %d channels, %d suspended; want %d, 0", len(rep.Channels), rep.Suspended, len(cfg.keys))
		}
		noLeak()
	})
}
