package smartpool_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/smartpool-go/smartpool"
)

// The accounting harness (TESTING.md): every task has an ID and a channel,
// every submit is recorded as accepted or refused, and every accepted task
// must end in exactly one outcome: ran, panicked, goexited, dropped (through
// its channel's OnEnd) or cancelled (its submitter cancelled it and it never
// started). check compares the ledger with the pool's report, channel by
// channel, and, where the channels' OnEnd is the ledger's, with what OnEnd
// said of each task. Stress tests, the resize test and the fuzzers' checks
// share it.

type ending int

const (
	endRan ending = iota
	endPanicked
	endGoexited
	endDropped
)

func (e ending) String() string {
	return [...]string{"ran", "panicked", "goexited", "dropped"}[e]
}

type ledger struct {
	mu        sync.Mutex
	key       map[int]string   // accepted tasks' channels
	ends      map[int][]ending // what happened to each, in order
	refused   map[int]error
	cancelled map[int]bool                // cancel attempted: the task may end up cancelled
	hooked    bool                        // the channels' OnEnd is onEnd's: check compares it
	onEnds    map[int][]smartpool.Outcome // what OnEnd said of each task, in order
}

func newLedger() *ledger {
	return &ledger{key: map[int]string{}, ends: map[int][]ending{}, refused: map[int]error{}, cancelled: map[int]bool{},
		onEnds: map[int][]smartpool.Outcome{}}
}

// ledgerTask is a task with an ID; OnEnd callbacks get it back.
type ledgerTask struct {
	l    *ledger
	id   int
	body func(ctx context.Context)
}

// Run runs the body and records how it ended. A panic is recorded and goes
// on to the pool; runtime.Goexit is recorded from the deferred call, which
// still runs. (A task of a dropping channel that yields and comes back after
// Close is ended by the pool with Goexit and counted as dropped; the ledger
// would see goexited, so tests that yield use complete-on-close channels.)
func (t *ledgerTask) Run(ctx context.Context) {
	returned := false
	defer func() {
		switch {
		case returned:
			t.l.end(t.id, endRan)
		default:
			if p := recover(); p != nil {
				t.l.end(t.id, endPanicked)
				panic(p)
			}
			t.l.end(t.id, endGoexited)
		}
	}()
	if t.body != nil {
		t.body(ctx)
	}
	returned = true
}

// task returns the task with ID id; body may be nil.
func (l *ledger) task(id int, body func(context.Context)) *ledgerTask {
	return &ledgerTask{l: l, id: id, body: body}
}

// submitted records the result of submitting task id to channel key.
func (l *ledger) submitted(id int, key string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.refused[id] = err
		return
	}
	l.key[id] = key
}

// record is the simplest use: task id ran (for tests that count runs only).
func (l *ledger) record(id int) { l.end(id, endRan) }

// cancel notes that task id's submitter cancelled it.
func (l *ledger) cancel(id int) {
	l.mu.Lock()
	l.cancelled[id] = true
	l.mu.Unlock()
}

// onEnd returns an OnEnd callback for every channel of the pool: it records
// ledger tasks that were dropped as dropped, and what it was told of every
// ledger task, which check then compares with the task's ending.
func (l *ledger) onEnd() func(smartpool.Task, smartpool.Outcome) {
	l.mu.Lock()
	l.hooked = true
	l.mu.Unlock()
	return func(t smartpool.Task, o smartpool.Outcome) {
		lt, ok := t.(*ledgerTask)
		if !ok {
			return
		}
		l.mu.Lock()
		l.onEnds[lt.id] = append(l.onEnds[lt.id], o)
		if o.Dropped() {
			l.ends[lt.id] = append(l.ends[lt.id], endDropped)
		}
		l.mu.Unlock()
	}
}

// outcome is the Outcome OnEnd must report for a task that ended as e.
func (e ending) outcome() smartpool.Outcome {
	return [...]smartpool.Outcome{smartpool.Ran, smartpool.Panicked, smartpool.Goexited, 0}[e]
}

func (l *ledger) end(id int, e ending) {
	l.mu.Lock()
	l.ends[id] = append(l.ends[id], e)
	l.mu.Unlock()
}

// count returns how many tasks ended as e, per channel.
func (l *ledger) count(e ending) map[string]uint64 {
	n := map[string]uint64{}
	for id, es := range l.ends {
		for _, x := range es {
			if x == e {
				n[l.key[id]]++
			}
		}
	}
	return n
}

// check asserts the ledger identity and its agreement with r: no refused
// task ran; every accepted task ended exactly once, or never started and was
// cancelled; and each channel's Ran, Panicked, Goexited, Dropped and
// Cancelled in r equal the ledger's counts. With onEnd hooked, OnEnd said
// exactly once how each accepted task ended (a drop as one of the drops),
// and nothing of a refused one. It returns the problems found, at most ten.
func (l *ledger) check(r *smartpool.Report[string]) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []string
	add := func(format string, args ...any) {
		if len(errs) < 10 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}
	cancelled := map[string]uint64{}
	for id := range l.refused {
		if len(l.ends[id]) > 0 {
			add("task %d was refused (%v) but ended %v", id, l.refused[id], l.ends[id])
		}
	}
	ids := make([]int, 0, len(l.key))
	for id := range l.key {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		switch es := l.ends[id]; {
		case len(es) == 1:
		case len(es) == 0 && l.cancelled[id]:
			cancelled[l.key[id]]++
		default:
			add("task %d on %q ended %d times: %v", id, l.key[id], len(es), es)
		}
		if !l.hooked {
			continue
		}
		switch es, os := l.ends[id], l.onEnds[id]; {
		case len(es) == 0 && l.cancelled[id]:
			if !slices.Equal(os, []smartpool.Outcome{smartpool.Cancelled}) {
				add("task %d on %q was cancelled, but OnEnd said %v", id, l.key[id], os)
			}
		case len(es) != 1:
		case len(os) != 1 || es[0] == endDropped && !os[0].Dropped() || es[0] != endDropped && os[0] != es[0].outcome():
			add("task %d on %q %v, but OnEnd said %v", id, l.key[id], es[0], os)
		}
	}
	if l.hooked {
		for id := range l.refused {
			if os := l.onEnds[id]; len(os) > 0 {
				add("task %d was refused (%v) but OnEnd said %v", id, l.refused[id], os)
			}
		}
	}
	for id := range l.ends {
		if _, ok := l.key[id]; !ok {
			if _, refused := l.refused[id]; !refused {
				add("task %d ended but was never submitted", id)
			}
		}
	}
	ran, pan, gx, dr := l.count(endRan), l.count(endPanicked), l.count(endGoexited), l.count(endDropped)
	for _, c := range r.Channels {
		k := c.Key
		if c.Ran != ran[k] || c.Panicked != pan[k] || c.Goexited != gx[k] || c.Dropped != dr[k] || c.Cancelled != cancelled[k] {
			add("channel %q: report ran %d panicked %d goexited %d dropped %d cancelled %d; ledger %d %d %d %d %d",
				k, c.Ran, c.Panicked, c.Goexited, c.Dropped, c.Cancelled, ran[k], pan[k], gx[k], dr[k], cancelled[k])
		}
	}
	return errs
}

// requireBalanced fails t if check finds a problem.
func (l *ledger) requireBalanced(t testing.TB, r *smartpool.Report[string]) {
	t.Helper()
	if errs := l.check(r); len(errs) > 0 {
		t.Fatalf("ledger does not balance:\n  %s", strings.Join(errs, "\n  "))
	}
}

// The harness has teeth: a task ending twice, one never ending, a refused
// task that ran and a report that disagrees are all reported.
func TestLedger_CatchesMismatch(t *testing.T) {
	l := newLedger()
	l.submitted(1, "a", nil)
	l.submitted(2, "a", nil)
	l.submitted(3, "a", smartpool.ErrFull)
	l.record(1)
	l.record(1)
	l.record(3)
	errs := l.check(&smartpool.Report[string]{Channels: []smartpool.ChannelStats[string]{{Key: "a", Ran: 1}}})
	want := []string{"task 3 was refused", "task 1 on \"a\" ended 2 times", "task 2 on \"a\" ended 0 times", "channel \"a\": report ran 1"}
	for _, w := range want {
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.HasPrefix(e, w) }) {
			t.Errorf("check did not report %q; got %q", w, errs)
		}
	}

	hooked := newLedger()
	onEnd := hooked.onEnd()
	hooked.submitted(1, "a", nil)
	hooked.submitted(2, "a", nil)
	hooked.submitted(3, "a", nil)
	hooked.submitted(4, "a", smartpool.ErrFull)
	hooked.record(1)
	onEnd(hooked.task(1, nil), smartpool.DroppedOnClose)
	hooked.record(2)
	hooked.record(3)
	onEnd(hooked.task(3, nil), smartpool.Ran)
	onEnd(hooked.task(3, nil), smartpool.Ran)
	onEnd(hooked.task(4, nil), smartpool.Ran)
	errs = hooked.check(&smartpool.Report[string]{Channels: []smartpool.ChannelStats[string]{{Key: "a", Ran: 2, Dropped: 1}}})
	want = []string{"task 1 on \"a\" ended 2 times", "task 2 on \"a\" ran, but OnEnd said []", "task 3 on \"a\" ran, but OnEnd said [ran ran]",
		"task 4 was refused (smartpool: full) but OnEnd said [ran]"}
	for _, w := range want {
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.HasPrefix(e, w) }) {
			t.Errorf("check did not report %q; got %q", w, errs)
		}
	}

	ok := newLedger()
	ok.submitted(1, "a", nil)
	ok.cancel(1) // never ran: cancelled
	if errs := ok.check(&smartpool.Report[string]{Channels: []smartpool.ChannelStats[string]{{Key: "a", Cancelled: 1}}}); len(errs) > 0 {
		t.Errorf("a balanced ledger was reported: %q", errs)
	}
}
