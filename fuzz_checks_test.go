// FuzzPoolOps, its books: every task ends once, and the pool's Stats, the
// Close report and the OnEnd ledger agree with what the harness saw.
package smartpool_test

import (
	"errors"
	"fmt"
	"slices"

	"github.com/smartpool-go/smartpool"
)

func fzStatCounts(s smartpool.ChannelStats[string]) [5]uint64 {
	return [5]uint64{s.Ran, s.Panicked, s.Goexited, s.Dropped, s.Cancelled}
}

// checkShape checks what every Stats snapshot must satisfy. live: taken by
// the test goroutine, which knows the limit in force and the submitters
// that may wait (a report may predate a SetLimit made during Close).
func (r *fzRun) checkShape(s *smartpool.Stats[string], live bool) error {
	if s.Workers != r.target || len(s.Channels) != fzChans || s.Suspended < 0 {
		return fmt.Errorf("stats: %d workers (want %d), %d channels, %d suspended", s.Workers, r.target, len(s.Channels), s.Suspended)
	}
	maxLimit := r.maxLimit.Load()
	switch {
	case r.limit == 0 && (s.Limit != 0 || s.Admitted != 0 || s.Waiting != 0):
		return fmt.Errorf("stats of a pool without a limit: limit %d, %d admitted, %d waiting", s.Limit, s.Admitted, s.Waiting)
	case r.limit > 0 && (s.Limit < 0 || int64(s.Limit) > maxLimit || live && s.Limit != r.curLimit):
		return fmt.Errorf("stats: limit %d, want %d (never above %d)", s.Limit, r.curLimit, maxLimit)
	case s.Admitted < 0 || int64(s.Admitted) > maxLimit:
		return fmt.Errorf("stats: %d admitted; no limit above %d was ever set", s.Admitted, maxLimit)
	case s.Waiting < 0 || live && s.Waiting > len(r.pending)+r.ownersAtStats:
		return fmt.Errorf("stats: %d waiting, %d WithContext submits left waiting, %d nest owners spawning", s.Waiting, len(r.pending), r.ownersAtStats)
	}
	for i, c := range s.Channels {
		l := fzLayout[i]
		if c.Key != l.key || c.Level != l.level || c.CompleteOnClose != l.coc || c.Queued < 0 {
			return fmt.Errorf("stats channel %d: %+v, want %s on level %d, coc %v", i, c, l.key, l.level, l.coc)
		}
		if l.coc && c.Dropped != 0 && !r.dropRemoved[i] {
			return fmt.Errorf("complete-on-close channel %s dropped %d tasks", l.key, c.Dropped)
		}
	}
	return nil
}

// checkPinned checks a snapshot taken while the only worker is pinned:
// nothing has run, every accepted task is queued (cancelled ones too, until
// a worker skips them), the cancellations seen so far are counted, and the
// pool holds a unit for the gate and each accepted task not cancelled.
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
		if c.Queued != queued[i] || c.Finished() != c.Cancelled || c.Cancelled != r.expCancelled[i] {
			return fmt.Errorf("pinned stats of %s: %d queued, %d finished, %d cancelled; want %d queued, none finished but %d cancelled",
				c.Key, c.Queued, c.Finished(), c.Cancelled, queued[i], r.expCancelled[i])
		}
	}
	if r.limit > 0 && (s.Admitted != r.held || s.Waiting != r.alivePending()) {
		return fmt.Errorf("pinned stats: %d admitted, %d waiting; want %d, %d", s.Admitted, s.Waiting, r.held, r.alivePending())
	}
	return nil
}

// resolve waits, in the exact phase, until the pool counted the
// cancellations of queued tasks the test made since the last call and gave
// their units back.
func (r *fzRun) resolve() {
	if len(r.unresolved) == 0 {
		return
	}
	for _, id := range r.unresolved {
		r.expCancelled[r.specs[id].ch]++
		if r.limit > 0 {
			r.held--
		}
	}
	fzWait(r.t, "the pool counting cancelled queued tasks", func() error {
		s := r.stats()
		for i, c := range s.Channels {
			if c.Cancelled != r.expCancelled[i] {
				return fmt.Errorf("%s: %d cancelled, want %d", c.Key, c.Cancelled, r.expCancelled[i])
			}
		}
		if r.limit > 0 && s.Admitted != r.held {
			return fmt.Errorf("%d admitted, want %d", s.Admitted, r.held)
		}
		return nil
	})
	for _, id := range r.unresolved {
		r.log(fzEvent{kind: evCancel, id: id, resolved: true})
	}
	r.unresolved = nil
}

// checkReport checks the report of the first Close to return. Every
// complete-on-close task has finished by then, so those channels match the
// ledger exactly, except Cancelled: a cancellation is counted by the
// context's AfterFunc, which may run after the worker skipped the task.
// DROP channels may still see suspended tasks dropped later.
//
// Admitted is not always zero yet: a DROP task suspended at Close keeps its
// unit until its wait returns and it is dropped; a cancellation's unit comes
// back on the AfterFunc's goroutine; a WithContext submit woken by Close, or a
// submit that raced Close, gives back a unit it took only as it returns. So
// the report is checked against those, and the final Stats (countsMatch)
// must reach zero admitted and zero waiting.
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
	rep = r.normalize(rep, r.reshapeSnap())
	if err := r.checkShape(rep, false); err != nil {
		t.Fatalf("report: %v", err)
	}
	var dropping [fzChans]uint64
	slack := r.nCancels + r.nPending + max(int(r.nestOwners.Load()), r.ownersAtClose)
	if !r.exact {
		slack++ // a submit racing Close
	}
	r.mu.Lock()
	for id, a := range r.accepted {
		s := r.specs[id]
		if a != 1 {
			continue
		}
		if fzLayout[s.ch].coc && len(r.outcomes[id]) == 0 && !r.ghostLocked(id) {
			t.Errorf("Close returned before complete-on-close task %d (%s) finished", id, fzLayout[s.ch].key)
		}
		if !fzLayout[s.ch].coc && s.yields > 0 {
			slack++
			if len(r.outcomes[id]) == 0 {
				dropping[s.ch]++ // counted as dropped just before OnEnd records it
			}
		}
	}
	for _, rec := range r.side {
		if rec.yield {
			slack++ // suspended at Close, like a DROP task that yields
		}
		if _, ended := rec.endingLocked(); !ended && !fzLayout[rec.ch].coc {
			// Dropped and counted, but not recorded yet: its deferred calls
			// (after a Yield) or its Future or Group (resolved on another
			// goroutine) record it later.
			dropping[rec.ch]++
		}
	}
	r.mu.Unlock()
	// The ledger after dropping: a dropped task's OnEnd that comes between
	// the two is in the ledger and not in dropping, never in both or neither.
	led, nestSlack := r.countsWithNests()
	if rep.Admitted > slack {
		t.Errorf("report: %d units admitted; at most %d may still be held", rep.Admitted, slack)
	}
	for i, c := range rep.Channels {
		if r.reshaped[i] {
			// A removal may have been in flight at Close: which of the
			// channel's counts the report holds and which the removal
			// returned afterwards is not known here (countsMatch is exact).
			continue
		}
		if i >= fzSL && i <= fzSR {
			// Side tasks' endings reach the ledger from other goroutines
			// (Futures, Groups, deferred calls) after Close's report; their
			// channels are checked exactly once everything ended
			// (countsMatch, checkSide).
			continue
		}
		got := fzStatCounts(c)
		if c.Queued != 0 {
			t.Errorf("report: %s still has %d queued", c.Key, c.Queued)
		}
		led[i][3] += dropping[i]
		led[i][4] += nestSlack[i]
		for k := range got {
			if fzLayout[i].coc && k < 4 && got[k] != led[i][k] || got[k] > led[i][k] {
				t.Errorf("report for %s: ran/panicked/goexited/dropped/cancelled %v, ledger %v", c.Key, got, led[i])
				break
			}
		}
	}
}

// countsMatch compares a snapshot with the ledger once everything ended:
// every counter, no unit held, nobody waiting for one, the complete-on-close
// Keyed channel empty with no slot held. (The dropping one may keep a slot:
// a task a worker polls as Close starts is dropped without running and
// never gives its slot back, as channels.Keyed documents.)
func (r *fzRun) countsMatch() error {
	s := r.liveStats()
	if err := r.checkShape(s, true); err != nil {
		return err
	}
	if s.Suspended != 0 {
		return fmt.Errorf("%d tasks still suspended", s.Suspended)
	}
	led, nestSlack := r.countsWithNests()
	for i, c := range s.Channels {
		got := fzStatCounts(c)
		if got[4] >= led[i][4] && got[4] <= led[i][4]+nestSlack[i] {
			got[4] = led[i][4] // a nest's spawn refused at Close, or skipped as cancelled: the test cannot tell
		}
		if got != led[i] || c.Queued != 0 {
			return fmt.Errorf("stats for %s: ran/panicked/goexited/dropped/cancelled %v, %d queued; ledger %v", c.Key, got, c.Queued, led[i])
		}
	}
	if s.Admitted != 0 || s.Waiting != 0 {
		return fmt.Errorf("every task ended, yet %d units admitted and %d submitters waiting", s.Admitted, s.Waiting)
	}
	if k := r.keyed[0].Stats(); k.Queued != 0 || k.Running != 0 || k.Groups != 0 || k.Ready != 0 {
		return fmt.Errorf("kC after the end: %+v", k)
	}
	if k := r.keyed[1].Stats(); k.Queued != 0 || k.Ready != 0 {
		return fmt.Errorf("kD after the end: %+v", k)
	}
	return nil
}

// checkLedger: each accepted task has exactly one outcome (or none, if the
// test cancelled it and it never started: counted cancelled, see counts)
// and started at most once, and it started exactly when it was not dropped
// from a queue; refused ones never ran; complete-on-close tasks are never
// dropped; the panic handler saw each panic once, for the task's channel;
// no more task pieces ran at once than the most workers ever asked for
// (retiring workers finish their task); no Keyed group had more tasks in
// progress than the highest limit ever set.
func (r *fzRun) checkLedger() {
	t := r.t
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.problems {
		t.Error(p)
	}
	for _, ev := range r.events {
		switch {
		case ev.kind == evClose && ev.id >= 0 && !errors.Is(ev.err, smartpool.ErrCloseFromTask):
			t.Errorf("Close from inside task %d returned %v, want ErrCloseFromTask", ev.id, ev.err)
		case ev.kind == evChild && r.gone(r.specs[ev.id].ch, ev.err), ev.kind == evHandoff && r.gone(r.specs[ev.id].ch, ev.err):
			// refused by a channel being removed, or by its key once removed
		case ev.kind == evChild && !r.exact:
			// With two workers a child races Close: only the error kinds
			// are known. (With one, checkOrder knows each result.)
			unknown := r.specs[ev.id].ch < 0
			switch {
			case errors.Is(ev.err, smartpool.ErrClosed):
				if ev.state < smartpool.Closing {
					t.Errorf("child %d refused with ErrClosed while the pool was %v", ev.id, ev.state)
				}
			case errors.Is(ev.err, smartpool.ErrFull) && r.limit > 0 && !unknown:
			case ev.err == nil && unknown, ev.err != nil && !(unknown && errors.Is(ev.err, smartpool.ErrUnknownKey)):
				t.Errorf("child %d (unknown key %v): Submit returned %v", ev.id, unknown, ev.err)
			}
		case ev.kind == evHandoff && !r.exact:
			if err := fzHandoffResult(r.specs[ev.id], ev.err, ev.state >= smartpool.Closing, r.limit > 0, false); err != nil {
				t.Errorf("handoff of task %d to task %d (pool %v): %v", ev.from, ev.id, ev.state, err)
			}
		}
	}
	panicked := map[string]int{}
	for id, outs := range r.outcomes {
		s := r.specs[id]
		starts := r.starts[id]
		switch {
		case r.accepted[id] != 1 && (len(outs) != 0 || starts != 0):
			t.Errorf("task %d was not accepted (%d) but has outcomes %v and %d starts", id, r.accepted[id], outs, starts)
		case r.accepted[id] != 1:
		case len(outs) == 0 && r.ghostLocked(id): // cancelled: countsMatch matched the count
		case len(outs) != 1 || starts > 1:
			t.Errorf("task %d (%s): outcomes %v, %d starts; want exactly one outcome", id, fzLayout[s.ch].key, outs, starts)
		case (outs[0] == outDropped) != (starts == 0):
			t.Errorf("task %d (%s): outcome %v after %d starts", id, fzLayout[s.ch].key, outs[0], starts)
		case fzLayout[s.ch].coc && outs[0] >= outDropped && !r.dropRemoved[s.ch]:
			t.Errorf("complete-on-close task %d (%s) was dropped (%v)", id, fzLayout[s.ch].key, outs[0])
		case outs[0] == outPanicked:
			panicked[fzLayout[s.ch].key]++
		}
		// OnEnd: once for each task the pool accepted, with its outcome
		// (Cancelled for one the test cancelled before it started); never
		// for one it refused.
		want := []smartpool.Outcome(nil)
		switch {
		case r.accepted[id] != 1:
		case len(outs) == 0 && r.ghostLocked(id):
			want = []smartpool.Outcome{smartpool.Cancelled}
		case len(outs) == 1:
			want = []smartpool.Outcome{fzEnding(outs[0])}
		}
		if len(outs) <= 1 && !slices.Equal(r.ends[id], want) {
			t.Errorf("task %d (channel %d, accepted %d, outcomes %v): OnEnd received %v, want %v", id, s.ch, r.accepted[id], outs, r.ends[id], want)
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
		t.Errorf("%d tasks submitted to an unknown key or refused ran", n)
	}
	if p := r.peak.Load(); p > int32(r.maxWorkers) {
		t.Errorf("%d task pieces ran at once; at most %d workers were ever asked for", p, r.maxWorkers)
	}
	if err := r.keyedInProgressLocked(); err != nil {
		t.Error(err)
	}
}

// keyedInProgressLocked walks the log counting, per Keyed group, the tasks
// started and not ended. A task holds its group's slot from the poll that
// took it until its Run ends, which brackets its logged start and end, so
// the count never exceeds what the channel let in progress: the highest
// limit ever set. Only tasks known to take a slot count (a handoff during
// Close may go through Requeue, outside the groups).
func (r *fzRun) keyedInProgressLocked() error {
	var err error
	r.keyedRunningLocked(func(k [2]int, n, id int) {
		if n > r.kMax && err == nil {
			err = fmt.Errorf("%d tasks of group %d of %s in progress at once (task %d started); the limit was never above %d",
				n, k[1], fzLayout[k[0]].key, id, r.kMax)
		}
	})
	return err
}

// keyedRunningLocked returns, per Keyed (channel, group), the tasks the log
// shows started and not ended, calling started (if not nil) with the count
// at each start.
func (r *fzRun) keyedRunningLocked(started func(k [2]int, n, id int)) map[[2]int]int {
	slot := make([]bool, len(r.specs))
	for _, ev := range r.events {
		if ev.kind == evPush && ev.slot == 1 {
			slot[ev.id] = true
		}
	}
	n := map[[2]int]int{}
	for _, ev := range r.events {
		if ev.kind != evStart && ev.kind != evEnd || ev.id < 0 || !slot[ev.id] {
			continue
		}
		k := [2]int{r.specs[ev.id].ch, r.specs[ev.id].group}
		if ev.kind == evEnd {
			n[k]--
			continue
		}
		n[k]++
		if started != nil {
			started(k, n[k], ev.id)
		}
	}
	return n
}

// fzHandoffResult checks Handoff's result for heir h. closed: Close had
// started (exact: before the call; else: maybe only after it). Before Close
// a handoff is accepted, except to an unknown key (ErrUnknownKey; a first
// handoff never needs a free unit). During Close:
//   - with a limit, the heir of a task holding a worker goes through the
//     channel's Requeue: accepted into a complete-on-close channel; into a
//     dropping one refused once Close emptied it (ErrClosed), or accepted
//     just before and then dropped;
//   - without a limit Handoff is SubmitTask and says ErrClosed, although its
//     documentation also says it still queues the heir during Close; both
//     are accepted here until that is settled;
//   - to an unknown key it says ErrUnknownKey with a limit and ErrClosed
//     without one (SubmitTask's order), both accepted.
func fzHandoffResult(h *fzSpec, err error, closed, limited, exact bool) error {
	ok := false
	switch {
	case h.ch < 0:
		ok = errors.Is(err, smartpool.ErrUnknownKey) || closed && errors.Is(err, smartpool.ErrClosed)
	case err == nil:
		ok = true
	case errors.Is(err, smartpool.ErrClosed):
		ok = closed && !(exact && limited && fzLayout[h.ch].coc)
	}
	if !ok {
		return fmt.Errorf("to %d: %v", h.ch, err)
	}
	return nil
}
