package channels_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/source"
)

// reorderer returns c's Source as a source.Reorderer, failing the test
// if it is not one.
func reorderer(t *testing.T, c smartpool.Channel) source.Reorderer {
	t.Helper()
	r, ok := src(c).(source.Reorderer)
	if !ok {
		t.Fatalf("%T's Source does not implement source.Reorderer", c)
	}
	return r
}

// TestPriorityReorderModel mixes indexed and plain submits, polls, and
// Reorder of queued and gone tasks, against the reference model: a moved
// task takes its new priority and keeps its submission order, the heap
// keeps every other task's order, and a task that left is not found.
func TestPriorityReorderModel(t *testing.T) {
	r := newRand(t)
	p := served(channels.NewPriority())
	ro := reorderer(t, p)
	var model refPriority
	indexed := map[int]bool{} // ids pushed by PushIndexed, still queued
	var gone []int            // indexed ids polled
	next := 0
	prio := func() int {
		switch r.IntN(8) {
		case 0:
			return math.MaxInt
		case 1:
			return math.MinInt
		default:
			return r.IntN(7) - 3 // ties
		}
	}
	for step := range 5000 {
		switch op := r.IntN(12); {
		case op < 3:
			pr := prio()
			mustOK(t, p.SubmitTask(pr, idTask(next)))
			model.push(pr, next)
			next++
		case op < 6:
			pr := prio()
			mustOK(t, ro.PushIndexed(idTask(next), smartpool.Order{Priority: pr, HasPriority: true}))
			model.push(pr, next)
			indexed[next] = true
			next++
		case op < 9 && len(indexed) > 0:
			ids := sortedKeys(indexed)
			id := ids[r.IntN(len(ids))]
			pr := prio()
			mustOK(t, ro.Reorder(idTask(id), smartpool.Order{Priority: pr, HasPriority: true}))
			for i := range model.items {
				if model.items[i].id == id {
					model.items[i].prio = pr
				}
			}
		case op < 10 && len(gone) > 0:
			id := gone[r.IntN(len(gone))]
			if err := ro.Reorder(idTask(id), smartpool.Order{Priority: 1, HasPriority: true}); !errors.Is(err, smartpool.ErrNotQueued) {
				t.Fatalf("step %d: Reorder of polled task %d = %v, want ErrNotQueued", step, id, err)
			}
		default:
			want := model.pop()
			if got := idOf(t, src(p).Poll(0)); got != want {
				t.Fatalf("step %d: Poll = %d, want %d", step, got, want)
			}
			if indexed[want] {
				delete(indexed, want)
				gone = append(gone, want)
			}
		}
		if p.Len() != len(model.items) {
			t.Fatalf("step %d: Len = %d, want %d", step, p.Len(), len(model.items))
		}
	}
	var rec recorder
	checkClose(t, p, &rec, model.sortedIDs(), true)
	for id := range indexed {
		if err := ro.Reorder(idTask(id), smartpool.Order{Priority: 1, HasPriority: true}); !errors.Is(err, smartpool.ErrNotQueued) {
			t.Fatalf("Reorder of task %d dropped by Close = %v, want ErrNotQueued", id, err)
		}
	}
}

// TestDeadlineReorderModel is TestPriorityReorderModel for Deadline.
func TestDeadlineReorderModel(t *testing.T) {
	r := newRand(t)
	g := newDeadlineGen(r)
	d := served(channels.NewDeadline())
	ro := reorderer(t, d)
	var model refDeadline
	indexed := map[int]bool{}
	var gone []int
	next := 0
	for step := range 5000 {
		switch op := r.IntN(12); {
		case op < 3:
			at := g.next()
			mustOK(t, d.SubmitTask(at, idTask(next)))
			model.push(at, next)
			next++
		case op < 6:
			at := g.next()
			mustOK(t, ro.PushIndexed(idTask(next), smartpool.Order{Deadline: at, HasDeadline: true}))
			model.push(at, next)
			indexed[next] = true
			next++
		case op < 9 && len(indexed) > 0:
			ids := sortedKeys(indexed)
			id := ids[r.IntN(len(ids))]
			at := g.next()
			mustOK(t, ro.Reorder(idTask(id), smartpool.Order{Deadline: at, HasDeadline: true}))
			for i := range model.items {
				if model.items[i].id == id {
					model.items[i].at = at
				}
			}
		case op < 10 && len(gone) > 0:
			id := gone[r.IntN(len(gone))]
			if err := ro.Reorder(idTask(id), smartpool.Order{Deadline: time.Now(), HasDeadline: true}); !errors.Is(err, smartpool.ErrNotQueued) {
				t.Fatalf("step %d: Reorder of polled task %d = %v, want ErrNotQueued", step, id, err)
			}
		default:
			want := -1
			if it, ok := model.pop(); ok {
				want = it.id
			}
			if got := idOf(t, src(d).Poll(0)); got != want {
				t.Fatalf("step %d: Poll = %d, want %d", step, got, want)
			}
			if indexed[want] {
				delete(indexed, want)
				gone = append(gone, want)
			}
		}
		if d.Len() != len(model.items) {
			t.Fatalf("step %d: Len = %d, want %d", step, d.Len(), len(model.items))
		}
	}
	var rec recorder
	checkClose(t, d, &rec, model.sortedIDs(), true)
	for id := range indexed {
		if err := ro.Reorder(idTask(id), smartpool.Order{Deadline: time.Now(), HasDeadline: true}); !errors.Is(err, smartpool.ErrNotQueued) {
			t.Fatalf("Reorder of task %d dropped by Close = %v, want ErrNotQueued", id, err)
		}
	}
}

// TestReorderErrors checks the answers that come before the search: a key
// the channel does not order by wraps ErrOption (for a nil task too, which
// is how the pool asks about a task that started), a nil or unknown task
// is not queued, and a task queued by plain Push is not indexed.
func TestReorderErrors(t *testing.T) {
	p := served(channels.NewPriority())
	d := served(channels.NewDeadline())
	byPrio := smartpool.Order{Priority: 1, HasPriority: true}
	byDeadline := smartpool.Order{Deadline: time.Now(), HasDeadline: true}
	for _, c := range []struct {
		name  string
		ch    smartpool.Channel
		ro    source.Reorderer
		wrong smartpool.Order
		right smartpool.Order
	}{
		{"Priority", p, reorderer(t, p), byDeadline, byPrio},
		{"Deadline", d, reorderer(t, d), byPrio, byDeadline},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, task := range []smartpool.Task{nil, idTask(1)} {
				if err := c.ro.Reorder(task, c.wrong); !errors.Is(err, smartpool.ErrOption) {
					t.Errorf("Reorder(%v) by the wrong key = %v, want ErrOption", task, err)
				}
			}
			if err := c.ro.PushIndexed(idTask(9), c.wrong); !errors.Is(err, smartpool.ErrOption) {
				t.Errorf("PushIndexed by the wrong key = %v, want ErrOption", err)
			}
			if err := c.ro.Reorder(nil, c.right); !errors.Is(err, smartpool.ErrNotQueued) {
				t.Errorf("Reorder(nil) = %v, want ErrNotQueued", err)
			}
			mustOK(t, src(c.ch).Push(idTask(2), smartpool.Order{}))
			if err := c.ro.Reorder(idTask(2), c.right); !errors.Is(err, smartpool.ErrNotQueued) {
				t.Errorf("Reorder of a task queued by Push = %v, want ErrNotQueued", err)
			}
		})
	}
}

// TestPriorityReorderKeepsOrder checks a reorder that lands among equal
// keys: the moved task keeps its place of submission, both up and down.
func TestPriorityReorderKeepsOrder(t *testing.T) {
	p := served(channels.NewPriority())
	ro := reorderer(t, p)
	for id := range 6 {
		mustOK(t, ro.PushIndexed(idTask(id), smartpool.Order{Priority: id % 2, HasPriority: true}))
	}
	// Priority 1: 1, 3, 5; priority 0: 0, 2, 4. Move 4 up among the 1s and
	// 3 down among the 0s.
	mustOK(t, ro.Reorder(idTask(4), smartpool.Order{Priority: 1, HasPriority: true}))
	mustOK(t, ro.Reorder(idTask(3), smartpool.Order{Priority: 0, HasPriority: true}))
	var got []int
	for task := src(p).Poll(0); task != nil; task = src(p).Poll(0) {
		got = append(got, idOf(t, task))
	}
	if want := []int{1, 4, 5, 0, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

func sortedKeys(m map[int]bool) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestMultiReorder: a Multi of Priority or Deadline shards indexes a task
// in the shard the rotation gives it and moves it there; a task polled, a
// nil task, one queued by plain Push answer ErrNotQueued, and the other key
// wraps ErrOption, for a nil task too.
func TestMultiReorder(t *testing.T) {
	now := time.Now()
	byPrio := func(p int) smartpool.Order { return smartpool.Order{Priority: p, HasPriority: true} }
	byDeadline := func(p int) smartpool.Order {
		return smartpool.Order{Deadline: now.Add(-time.Duration(p) * time.Hour), HasDeadline: true} // higher p: earlier
	}
	for _, c := range []struct {
		name  string
		ch    smartpool.Channel
		order func(int) smartpool.Order
		other smartpool.Order
	}{
		{"Priority", served(channels.NewMulti(3, channels.NewPriority)), byPrio, byDeadline(0)},
		{"Deadline", served(channels.NewMulti(3, func() *channels.Deadline { return channels.NewDeadline() })), byDeadline, byPrio(0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			ro := reorderer(t, c.ch)
			for id := range 9 { // id goes to shard id%3
				mustOK(t, ro.PushIndexed(idTask(id), c.order(0)))
			}
			mustOK(t, ro.Reorder(idTask(7), c.order(10)))
			mustOK(t, ro.Reorder(idTask(2), c.order(5)))
			mustOK(t, ro.Reorder(idTask(5), c.order(-1)))
			for _, err := range []error{ro.Reorder(idTask(4), c.other), ro.Reorder(nil, c.other)} {
				if !errors.Is(err, smartpool.ErrOption) {
					t.Errorf("Reorder by the other key = %v, want ErrOption", err)
				}
			}
			for _, task := range []smartpool.Task{nil, idTask(99)} {
				if err := ro.Reorder(task, c.order(1)); !errors.Is(err, smartpool.ErrNotQueued) {
					t.Errorf("Reorder(%v) = %v, want ErrNotQueued", task, err)
				}
			}
			mustOK(t, src(c.ch).Push(idTask(9), c.order(0))) // shard 0, not indexed
			if err := ro.Reorder(idTask(9), c.order(1)); !errors.Is(err, smartpool.ErrNotQueued) {
				t.Errorf("Reorder of a task queued by Push = %v, want ErrNotQueued", err)
			}
			for q, want := range [][]int{{0, 3, 6, 9}, {7, 1, 4}, {2, 8, 5}} {
				var got []int
				for task := src(c.ch).Poll(q); task != nil; task = src(c.ch).Poll(q) {
					got = append(got, idOf(t, task))
				}
				if !slices.Equal(got, want) {
					t.Errorf("shard %d: order %v, want %v", q, got, want)
				}
			}
			if err := ro.Reorder(idTask(7), c.order(1)); !errors.Is(err, smartpool.ErrNotQueued) {
				t.Errorf("Reorder of a polled task = %v, want ErrNotQueued", err)
			}
		})
	}
}

// TestMultiReorderFIFO: a Multi of FIFOs queues an indexed task as Push
// does, and refuses every move with ErrOption.
func TestMultiReorderFIFO(t *testing.T) {
	m := served(channels.NewMulti(2, channels.NewFIFO))
	ro := reorderer(t, m)
	mustOK(t, ro.PushIndexed(idTask(1), smartpool.Order{}))
	if err := ro.PushIndexed(idTask(2), smartpool.Order{Priority: 1, HasPriority: true}); !errors.Is(err, smartpool.ErrOption) {
		t.Errorf("PushIndexed with a priority = %v, want ErrOption", err)
	}
	for _, task := range []smartpool.Task{nil, idTask(1)} {
		for _, o := range []smartpool.Order{{Priority: 1, HasPriority: true}, {Deadline: time.Now(), HasDeadline: true}} {
			if err := ro.Reorder(task, o); !errors.Is(err, smartpool.ErrOption) {
				t.Errorf("Reorder(%v, %+v) = %v, want ErrOption", task, o, err)
			}
		}
	}
	if got := idOf(t, src(m).Poll(0)); got != 1 {
		t.Fatalf("Poll = %d, want 1", got)
	}
}

// TestKeyedNotReorderer: a Keyed has no order key, so its Source offers no
// Reorder (a Handle's moves are refused by the pool; see TestHandleKeyed).
func TestKeyedNotReorderer(t *testing.T) {
	k, err := channels.NewKeyed[string](1)
	mustOK(t, err)
	if _, ok := src(k).(source.Reorderer); ok {
		t.Fatal("a Keyed's Source is a Reorderer")
	}
}

// TestReorderRace moves and cancels tasks through their handles while
// submitters queue more and workers poll and run them, in every channel
// that reorders: each move answers nil or ErrNotQueued, and each task ends
// exactly once, run or cancelled, as its Cancel reported. Run it with
// -race: a move takes the shard's lock against the workers' polls.
func TestReorderRace(t *testing.T) {
	deadline := func() *channels.Deadline { return channels.NewDeadline() }
	now := time.Now()
	for _, c := range []struct {
		name string
		ch   func() smartpool.Channel
		key  func(i int) smartpool.Order
		move func(h *smartpool.Handle, i int) error
	}{
		{"Priority", func() smartpool.Channel { return channels.NewPriority() },
			func(i int) smartpool.Order { return smartpool.Order{Priority: i % 7, HasPriority: true} },
			func(h *smartpool.Handle, i int) error { return h.Reprioritize(i % 11) }},
		{"Deadline", func() smartpool.Channel { return channels.NewDeadline() },
			func(i int) smartpool.Order {
				return smartpool.Order{Deadline: now.Add(time.Duration(i%7) * time.Second), HasDeadline: true}
			},
			func(h *smartpool.Handle, i int) error {
				return h.SetDeadline(now.Add(time.Duration(i%11) * time.Second))
			}},
		{"MultiPriority", func() smartpool.Channel { return channels.NewMulti(4, channels.NewPriority) },
			func(i int) smartpool.Order { return smartpool.Order{Priority: i % 7, HasPriority: true} },
			func(h *smartpool.Handle, i int) error { return h.Reprioritize(i % 11) }},
		{"MultiDeadline", func() smartpool.Channel { return channels.NewMulti(4, deadline) },
			func(i int) smartpool.Order {
				return smartpool.Order{Deadline: now.Add(time.Duration(i%7) * time.Second), HasDeadline: true}
			},
			func(h *smartpool.Handle, i int) error {
				return h.SetDeadline(now.Add(time.Duration(i%11) * time.Second))
			}},
	} {
		t.Run(c.name, func(t *testing.T) { reorderRace(t, c.ch(), c.key, c.move) })
	}
}

// raceTask records how often it ran.
type raceTask struct{ ran atomic.Int32 }

func (r *raceTask) Run(context.Context) {
	r.ran.Add(1)
	runtime.Gosched() // let the movers reach the queue while this worker is busy
}

func reorderRace(t *testing.T, ch smartpool.Channel, key func(int) smartpool.Order, move func(*smartpool.Handle, int) error) {
	const submitters, movers = 2, 2
	n := 2000
	if testing.Short() {
		n = 300
	}
	var ended, cancelledEnds, moved atomic.Int32
	o := newPool(t, poolOpts{workers: 2, coc: true, onEnd: func(_ smartpool.Task, out smartpool.Outcome) {
		if out == smartpool.Cancelled {
			cancelledEnds.Add(1)
		}
		ended.Add(1)
	}}, ch)
	p := o.Pool()
	tasks := make([]*raceTask, n)
	handles := make([]smartpool.Handle, n)
	queued := make(chan int, n)
	var cancelled [2][]bool // by canceller, per task
	var wg sync.WaitGroup
	for s := range submitters {
		wg.Go(func() {
			for i := s; i < n; i += submitters {
				tasks[i] = new(raceTask)
				o := key(i)
				opt := smartpool.WithPriority(o.Priority)
				if o.HasDeadline {
					opt = smartpool.WithDeadline(o.Deadline)
				}
				if err := p.SubmitTask(0, tasks[i], opt, smartpool.WithHandle(&handles[i])); err != nil {
					t.Errorf("submit %d: %v", i, err)
					continue
				}
				queued <- i
			}
		})
	}
	moves := make(chan int, n)
	var movesWG sync.WaitGroup
	for m := range movers {
		movesWG.Go(func() {
			for i := range queued {
				h := handles[i] // written by its submit before i was sent
				for k := range 3 {
					switch err := move(&h, i+k+m); {
					case err == nil:
						moved.Add(1)
					case !errors.Is(err, smartpool.ErrNotQueued):
						t.Errorf("move %d: %v", i, err)
					}
				}
				moves <- i
			}
		})
	}
	for c := range cancelled {
		cancelled[c] = make([]bool, n)
	}
	var cancelWG sync.WaitGroup
	for c := range cancelled {
		cancelWG.Go(func() {
			for i := range moves {
				if i%3 == 0 {
					h := handles[i]
					cancelled[c][i] = h.Cancel()
				}
			}
		})
	}
	wg.Wait()
	close(queued)
	movesWG.Wait()
	close(moves)
	cancelWG.Wait()
	rep := closePool(t, o)
	cancels := 0
	for i, task := range tasks {
		if task == nil {
			continue
		}
		c := cancelled[0][i] || cancelled[1][i]
		if cancelled[0][i] && cancelled[1][i] {
			t.Fatalf("task %d: both Cancels won", i)
		}
		if c {
			cancels++
		}
		if ran := task.ran.Load(); ran > 1 || (ran == 1) == c {
			t.Fatalf("task %d: ran %d times, cancelled %v: want exactly one", i, ran, c)
		}
	}
	st, _ := rep.Channel(0)
	if int(st.Cancelled) != cancels || int(cancelledEnds.Load()) != cancels || int(ended.Load()) != n || int(st.Ran) != n-cancels {
		t.Fatalf("report: ran %d, cancelled %d, %d endings (%d cancelled); want %d, %d, %d", st.Ran, st.Cancelled, ended.Load(), cancelledEnds.Load(), n-cancels, cancels, n)
	}
	if moved.Load() == 0 {
		t.Fatal("no move found its task queued: the test raced nothing")
	}
	t.Logf("%d tasks, %d cancelled, %d moves of a queued task", n, cancels, moved.Load())
}
