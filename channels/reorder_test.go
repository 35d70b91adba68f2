package channels_test

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// reorderer returns c's Source as a smartpool.Reorderer, failing the test
// if it is not one.
func reorderer(t *testing.T, c smartpool.Channel) smartpool.Reorderer {
	t.Helper()
	r, ok := src(c).(smartpool.Reorderer)
	if !ok {
		t.Fatalf("%T's Source does not implement smartpool.Reorderer", c)
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
		ro    smartpool.Reorderer
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
