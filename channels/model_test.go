package channels_test

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// recorder identifies the tasks a channel returns: idTask values name
// themselves, functions made by fn record their ID when run.
type recorder struct{ last int }

func (r *recorder) fn(id int) func(context.Context) {
	return func(context.Context) { r.last = id }
}

func (r *recorder) id(t testing.TB, task smartpool.Task) int {
	t.Helper()
	switch task := task.(type) {
	case nil:
		return -1
	case idTask:
		return int(task)
	default:
		r.last = -2
		task.Run(context.Background())
		if r.last == -2 {
			t.Fatalf("polled a task of no known ID: %T", task)
		}
		return r.last
	}
}

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestFIFOModel(t *testing.T) {
	r := newRand(t)
	f := served(channels.NewFIFO())
	var rec recorder
	var model []int
	next := 0
	for step := range 5000 {
		switch op := r.IntN(10); {
		case op < 3:
			mustOK(t, src(f).Push(idTask(next), smartpool.Order{}))
			model = append(model, next)
			next++
		case op < 4:
			mustOK(t, f.Submit(rec.fn(next)))
			model = append(model, next)
			next++
		case op < 5:
			var fns []func(context.Context)
			for range r.IntN(4) {
				fns = append(fns, rec.fn(next))
				model = append(model, next)
				next++
			}
			mustOK(t, f.SubmitBatch(fns...))
		default:
			want := -1
			if len(model) > 0 {
				want, model = model[0], model[1:]
			}
			if got := rec.id(t, src(f).Poll(0)); got != want {
				t.Fatalf("step %d: Poll = %d, want %d", step, got, want)
			}
		}
		if f.Len() != len(model) {
			t.Fatalf("step %d: Len = %d, want %d", step, f.Len(), len(model))
		}
	}
	checkClose(t, f, &rec, model, r.IntN(2) == 0)
}

// checkClose closes ch with drop and checks that what it returns, or what
// Poll then returns, is want in order, and that submits are refused.
func checkClose(t *testing.T, ch smartpool.Channel, rec *recorder, want []int, drop bool) {
	t.Helper()
	out := src(ch).Close(drop)
	var got []int
	if drop {
		for _, task := range out {
			got = append(got, rec.id(t, task))
		}
		if ch.Len() != 0 {
			t.Fatalf("Len after Close(true) = %d", ch.Len())
		}
		if task := src(ch).Poll(0); task != nil {
			t.Fatalf("Poll after Close(true) = %v", task)
		}
	} else {
		if len(out) != 0 {
			t.Fatalf("Close(false) returned %d tasks", len(out))
		}
		for task := src(ch).Poll(0); task != nil; task = src(ch).Poll(0) {
			got = append(got, rec.id(t, task))
		}
	}
	if !slices.Equal(got, want) && len(got)+len(want) > 0 {
		t.Fatalf("Close(%v): got %v, want %v", drop, got, want)
	}
	if err := src(ch).Push(idTask(0), smartpool.Order{}); err != smartpool.ErrClosed {
		t.Fatalf("Push after Close = %v, want ErrClosed", err)
	}
}

// extremeDeadlines are deadlines at and beyond the ends of time.Time's
// range, plus some around now; the Unix ones overflow time's internal
// seconds on purpose.
func extremeDeadlines() []time.Time { return extremeDeadlinesAround(time.Now()) }

func extremeDeadlinesAround(now time.Time) []time.Time {
	return []time.Time{
		{},
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("east", 14*3600)),
		time.Unix(-1<<62, 0),
		time.Unix(1<<62, 0),
		time.Unix(math.MaxInt64, 999999999),
		time.Unix(math.MinInt64, 0),
		time.Unix(0, 0),
		now,
		now.Add(time.Nanosecond),
		now.Add(-time.Nanosecond),
		now.In(time.FixedZone("west", -5*3600)), // the same instant as now
		now.Round(0),                            // the same instant, no monotonic reading
		now.Add(time.Hour),
	}
}

// deadlineGen draws deadlines that often tie and often are extreme.
type deadlineGen struct {
	r        *rand.Rand
	base     time.Time
	extremes []time.Time
}

func newDeadlineGen(r *rand.Rand) *deadlineGen {
	return &deadlineGen{r: r, base: time.Now(), extremes: extremeDeadlines()}
}

func (g *deadlineGen) next() time.Time {
	switch g.r.IntN(4) {
	case 0:
		return g.extremes[g.r.IntN(len(g.extremes))]
	case 1: // few distinct values: many ties
		return g.base.Add(time.Duration(g.r.IntN(6)-3) * time.Millisecond)
	case 2: // a fresh reading with a monotonic clock
		return time.Now().Add(time.Duration(g.r.IntN(2001)-1000) * time.Microsecond)
	default:
		return time.Unix(int64(g.r.Uint64()), g.r.Int64N(1e9))
	}
}

// refDeadline is the reference model of Deadline: an unsorted slice searched
// for the minimum of (wall-clock deadline, submission order).
type refDeadline struct {
	items []refDeadlineItem
	seq   int
}

type refDeadlineItem struct {
	at      time.Time
	seq, id int
}

func (m *refDeadline) push(at time.Time, id int) {
	m.seq++
	m.items = append(m.items, refDeadlineItem{at: at, seq: m.seq, id: id})
}

func refDeadlineCmp(a, b refDeadlineItem) int {
	// Wall clock only: Round(0) drops the monotonic reading (see Deadline).
	if c := a.at.Round(0).Compare(b.at.Round(0)); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

func (m *refDeadline) pop() (refDeadlineItem, bool) {
	if len(m.items) == 0 {
		return refDeadlineItem{}, false
	}
	best := 0
	for i := range m.items {
		if refDeadlineCmp(m.items[i], m.items[best]) < 0 {
			best = i
		}
	}
	it := m.items[best]
	m.items = slices.Delete(m.items, best, best+1)
	return it, true
}

func (m *refDeadline) sortedIDs() []int {
	s := slices.Clone(m.items)
	slices.SortFunc(s, refDeadlineCmp)
	var ids []int
	for _, it := range s {
		ids = append(ids, it.id)
	}
	return ids
}

func TestDeadlineModel(t *testing.T) {
	r := newRand(t)
	g := newDeadlineGen(r)
	start := time.Now()
	d := served(channels.NewDeadline())
	var rec recorder
	var model refDeadline
	next := 0
	var surelyLate, maybeLate uint64
	for step := range 5000 {
		switch op := r.IntN(10); {
		case op < 3:
			at := g.next()
			mustOK(t, d.SubmitTask(at, idTask(next)))
			model.push(at, next)
			next++
		case op < 5:
			at := g.next()
			mustOK(t, d.Submit(at, rec.fn(next)))
			model.push(at, next)
			next++
		default:
			want := -1
			it, ok := model.pop()
			if ok {
				want = it.id
			}
			if got := rec.id(t, src(d).Poll(0)); got != want {
				t.Fatalf("step %d: Poll = %d, want %d", step, got, want)
			}
			if ok && it.at.Before(start) {
				surelyLate++
			}
			if ok && it.at.Before(time.Now()) {
				maybeLate++
			}
		}
		if d.Len() != len(model.items) {
			t.Fatalf("step %d: Len = %d, want %d", step, d.Len(), len(model.items))
		}
	}
	if late := d.Stats().Late; late < surelyLate || late > maybeLate {
		t.Fatalf("Stats().Late = %d, want between %d and %d", late, surelyLate, maybeLate)
	}
	checkClose(t, d, &rec, model.sortedIDs(), r.IntN(2) == 0)
}

// TestDeadlinePushIsNow checks Push's deadline: after every queued task due
// before it was pushed, before every task due after.
func TestDeadlinePushIsNow(t *testing.T) {
	d := served(channels.NewDeadline())
	now := time.Now()
	mustOK(t, d.SubmitTask(now.Add(time.Hour), idTask(3)))
	mustOK(t, d.SubmitTask(time.Time{}, idTask(1)))
	mustOK(t, src(d).Push(idTask(2), smartpool.Order{}))
	mustOK(t, d.SubmitTask(now.Add(-time.Second), idTask(0)))
	var got []int
	for task := src(d).Poll(0); task != nil; task = src(d).Poll(0) {
		got = append(got, idOf(t, task))
	}
	if want := []int{1, 0, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// refPriority is the reference model of Priority.
type refPriority struct {
	items []refPrioItem
	seq   int
}

type refPrioItem struct{ prio, seq, id int }

func refPrioCmp(a, b refPrioItem) int {
	if c := cmp.Compare(b.prio, a.prio); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

func (m *refPriority) push(prio, id int) {
	m.seq++
	m.items = append(m.items, refPrioItem{prio: prio, seq: m.seq, id: id})
}

func (m *refPriority) pop() int {
	if len(m.items) == 0 {
		return -1
	}
	best := 0
	for i := range m.items {
		if refPrioCmp(m.items[i], m.items[best]) < 0 {
			best = i
		}
	}
	id := m.items[best].id
	m.items = slices.Delete(m.items, best, best+1)
	return id
}

func (m *refPriority) sortedIDs() []int {
	s := slices.Clone(m.items)
	slices.SortFunc(s, refPrioCmp)
	var ids []int
	for _, it := range s {
		ids = append(ids, it.id)
	}
	return ids
}

func TestPriorityModel(t *testing.T) {
	r := newRand(t)
	p := served(channels.NewPriority())
	var rec recorder
	var model refPriority
	next := 0
	prio := func() int {
		switch r.IntN(8) {
		case 0:
			return math.MaxInt
		case 1:
			return math.MinInt
		case 2:
			return int(r.Uint64())
		default:
			return r.IntN(5) - 2 // ties
		}
	}
	for step := range 5000 {
		switch op := r.IntN(12); {
		case op < 3:
			pr := prio()
			mustOK(t, p.SubmitTask(pr, idTask(next)))
			model.push(pr, next)
			next++
		case op < 5:
			pr := prio()
			mustOK(t, p.Submit(pr, rec.fn(next)))
			model.push(pr, next)
			next++
		case op < 6:
			mustOK(t, src(p).Push(idTask(next), smartpool.Order{}))
			model.push(0, next)
			next++
		default:
			want := model.pop()
			if got := rec.id(t, src(p).Poll(0)); got != want {
				t.Fatalf("step %d: Poll = %d, want %d", step, got, want)
			}
		}
		if p.Len() != len(model.items) {
			t.Fatalf("step %d: Len = %d, want %d", step, p.Len(), len(model.items))
		}
	}
	checkClose(t, p, &rec, model.sortedIDs(), r.IntN(2) == 0)
}

// TestMultiModel checks that Push, Submit and Next rotate over the shards,
// that Poll routes to the right shard, FIFO per shard, and that every task is
// polled exactly once.
func TestMultiModel(t *testing.T) {
	t.Run("FIFO", func(t *testing.T) {
		r := newRand(t)
		n := 1 + r.IntN(5)
		m := served(channels.NewMulti(n, channels.NewFIFO))
		pushes := 0
		route := func() int { q := pushes % n; pushes++; return q }
		runMultiModel(t, r, m, n, route, func() smartpool.Channel { return m.Next() })
	})
	t.Run("nested", func(t *testing.T) {
		// Shards of several queues each: Poll must route by queue range.
		r := newRand(t)
		outer, inner := 1+r.IntN(4), 1+r.IntN(4)
		m := served(channels.NewMulti(outer, func() *channels.Multi[*channels.FIFO] {
			return channels.NewMulti(inner, channels.NewFIFO)
		}))
		pushes := 0
		innerPushes := make([]int, outer)
		route := func() int {
			s := pushes % outer
			pushes++
			q := s*inner + innerPushes[s]%inner
			innerPushes[s]++
			return q
		}
		runMultiModel(t, r, m, outer*inner, route, func() smartpool.Channel { return m.Next() })
	})
}

// runMultiModel drives m: route returns the queue the next push lands in,
// next returns the next shard (advancing the same rotation).
func runMultiModel(t *testing.T, r *rand.Rand, m smartpool.Channel, queues int, route func() int, next func() smartpool.Channel) {
	t.Helper()
	if src(m).Queues() != queues {
		t.Fatalf("Queues = %d, want %d", src(m).Queues(), queues)
	}
	var rec recorder
	model := make([][]int, queues)
	total := 0
	polled := map[int]int{}
	next2 := 0
	for step := range 4000 {
		switch op := r.IntN(10); {
		case op < 3:
			mustOK(t, src(m).Push(idTask(next2), smartpool.Order{}))
		case op < 4:
			mustOK(t, m.(interface {
				Submit(func(context.Context), ...smartpool.Option) error
			}).Submit(rec.fn(next2)))
		case op < 5:
			mustOK(t, src(next()).Push(idTask(next2), smartpool.Order{}))
		default:
			q := r.IntN(queues+2) - 1 // out-of-range queues poll nothing
			want := -1
			if q >= 0 && q < queues && len(model[q]) > 0 {
				want, model[q] = model[q][0], model[q][1:]
				total--
			}
			got := rec.id(t, src(m).Poll(q))
			if got != want {
				t.Fatalf("step %d: Poll(%d) = %d, want %d", step, q, got, want)
			}
			if got >= 0 {
				polled[got]++
			}
			continue
		}
		q := route()
		model[q] = append(model[q], next2)
		next2++
		total++
		if m.Len() != total {
			t.Fatalf("step %d: Len = %d, want %d", step, m.Len(), total)
		}
	}
	var want []int
	for q := range model {
		want = append(want, model[q]...)
	}
	out := src(m).Close(true)
	var got []int
	for _, task := range out {
		id := rec.id(t, task)
		got = append(got, id)
		polled[id]++
	}
	if !slices.Equal(got, want) && len(got)+len(want) > 0 {
		t.Fatalf("Close(true) = %v, want %v", got, want)
	}
	for id := range next2 {
		if polled[id] != 1 {
			t.Fatalf("task %d left the Multi %d times", id, polled[id])
		}
	}
}
