// FuzzPoolOps, its order: a reference model of which task the pool should
// start next (levels, rotation, deadlines, priorities), checked against the
// starts the harness saw.
package smartpool_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/smartpool-go/smartpool"
)

type fzItem struct {
	id    int
	a, b  int64
	seq   int
	group int  // Keyed: the group whose slot it takes; -1: a re-entry (Requeue), outside the groups
	ghost bool // cancelled while queued: polled and skipped, never started
}

type fzModel struct {
	queues      [][]fzItem // per global queue
	cursor      [fzLevels]int
	exact       bool
	closed      bool
	seq         int
	running     map[[2]int]int // Keyed (channel, group): tasks started and not ended
	slot        map[int][2]int // task -> the Keyed (channel, group) slot it holds
	klimit      int
	klimitKnown bool
}

// before reports whether queue item o is served before it, in channel ch.
func (m *fzModel) before(ch int, o, it fzItem) bool {
	if fzLayout[ch].keyed {
		if (o.group < 0) != (it.group < 0) {
			return o.group < 0
		}
		return o.seq < it.seq
	}
	return o.a < it.a || o.a == it.a && (o.b < it.b || o.b == it.b && o.seq < it.seq)
}

// takes reports whether a poll of o's queue could return o now (a Keyed
// group with a free slot), and whether that is known; same: o is in the
// group of the task that was polled (whose group had a free slot).
func (m *fzModel) takes(ch int, o fzItem, same bool) (take, known bool) {
	if !fzLayout[ch].keyed || o.group < 0 || same {
		return true, true
	}
	n := m.running[[2]int{ch, o.group}]
	switch {
	case n == 0:
		return true, true
	case m.klimitKnown:
		return n < m.klimit, true
	}
	return false, false
}

func (m *fzModel) head(q int) int {
	ch, best := fzQueueCh[q], -1
	for i, it := range m.queues[q] {
		if take, _ := m.takes(ch, it, false); take && (best < 0 || m.before(ch, it, m.queues[q][best])) {
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
			if m.head(first+i) >= 0 {
				m.cursor[l] = (i + 1) % n
				return first + i
			}
		}
	}
	return -1
}

func (m *fzModel) find(id int) (q, at int) {
	for i := range m.queues {
		for j, it := range m.queues[i] {
			if it.id == id {
				return i, j
			}
		}
	}
	return -1, -1
}

func (m *fzModel) remove(q, id int) {
	m.queues[q] = slices.DeleteFunc(m.queues[q], func(it fzItem) bool { return it.id == id })
}

func (m *fzModel) start(id int) error {
	q, at := m.find(id)
	if q < 0 {
		return fmt.Errorf("task %d started but is not queued (dropped at close, refused, or started twice)", id)
	}
	it, ch := m.queues[q][at], fzQueueCh[q]
	if it.ghost {
		return fmt.Errorf("task %d (%s) started, although the test had cancelled its WithContext context while it was queued and the only worker pinned",
			id, fzLayout[ch].key)
	}
	if m.exact && len(m.slot) > 0 {
		m.exact = false // cannot happen: a task in progress at a poll has yielded
	}
	if m.exact {
		for {
			p := m.pick()
			if p < 0 {
				return fmt.Errorf("task %d (queue %d) started; the model has nothing to run", id, q)
			}
			o := m.queues[p][m.head(p)]
			if o.ghost {
				m.remove(p, o.id) // polled and skipped
				continue
			}
			if o.id != id {
				return fmt.Errorf("task %d (queue %d) started; the model expected task %d (queue %d)", id, q, o.id, p)
			}
			break
		}
	} else {
		var skipped []int
		check := func(p int, o fzItem, same bool) error {
			if take, known := m.takes(fzQueueCh[p], o, same); !take || !known {
				return nil
			}
			if o.ghost {
				skipped = append(skipped, o.id) // polled and skipped before
				return nil
			}
			if p == q {
				return fmt.Errorf("task %d started ahead of task %d in queue %d", id, o.id, q)
			}
			return fmt.Errorf("task %d started on level %d while task %d waited in queue %d of a higher level",
				id, fzLayout[ch].level, o.id, p)
		}
		for _, o := range m.queues[q] {
			if o.id != id && m.before(ch, o, it) {
				if err := check(q, o, fzLayout[ch].keyed && o.group >= 0 && o.group == it.group); err != nil {
					return err
				}
			}
		}
		for p := range fzFirst[fzChans] {
			if fzLayout[fzQueueCh[p]].level < fzLayout[ch].level {
				for _, o := range m.queues[p] {
					if err := check(p, o, false); err != nil {
						return err
					}
				}
			}
		}
		for _, g := range skipped {
			gq, _ := m.find(g)
			m.remove(gq, g)
		}
	}
	m.remove(q, id)
	if fzLayout[ch].keyed && it.group >= 0 {
		k := [2]int{ch, it.group}
		m.slot[id] = k
		m.running[k]++
	}
	return nil
}

// checkOrder replays the one-worker log through the model.
func (r *fzRun) checkOrder() {
	t := r.t
	r.mu.Lock()
	events := slices.Clone(r.events)
	// Tasks that ended cancelled: whenever the cancellation came, it came
	// before the worker reached them, which skipped them there.
	ghost := make([]bool, len(r.specs))
	for id := range ghost {
		ghost[id] = r.accepted[id] == 1 && len(r.outcomes[id]) == 0 && r.ghostLocked(id)
	}
	r.mu.Unlock()
	m := &fzModel{queues: make([][]fzItem, fzFirst[fzChans]), exact: true,
		running: map[[2]int]int{}, slot: map[int][2]int{}, klimit: r.klimit, klimitKnown: true}
	// The in-flight limit: the units held (the gate's first), whether that
	// count is known, the limit in force, the tasks that handed their unit
	// on.
	held, heldKnown, limit, opened := 0, true, r.limit, false
	if r.limit > 0 {
		held = 1
	}
	handedOff := map[int]bool{}
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
			s, ch := r.specs[ev.id], fzQueueCh[ev.q]
			group := s.group
			if !ev.heir {
				held++
			} else if m.closed {
				if !fzLayout[ch].coc {
					// Requeued into a dropping channel Close had not emptied
					// yet: Close or the worker drops it (the ledger checks),
					// and the worker's cursor may move for it.
					m.exact = false
					continue
				}
				if fzLayout[ch].keyed {
					group = -1 // through Requeue: a re-entry, served first
				}
			}
			m.seq++
			m.queues[ev.q] = append(m.queues[ev.q], fzItem{id: ev.id, a: ev.a, b: ev.b, seq: m.seq, group: group, ghost: ghost[ev.id]})
		case evEnd:
			if ev.id < 0 || !handedOff[ev.id] {
				held--
			}
			if k, ok := m.slot[ev.id]; ok {
				m.running[k]--
				delete(m.slot, ev.id)
			}
		case evOpen:
			opened = true
		case evClose:
			m.closed, heldKnown = true, false
			for q := range m.queues {
				if !fzLayout[fzQueueCh[q]].coc {
					m.queues[q] = nil // dropped by Close; checkLedger checks they were
				}
			}
		case evCancel:
			q, at := m.find(ev.id)
			if q < 0 {
				fail(i, "task %d was cancelled while pinned but is not queued", ev.id)
			}
			m.queues[q][at].ghost = true
			if ev.resolved {
				held--
			} else {
				heldKnown = false // its unit comes back on the AfterFunc's goroutine, at no known point
			}
		case evLimit:
			limit = ev.n
		case evKLimit:
			if opened || r.maxWorkers > 1 {
				m.klimitKnown = false // it takes effect at no known point of a worker's run (logged before SetLimit)
			} else {
				m.klimit = ev.n
			}
		case evChild:
			unknown := r.specs[ev.id].ch < 0
			held := held
			if ev.err == nil {
				held-- // its push, logged before, took the unit
			}
			want := error(nil)
			switch {
			case m.closed:
				want = smartpool.ErrClosed
			case unknown:
				want = smartpool.ErrUnknownKey
			case r.limit > 0 && !heldKnown:
				if ev.err == nil || errors.Is(ev.err, smartpool.ErrFull) {
					continue
				}
				want = smartpool.ErrFull
			case r.limit > 0 && held >= limit:
				want = smartpool.ErrFull
			}
			if !errors.Is(ev.err, want) || (want == nil) != (ev.err == nil) {
				fail(i, "child %d: Submit returned %v, want %v (units held %d, limit %d)", ev.id, ev.err, want, held, limit)
			}
		case evHandoff:
			if err := fzHandoffResult(r.specs[ev.id], ev.err, m.closed, r.limit > 0, true); err != nil {
				fail(i, "handoff of task %d to task %d: %v", ev.from, ev.id, err)
			}
			if ev.err == nil && r.limit > 0 {
				handedOff[ev.from] = true
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
		for _, it := range items {
			if fzLayout[fzQueueCh[q]].coc && !it.ghost {
				fail(len(events)-1, "complete-on-close task %d never started", it.id)
			}
		}
	}
}
