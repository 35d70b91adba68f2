package channels_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// unwrapper is what a Keyed's Poll returns for a submitted task.
type unwrapper interface{ Unwrap() smartpool.Task }

func newKeyed[G comparable](t testing.TB, limit int) *channels.Keyed[G] {
	t.Helper()
	k, err := channels.NewKeyed[G](limit)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// keyedBehavior is a pool of one Keyed, key 0, through which yielded tasks
// re-enter too; panics are counted rather than logged.
type keyedBehavior struct {
	ch      smartpool.Channel
	workers int
	coc     bool
	onEnd   func(smartpool.Task, smartpool.Outcome)
	panics  *atomic.Int32
	limit   int // the pool's in-flight limit (Config.Limit)
}

func (b keyedBehavior) Config() smartpool.Config[int] {
	c := smartpool.Config[int]{
		Workers: b.workers,
		Limit:   b.limit,
		Levels:  [][]smartpool.ChannelParams[int]{{{Key: 0, CompleteOnClose: b.coc, OnEnd: b.onEnd}}},
	}
	if b.panics != nil {
		c.PanicHandler = func(int, *smartpool.PanicError) { b.panics.Add(1) }
	}
	return c
}

func (b keyedBehavior) Channel(int) smartpool.Channel { return b.ch }
func (b keyedBehavior) Followup(int) int              { return 0 }

func newKeyedPool(t testing.TB, b keyedBehavior) *smartpool.OwnedPool[int] {
	t.Helper()
	o, err := smartpool.New[int](b)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// eventLog is an ordered record of events from several goroutines.
type eventLog struct {
	mu sync.Mutex
	ev []string
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ev = append(l.ev, e)
}

func (l *eventLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ev)
}

func TestKeyedAPI(t *testing.T) {
	for _, n := range []int{0, -1} {
		k, err := channels.NewKeyed[string](n)
		if k != nil || !errors.Is(err, smartpool.ErrBadLimit) {
			t.Fatalf("NewKeyed(%d) = %v, %v; want nil, ErrBadLimit", n, k, err)
		}
	}

	k := served(newKeyed[string](t, 2))
	wantErr(t, "Submit(nil)", k.Submit("a", nil), smartpool.ErrNilTask)
	wantErr(t, "SubmitTask(nil)", k.SubmitTask("a", nil), smartpool.ErrNilTask)
	wantErr(t, "Push(nil)", src(k).Push(nil, smartpool.Order{}), smartpool.ErrNilTask)
	wantErr(t, "Requeue(nil)", src(k).Requeue(nil), smartpool.ErrNilTask)
	wantErr(t, "SetLimit(0)", k.SetLimit(0), smartpool.ErrBadLimit)
	if k.Limit() != 2 || k.Len() != 0 {
		t.Fatalf("after refused calls: Limit %d, Len %d", k.Limit(), k.Len())
	}

	// Push is the zero group.
	mustOK(t, src(k).Push(idTask(1), smartpool.Order{}))
	task := src(k).Poll(0)
	if k.Running("") != 1 {
		t.Fatalf("Running(\"\") = %d after polling a pushed task, want 1", k.Running(""))
	}
	task.Run(context.Background())
	if s := k.Stats(); s != (channels.KeyedStats{Limit: 2}) {
		t.Fatalf("Stats = %+v after the task ended, want only Limit 2", s)
	}

	k = newKeyed[string](t, 2) // the harness holds the first one
	wantErr(t, "Submit before New", k.Submit("a", noop), smartpool.ErrNotServed)
	o := newKeyedPool(t, keyedBehavior{ch: k, workers: 1})
	_, err := smartpool.New[int](keyedBehavior{ch: k, workers: 1})
	if !errors.Is(err, smartpool.ErrAttached) {
		t.Fatalf("second New = %v, want ErrAttached", err)
	}
	closePool(t, o)
	wantErr(t, "Submit after Close", k.Submit("a", noop), smartpool.ErrClosed)
	wantErr(t, "SubmitTask after Close", k.SubmitTask("a", idTask(0)), smartpool.ErrClosed)
	wantErr(t, "Push after Close", src(k).Push(idTask(0), smartpool.Order{}), smartpool.ErrClosed)
	wantErr(t, "Requeue after Close(true)", src(k).Requeue(idTask(0)), smartpool.ErrClosed)
}

// keyedRef is the reference model of a Keyed: a slice scanned in order.
type keyedRef struct {
	limit    int
	queue    []keyedRefItem // submitted tasks, oldest first
	requeued []int
	running  map[int]int
}

type keyedRefItem struct{ id, group int }

// poll returns what Poll must return: a re-entry's ID (submitted false), the
// oldest eligible submitted item, or ok false.
func (m *keyedRef) poll() (it keyedRefItem, submitted, ok bool) {
	if len(m.requeued) > 0 {
		id := m.requeued[0]
		m.requeued = m.requeued[1:]
		return keyedRefItem{id: id}, false, true
	}
	for i, it := range m.queue {
		if m.running[it.group] < m.limit {
			m.queue = slices.Delete(m.queue, i, i+1)
			m.running[it.group]++
			return it, true, true
		}
	}
	return keyedRefItem{}, false, false
}

func (m *keyedRef) stats(groups int) channels.KeyedStats {
	s := channels.KeyedStats{Queued: len(m.queue) + len(m.requeued), Limit: m.limit}
	queued := map[int]int{}
	for _, it := range m.queue {
		queued[it.group]++
	}
	for g := range groups {
		if queued[g] > 0 || m.running[g] > 0 {
			s.Groups++
		}
		if queued[g] > 0 && m.running[g] < m.limit {
			s.Ready++
		}
		s.Running += m.running[g]
	}
	return s
}

// TestKeyedModel runs random submits, re-entries, polls, task ends and limit
// changes on one goroutine against keyedRef: Poll must return exactly what
// the reference picks, and Len, Running and Stats must agree with it.
func TestKeyedModel(t *testing.T) {
	r := newRand(t)
	const groups = 5
	for round := range 30 {
		m := &keyedRef{limit: 1 + r.IntN(3), running: map[int]int{}}
		k := served(newKeyed[int](t, m.limit))
		type polled struct {
			task  smartpool.Task
			group int
		}
		var inProgress []polled
		next := 0
		for step := range 2000 {
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("round %d step %d: %s", round, step, fmt.Sprintf(format, args...))
			}
			switch op := r.IntN(20); {
			case op < 6:
				g := r.IntN(groups)
				mustOK(t, k.SubmitTask(g, idTask(next)))
				m.queue = append(m.queue, keyedRefItem{id: next, group: g})
				next++
			case op < 7:
				mustOK(t, src(k).Push(idTask(next), smartpool.Order{})) // the zero group: 0
				m.queue = append(m.queue, keyedRefItem{id: next, group: 0})
				next++
			case op < 8:
				mustOK(t, src(k).Requeue(idTask(next)))
				m.requeued = append(m.requeued, next)
				next++
			case op < 13:
				want, submitted, ok := m.poll()
				got := src(k).Poll(0)
				switch {
				case !ok:
					if got != nil {
						fail("Poll = %v, want nil", got)
					}
				case !submitted:
					if id, isID := got.(idTask); !isID || int(id) != want.id {
						fail("Poll = %#v, want the re-entry %d as it was", got, want.id)
					}
				default:
					w, isWrapped := got.(unwrapper)
					if !isWrapped {
						fail("Poll = %#v, want a wrapped task", got)
					}
					if id := idOf(t, w.Unwrap()); id != want.id {
						fail("Poll = %d, want %d", id, want.id)
					}
					inProgress = append(inProgress, polled{got, want.group})
				}
			case op < 19:
				if len(inProgress) == 0 {
					continue
				}
				i := r.IntN(len(inProgress))
				p := inProgress[i]
				inProgress = slices.Delete(inProgress, i, i+1)
				p.task.Run(context.Background()) // the task ends: its slot is free
				m.running[p.group]--
			default:
				m.limit = 1 + r.IntN(3)
				mustOK(t, k.SetLimit(m.limit))
			}
			if got, want := k.Len(), len(m.queue)+len(m.requeued); got != want {
				fail("Len = %d, want %d", got, want)
			}
			for g := range groups {
				if got := k.Running(g); got != m.running[g] {
					fail("Running(%d) = %d, want %d", g, got, m.running[g])
				}
			}
			if got, want := k.Stats(), m.stats(groups); got != want {
				fail("Stats = %+v, want %+v", got, want)
			}
		}

		// Close: re-entries first, then the submitted tasks oldest first,
		// unwrapped; tasks in progress keep their slots until they end.
		drop := r.IntN(2) == 0
		out := src(k).Close(drop)
		if drop {
			want := slices.Clone(m.requeued)
			for _, it := range m.queue {
				want = append(want, it.id)
			}
			var got []int
			for _, task := range out {
				got = append(got, idOf(t, task))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: Close(true) returned %v, want %v", round, got, want)
			}
			m.queue, m.requeued = nil, nil
			if task := src(k).Poll(0); task != nil {
				t.Fatalf("round %d: Poll after Close(true) = %v", round, task)
			}
		} else if len(out) != 0 {
			t.Fatalf("round %d: Close(false) returned %d tasks", round, len(out))
		}
		if got, want := k.Stats(), m.stats(groups); got != want {
			t.Fatalf("round %d: Stats after Close(%v) = %+v, want %+v", round, drop, got, want)
		}
		for _, p := range inProgress {
			p.task.Run(context.Background())
		}
		if !drop { // drain what is left, ending each task as it comes
			for task := src(k).Poll(0); task != nil; task = src(k).Poll(0) {
				task.Run(context.Background())
			}
		}
		if s := k.Stats(); s != (channels.KeyedStats{Limit: m.limit}) {
			t.Fatalf("round %d: Stats after every task ended = %+v, want empty", round, s)
		}
	}
}

// keyedLoad counts, per group, the tasks in progress as the tasks
// themselves see them, and the most ever seen at once.
type keyedLoad struct {
	cur, peak []atomic.Int32
	ran       []atomic.Int32 // by task ID
	wg        sync.WaitGroup
}

func newKeyedLoad(groups, tasks int) *keyedLoad {
	l := &keyedLoad{cur: make([]atomic.Int32, groups), peak: make([]atomic.Int32, groups), ran: make([]atomic.Int32, tasks)}
	l.wg.Add(tasks)
	return l
}

// task returns task id of group g. It counts itself in progress from start
// to end, across a Yield if it yields, and then counts its run.
func (l *keyedLoad) task(id, g int, yield bool) func(context.Context) {
	return func(ctx context.Context) {
		n := l.cur[g].Add(1)
		for p := l.peak[g].Load(); n > p && !l.peak[g].CompareAndSwap(p, n); p = l.peak[g].Load() {
		}
		if yield {
			smartpool.Yield(ctx, runtime.Gosched)
		} else {
			runtime.Gosched() // give another worker a chance to overlap
		}
		l.cur[g].Add(-1)
		l.ran[id].Add(1)
		l.wg.Done()
	}
}

func (l *keyedLoad) check(t *testing.T, limit int) {
	t.Helper()
	for id := range l.ran {
		if n := l.ran[id].Load(); n != 1 {
			t.Fatalf("task %d ran %d times", id, n)
		}
	}
	var peaks []int32
	for g := range l.peak {
		p := l.peak[g].Load()
		if p > int32(limit) {
			t.Fatalf("group %d had %d tasks in progress at once, limit %d", g, p, limit)
		}
		peaks = append(peaks, p)
	}
	t.Logf("peak in progress by group: %v", peaks)
}

// TestKeyedPoolLimit runs many tasks over a few groups in a real pool, from
// several producers and by key through Pool.SubmitTask (the zero group, 0),
// a fifth of them yielding: no group ever has more than its limit in
// progress, every task runs exactly once, and the pool finishes. The
// one-group case with limit 1 finishes only if every task's end makes the
// next task eligible and visible to the workers.
func TestKeyedPoolLimit(t *testing.T) {
	cases := []struct {
		workers, limit, groups, tasks int
	}{
		{2, 2, 5, 2000},
		{4, 2, 5, 2000},
		{4, 2, 1, 1000},
		{2, 1, 1, 1000},
		{4, 1, 1, 1000},
	}
	for _, c := range cases {
		name := fmt.Sprintf("workers=%d/limit=%d/groups=%d", c.workers, c.limit, c.groups)
		t.Run(name, func(t *testing.T) {
			k := newKeyed[int](t, c.limit)
			o := newKeyedPool(t, keyedBehavior{ch: k, workers: c.workers, coc: true})
			l := newKeyedLoad(c.groups, c.tasks)
			const producers = 2
			var prod sync.WaitGroup
			for p := range producers {
				prod.Go(func() {
					for id := p; id < c.tasks; id += producers {
						g := id % c.groups
						fn := l.task(id, g, id%5 == 0)
						var err error
						if g == 0 && id%3 == 0 {
							err = o.Pool().Submit(0, fn) // Push: group 0
						} else {
							err = k.Submit(g, fn)
						}
						if err != nil {
							t.Error(err)
							l.wg.Done()
						}
					}
				})
			}
			prod.Wait()
			done := make(chan struct{})
			go func() { l.wg.Wait(); close(done) }()
			waitOrFail(t, done, fmt.Sprintf("%d tasks to run", c.tasks))
			rep := closePool(t, o)
			l.check(t, c.limit)
			if tot := rep.Total(); tot.Ran != uint64(c.tasks) || tot.Dropped != 0 || tot.Queued != 0 {
				t.Fatalf("report %+v, want %d ran", tot, c.tasks)
			}
			if s := k.Stats(); s != (channels.KeyedStats{Limit: c.limit}) {
				t.Fatalf("Stats after the pool finished = %+v, want empty", s)
			}
		})
	}
}

// TestKeyedYieldKeepsSlot: with limit 1 and one worker, a task that yields
// keeps its group's slot while it waits. The worker it gave back runs a task
// of another group submitted later, not the older task of its own group,
// which starts only after the first task ended.
func TestKeyedYieldKeepsSlot(t *testing.T) {
	k := newKeyed[string](t, 1)
	o := newKeyedPool(t, keyedBehavior{ch: k, workers: 1, coc: true})
	var log eventLog
	waiting, resume := make(chan struct{}), make(chan struct{})
	otherRan, bRan := make(chan struct{}), make(chan struct{})
	mustOK(t, k.Submit("host", func(ctx context.Context) {
		log.add("A starts")
		smartpool.Yield(ctx, func() {
			close(waiting)
			<-resume
		})
		log.add("A ends")
	}))
	mustOK(t, k.Submit("host", func(context.Context) {
		log.add("B")
		close(bRan)
	}))
	mustOK(t, k.Submit("other", func(context.Context) {
		log.add("other")
		close(otherRan)
	}))
	waitOrFail(t, waiting, "A to wait in Yield")
	waitOrFail(t, otherRan, "the other group's task to run on the freed worker")
	if got := log.get(); !slices.Equal(got, []string{"A starts", "other"}) {
		t.Fatalf("events %v while A waits, want [A starts other]", got)
	}
	if k.Running("host") != 1 || k.Len() != 1 {
		t.Fatalf("while A waits: Running(host) = %d, Len = %d; want 1 and 1 (B queued)", k.Running("host"), k.Len())
	}
	close(resume)
	waitOrFail(t, bRan, "B to run after A ended")
	closePool(t, o)
	if got, want := log.get(), []string{"A starts", "other", "A ends", "B"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// TestKeyedPanicAndGoexitRelease: a task that panics and one that calls
// runtime.Goexit give their slot back, so the group's next task runs.
func TestKeyedPanicAndGoexitRelease(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) {
			k := newKeyed[string](t, 1)
			var panics atomic.Int32
			o := newKeyedPool(t, keyedBehavior{ch: k, workers: workers, coc: true, panics: &panics})
			done := make(chan struct{})
			mustOK(t, k.Submit("h", func(context.Context) { panic("boom") }))
			mustOK(t, k.Submit("h", func(context.Context) { runtime.Goexit() }))
			mustOK(t, k.Submit("h", func(context.Context) { close(done) }))
			waitOrFail(t, done, "the task after a panic and a Goexit to run")
			tot := closePool(t, o).Total()
			if tot.Panicked != 1 || tot.Goexited != 1 || tot.Ran != 1 || panics.Load() != 1 {
				t.Fatalf("report %+v, %d panics handled; want 1 panicked, 1 goexited, 1 ran", tot, panics.Load())
			}
			if s := k.Stats(); s != (channels.KeyedStats{Limit: 1}) {
				t.Fatalf("Stats = %+v, want empty", s)
			}
		})
	}
}

// TestKeyedCloseDrops: Close of a channel that does not complete on close
// hands OnEnd the tasks as they were submitted, oldest first; the task in
// progress keeps its slot until it ends.
func TestKeyedCloseDrops(t *testing.T) {
	k := newKeyed[string](t, 2)
	var dropped []int
	o := newKeyedPool(t, keyedBehavior{ch: k, workers: 1, onEnd: func(task smartpool.Task, why smartpool.Outcome) {
		if why == smartpool.DroppedOnClose {
			dropped = append(dropped, idOf(t, task))
		}
	}})
	release := pin(t, func(task smartpool.Task) error { return k.SubmitTask("pin", task) })
	mustOK(t, k.SubmitTask("a", idTask(0)))
	mustOK(t, k.SubmitTask("b", idTask(1)))
	mustOK(t, k.SubmitTask("a", idTask(2)))
	mustOK(t, src(k).Push(idTask(3), smartpool.Order{}))
	mustOK(t, k.SubmitTask("a", idTask(4)))
	// A cancelled context: Close drops the queue, calls OnEnd on this
	// goroutine, and returns at once since the pinned task cannot finish.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := o.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close(cancelled) = %v, want context.Canceled", err)
	}
	if want := []int{0, 1, 2, 3, 4}; !slices.Equal(dropped, want) {
		t.Fatalf("dropped %v, want %v", dropped, want)
	}
	if s := k.Stats(); s != (channels.KeyedStats{Running: 1, Groups: 1, Limit: 2}) {
		t.Fatalf("Stats after the drop = %+v, want the pinned task alone", s)
	}
	release()
	tot := closePool(t, o).Total()
	if tot.Ran != 1 || tot.Dropped != 5 {
		t.Fatalf("report %+v, want 1 ran, 5 dropped", tot)
	}
	if s := k.Stats(); s != (channels.KeyedStats{Limit: 2}) {
		t.Fatalf("Stats after Close = %+v, want empty", s)
	}
}

// TestKeyedCloseCompletes: Close of a complete-on-close Keyed runs every
// queued task, within the limits.
func TestKeyedCloseCompletes(t *testing.T) {
	const groups, each = 3, 20
	k := newKeyed[int](t, 1)
	o := newKeyedPool(t, keyedBehavior{ch: k, workers: 2, coc: true})
	release := pin(t, func(task smartpool.Task) error { return k.SubmitTask(groups, task) })
	release2 := pin(t, func(task smartpool.Task) error { return k.SubmitTask(groups+1, task) })
	l := newKeyedLoad(groups+2, groups*each)
	for id := range groups * each {
		mustOK(t, k.Submit(id%groups, l.task(id, id%groups, id%4 == 0)))
	}
	// Close on another goroutine: with the workers pinned it waits for them.
	type closed struct {
		rep *smartpool.Report[int]
		err error
	}
	res := make(chan closed, 1)
	go func() {
		rep, err := o.Close(context.Background())
		res <- closed{rep, err}
	}()
	probes := 0 // submitted before Close stopped admission: they run too
	boundedEventually(t, "Close to stop admission", func() bool {
		err := k.Submit(0, noop)
		if err == nil {
			probes++
		}
		return errors.Is(err, smartpool.ErrClosed)
	})
	if n := k.Len(); n != groups*each+probes {
		t.Fatalf("Len = %d when Close started, want %d", n, groups*each+probes)
	}
	release()
	release2()
	done := make(chan struct{})
	var c closed
	go func() { c = <-res; close(done) }()
	waitOrFail(t, done, "Close to run every queued task")
	if c.err != nil {
		t.Fatalf("Close: %v", c.err)
	}
	rep := c.rep
	l.check(t, 1)
	if tot := rep.Total(); tot.Ran != uint64(groups*each+2+probes) || tot.Dropped != 0 {
		t.Fatalf("report %+v, want %d ran", tot, groups*each+2+probes)
	}
}

// TestKeyedSetLimit: raising the limit at run time starts a waiting task at
// once, though every other worker is idle (it must be woken); lowering it
// stops nothing in progress, and a group over the new limit gets no slot
// until enough of its tasks ended.
func TestKeyedSetLimit(t *testing.T) {
	k := newKeyed[string](t, 1)
	o := newKeyedPool(t, keyedBehavior{ch: k, workers: 4, coc: true})
	defer closePool(t, o)
	type gate struct{ started, release chan struct{} }
	submit := func() gate {
		g := gate{make(chan struct{}), make(chan struct{})}
		mustOK(t, k.Submit("h", func(context.Context) {
			close(g.started)
			<-g.release
		}))
		return g
	}
	a, b := submit(), submit()
	waitOrFail(t, a.started, "A to start")
	if k.Running("h") != 1 || k.Len() != 1 {
		t.Fatalf("Running(h) = %d, Len = %d; want 1 and 1 (B waits for the limit)", k.Running("h"), k.Len())
	}
	mustOK(t, k.SetLimit(2))
	waitOrFail(t, b.started, "B to start once the limit was raised")

	mustOK(t, k.SetLimit(1))
	c := submit()
	if k.Running("h") != 2 || k.Len() != 1 {
		t.Fatalf("after lowering: Running(h) = %d, Len = %d; want 2 and 1", k.Running("h"), k.Len())
	}
	close(a.release)
	boundedEventually(t, "A to end", func() bool { return k.Running("h") == 1 })
	if k.Len() != 1 || k.Stats().Ready != 0 {
		t.Fatalf("with B still at the limit: Len = %d, Stats %+v; want C queued, no group ready", k.Len(), k.Stats())
	}
	close(b.release)
	waitOrFail(t, c.started, "C to start once B ended")
	close(c.release)
	wantErr(t, "SetLimit(0)", k.SetLimit(0), smartpool.ErrBadLimit)
	if k.Limit() != 1 {
		t.Fatalf("Limit = %d after a refused SetLimit, want 1", k.Limit())
	}
}

// TestKeyedGroupsForgotten: a group's state goes once it has nothing queued
// and nothing in progress, so many distinct groups leave nothing behind.
func TestKeyedGroupsForgotten(t *testing.T) {
	k := served(newKeyed[int](t, 1))
	const n = 10000
	for g := range n {
		mustOK(t, k.Submit(g, noop))
	}
	if s := k.Stats(); s.Groups != n || s.Ready != n {
		t.Fatalf("Stats = %+v, want %d groups, all ready", s, n)
	}
	for task := src(k).Poll(0); task != nil; task = src(k).Poll(0) {
		task.Run(context.Background())
	}
	if s := k.Stats(); s != (channels.KeyedStats{Limit: 1}) {
		t.Fatalf("Stats = %+v, want empty", s)
	}
}

// TestKeyedPoolInFlightLimit: the Keyed's own submit methods take a unit of
// the pool's in-flight limit (Config.Limit), as every channel's must, and
// the unit comes back when the task ends.
func TestKeyedPoolInFlightLimit(t *testing.T) {
	k := newKeyed[string](t, 1)
	o := newKeyedPool(t, keyedBehavior{ch: k, workers: 1, coc: true, limit: 2})
	release := pin(t, func(task smartpool.Task) error { return k.SubmitTask("a", task) })
	ran := make(chan struct{})
	mustOK(t, k.Submit("b", func(context.Context) { close(ran) }))
	wantErr(t, "Submit at the pool's limit", k.Submit("c", noop), smartpool.ErrFull)
	wantErr(t, "Pool.Submit at the pool's limit", o.Pool().Submit(0, noop), smartpool.ErrFull)
	release()
	waitOrFail(t, ran, "the second task to run")
	boundedEventually(t, "the units to come back", func() bool { return o.Pool().Stats().Admitted == 0 })
	mustOK(t, k.Submit("c", noop))
	if tot := closePool(t, o).Total(); tot.Ran != 3 {
		t.Fatalf("report %+v, want 3 ran", tot)
	}
}
