package smartpool_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/smartpool-go/smartpool"
)

// H1 FuzzPoolOps and H2 FuzzConfig. Both run their seed corpus as ordinary
// tests; CI fuzzes each for 60 s with -fuzzminimizetime=10s, and failing
// inputs are committed under testdata/fuzz/<Target>/.

// ---------------------------------------------------------------------------
// H1 FuzzPoolOps: the fixed behavior

func init() {
	for i, c := range fzLayout {
		n := max(c.shards, 1)
		fzFirst[i+1] = fzFirst[i] + n
		for range n {
			fzQueueCh = append(fzQueueCh, i)
		}
	}
}

// ---------------------------------------------------------------------------
// H1: decoding

// hiP, midF, midM, loM, loF

// Extended op set only (fzStartX).

// ---------------------------------------------------------------------------
// H1: one run

// ---------------------------------------------------------------------------
// H1: the reference model of one worker (levels highest first, each level's
// queues in rotation from the worker's cursor, FIFO / priority / deadline
// order inside a queue, a Multi's shards as separate queues, a Keyed channel
// as one queue that serves re-entries first, then its oldest task whose
// group has a free slot).
//
// A yield makes the exact order intractable: the resumption is pushed by the
// task's own goroutine while the worker goes on, so whether the worker polls
// it first, and how the rotation cursor moves, is a race. So the predicted
// order is checked exactly up to the start of the first task that yields;
// after that, each start is checked against what stays exact with one
// worker: no task its queue would serve first (a task ahead in its order;
// in a Keyed channel, a re-entry or an older task whose group has a free
// slot, known from the log, which brackets each slot's hold) is still
// queued, and no higher level holds such a task.
//
// What the model covers besides: the in-flight limit (the units held, from
// pushes, ends, handoffs and cancellations in the log, so a child's ErrFull
// is predicted), handoffs (no unit of their own; during Close through
// Requeue), and cancellation: a task that ended cancelled is a ghost, which
// the worker polls and skips (moving the cursor like a run), and a task whose
// context the test cancelled while the worker was pinned must end so: it
// must never start. What it does not cover
// makes the run degrade to the invariants before it gets here (see degrade):
// SetWorkers above one, and waiting WithContext submits that a freed unit
// admits. A cancellation the pool has not counted when the gate opens (the
// cancel op without waiting, just before the gate) makes the units unknown,
// so a child may then get nil or ErrFull; a Keyed SetLimit after the gate
// opened makes the group limit unknown, so the weak Keyed check skips groups
// with tasks in progress. A handoff into a dropping channel during Close that
// is accepted (Close had not emptied it yet) makes the order inexact: the
// worker may poll and drop it, moving its cursor.

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
func fzExec(t *testing.T, workers int, h fzHeader, ops []fzOp, specs []*fzSpec) {
	baseline := runtime.NumGoroutine()
	r := newFzRun(t, workers, h, specs)
	b := r.behavior()
	r.reshaping = slices.ContainsFunc(ops, func(op fzOp) bool { return op.kind == opReshape })
	if r.reshaping {
		b.spare = make([]int, fzLevels) // any channel removable; a removed one's room is the room an add takes
	}
	o, err := smartpool.New[string](b)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r.o, r.pool = o, o.Pool()

	started, release := make(chan struct{}), make(chan struct{})
	if err := r.pool.Submit("gate", func(context.Context) {
		close(started)
		<-release
		r.log(fzEvent{kind: evEnd, id: -1})
	}); err != nil {
		t.Fatalf("gate: %v", err)
	}
	fzRecv(t, started, "the gate task starting")
	if r.limit > 0 {
		r.held = 1 // the gate's unit
	}
	open := func() {
		if r.opened {
			return
		}
		if r.exact && r.alivePending() > 0 && r.pool.State() == smartpool.Running {
			r.degrade() // units free as tasks end: the waiters' pushes race the worker
		}
		// Cancellations the pool has not been seen to count: the worker may
		// reach such a task before the context's AfterFunc claims it, and
		// must still skip it.
		for _, id := range r.unresolved {
			r.log(fzEvent{kind: evCancel, id: id})
		}
		r.unresolved = nil
		r.opened = true
		r.log(fzEvent{kind: evOpen})
		close(release)
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
	var paused [fzChans]bool // channels an opPause paused and none resumed
	var rated [fzChans]bool  // channels an opSetRate gave a rate and none lifted
	firstClose := func() {
		closing = true
		r.closeBegun, r.ownersAtClose = true, int(r.nestOwners.Load())
		if h.pinnedClose {
			if r.exact {
				r.resolve()
			}
			launchClose()
			if r.exact {
				// Until Close has emptied the DROP queues, the worker
				// could poll one of their tasks and drop it itself, which
				// moves its rotation cursor differently. Cancelled tasks
				// are not dropped again.
				want := uint64(0)
				r.mu.Lock()
				for _, ev := range r.events {
					if ev.kind == evPush && !fzLayout[fzQueueCh[ev.q]].coc {
						want++
					}
				}
				r.mu.Unlock()
				for i, l := range fzLayout {
					if !l.coc {
						want -= r.expCancelled[i]
					}
				}
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
			// Paused channels would never settle: resumed, they run their
			// tasks (a pinned Close is the one that meets them paused).
			for ch, p := range paused {
				if p {
					if err := r.pool.Resume(fzLayout[ch].key); err != nil && !errors.Is(err, smartpool.ErrClosed) &&
						!(errors.Is(err, smartpool.ErrUnknownKey) && r.reshaping && r.chState(ch) != fzLive) {
						t.Fatalf("Resume(%s): %v", fzLayout[ch].key, err)
					}
				}
			}
			// So would a channel at a rate of 0, and a rated one settles
			// late: the limit is lifted (the pinned Close meets it).
			for ch, rt := range rated {
				if rt {
					if err := r.pool.SetRate(fzLayout[ch].key, smartpool.Rate{PerSecond: math.Inf(1)}); err != nil && !errors.Is(err, smartpool.ErrClosed) &&
						!(errors.Is(err, smartpool.ErrUnknownKey) && r.reshaping && r.chState(ch) != fzLive) {
						t.Fatalf("SetRate(%s, no limit): %v", fzLayout[ch].key, err)
					}
				}
			}
			open()
			fzWait(t, "the pool settling before Close", r.settled)
			r.log(fzEvent{kind: evClose, id: -1}) // nothing is queued: its place in the log is exact
			launchClose()
		}
		if r.exact {
			fzWait(t, "Close starting", func() error {
				if r.pool.State() < smartpool.Closing {
					return errors.New("still running")
				}
				return nil
			})
		}
	}
	// With one worker every result is known (until the run degrades). With
	// two, a submit may race a Close started from inside a task, or the
	// test's own Close, which runs on its own goroutine: ErrClosed is then
	// fine once the pool says so; and tasks end while the test submits, so
	// ErrFull is fine at any time in a pool with a limit.
	expect := func(what string, err, want error, loose ...error) {
		t.Helper()
		if r.exact {
			if (want == nil) != (err == nil) || !errors.Is(err, want) {
				t.Fatalf("%s: %v, want %v", what, err, want)
			}
			return
		}
		if errors.Is(err, smartpool.ErrClosed) {
			if st := r.pool.State(); st < smartpool.Closing {
				t.Fatalf("%s: ErrClosed while the pool is %v", what, st)
			}
			return
		}
		for _, e := range loose {
			if e == nil && err == nil || e != nil && errors.Is(err, e) {
				return
			}
		}
		t.Fatalf("%s: %v, want one of %v or ErrClosed", what, err, loose)
	}
	checkSubmit := func(what string, err error, unknown bool) {
		t.Helper()
		want, loose := error(nil), []error{nil}
		full := r.limit > 0 && !unknown
		switch {
		case unknown:
			loose = []error{smartpool.ErrUnknownKey}
		case full:
			loose = append(loose, smartpool.ErrFull)
		}
		switch {
		case closing:
			want = smartpool.ErrClosed
		case unknown:
			want = smartpool.ErrUnknownKey
		case full && r.held >= r.curLimit:
			want = smartpool.ErrFull
		}
		expect(what, err, want, loose...)
		if r.exact && !closing && err == nil && !unknown {
			r.held++
		}
	}
	// submitCtx submits with WithContext on its own goroutine and waits until it
	// returns or waits for a unit (Stats.Waiting rises above the calls left
	// waiting before); a waiting one is cancelled at once or left waiting.
	submitCtx := func(s *fzSpec) {
		t.Helper()
		key := fzLayout[s.ch].key
		what := fmt.Sprintf("Submit with WithContext of task %d to %s", s.id, key)
		ctx, cancel := context.WithCancel(context.Background())
		r.cancels[s.id] = cancel
		res := make(chan error, 1)
		go func() {
			res <- r.push(s, false, func(task smartpool.Task) (int, error) {
				return 0, r.pool.SubmitTask(key, task, smartpool.WithContext(ctx))
			})
		}()
		mustWait := r.limit > 0 && !closing && r.held >= r.curLimit // exact phase
		waiting := false
		fzWait(t, what+" returning or waiting for a unit", func() error {
			if len(res) > 0 {
				return nil
			}
			// Count the earlier waiters first: they only leave, so a Waiting
			// read after them above their count is this submit's.
			if alive := r.alivePending(); r.limit > 0 && r.pool.Stats().Waiting > alive {
				waiting = true
				return nil
			}
			return errors.New("neither")
		})
		if r.exact && waiting != mustWait {
			t.Fatalf("%s: waits for a unit %v, want %v (%d held, limit %d)", what, waiting, mustWait, r.held, r.curLimit)
		}
		if waiting && s.pend {
			r.pending[s.id] = res
			r.nPending++
			return
		}
		want := error(nil)
		if closing {
			want = smartpool.ErrClosed
		}
		loose := []error{nil}
		if waiting {
			r.cancelled[s.id] = true
			r.nCancels++
			cancel()
			want = context.Canceled
			loose = append(loose, context.Canceled) // nil: a unit freed just before
		}
		err := fzRecv(t, res, what)
		expect(what, err, want, loose...)
		if r.exact && !closing && err == nil {
			r.held++
		}
	}
	for _, op := range ops {
		if r.exact && !closing && op.kind != opClose && op.kind != opCloseCancelled {
			r.resolve()
		}
		switch op.kind {
		case opSubmit:
			s := specs[op.id]
			if r.reshaping && r.chState(s.ch) != fzLive {
				r.submitGone(s)
				break
			}
			if s.ctx {
				submitCtx(s)
				break
			}
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
				case errors.Is(err, context.Canceled) && rep != nil: // the stats at that moment
				default:
					t.Fatalf("Close with a cancelled context: %v, %v", rep, err)
				}
			}
		case opUnknown:
			checkSubmit("submit to an unknown key", r.pool.Submit("nope", func(context.Context) { r.phantom.Add(1) }), true)
		case opNil:
			key := fzLayout[op.ch].key
			phantom := smartpool.Func(func(context.Context) { r.phantom.Add(1) })
			for what, err := range map[string]error{
				"Submit(nil)":              r.pool.Submit(key, nil),
				"SubmitTask(nil)":          r.pool.SubmitTask(key, nil),
				"Submit(nope, nil)":        r.pool.Submit("nope", nil),
				"Source.Push(nil)":         src(r.chans[op.ch].c).Push(nil, smartpool.Order{}),
				"Submit(nil, WithContext)": r.pool.Submit(key, nil, smartpool.WithContext(context.Background())),
				"Keyed.SubmitTask(g, nil)": r.keyed[0].SubmitTask(op.ch%4, nil),
				"Keyed.Submit(g, nil)":     r.keyed[1].Submit(op.ch%4, nil),
			} {
				if !errors.Is(err, smartpool.ErrNilTask) {
					t.Fatalf("%s on %s: %v, want ErrNilTask", what, key, err)
				}
			}
			if err := r.pool.Handoff(context.Background(), key, phantom); !errors.Is(err, smartpool.ErrNotInTask) {
				t.Fatalf("Handoff outside a task: %v, want ErrNotInTask", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			want := error(context.Canceled)
			if closing {
				want = smartpool.ErrClosed
			}
			loose := []error{context.Canceled}
			if r.reshaping && r.chState(op.ch) != fzLive {
				loose = append(loose, smartpool.ErrUnknownKey, smartpool.ErrClosed) // exact no more: a reshape degraded the run
			}
			expect("Submit with WithContext of a cancelled context", r.pool.Submit(key, phantom, smartpool.WithContext(ctx)), want, loose...)
		case opStats:
			s := r.liveStats()
			if err := r.checkShape(s, true); err != nil {
				t.Fatal(err)
			}
			if r.exact && !closing {
				if err := r.checkPinned(s); err != nil {
					t.Fatal(err)
				}
			}
		case opSetLimit:
			if r.limit > 0 && int64(op.n) > r.maxLimit.Load() {
				r.maxLimit.Store(int64(op.n)) // before the limit can admit more
			}
			waiters := r.alivePending() // before SetLimit, which may let them through
			err := r.pool.SetLimit(op.n)
			want := error(nil)
			switch { // bad values first, then a closed pool
			case r.limit == 0:
				want = smartpool.ErrConfig
			case op.n < 0: // 0 admits nothing until raised
				want = smartpool.ErrBadLimit
			case closing && (r.exact || errors.Is(err, smartpool.ErrClosed)):
				want = smartpool.ErrClosed // with two workers, Close may not have started yet
			case errors.Is(err, smartpool.ErrClosed) && r.pool.State() >= smartpool.Closing:
				want = smartpool.ErrClosed // a closer task closed it
			}
			if (want == nil) != (err == nil) || !errors.Is(err, want) {
				t.Fatalf("SetLimit(%d): %v, want %v", op.n, err, want)
			}
			if err == nil {
				if r.exact && !closing && waiters > 0 && r.held < op.n {
					r.degrade() // a waiting WithContext submit takes the room
				}
				r.curLimit = op.n
				r.log(fzEvent{kind: evLimit, n: op.n})
			}
		case opSetWorkers:
			if op.n > r.maxWorkers && op.n <= smartpool.MaxWorkers {
				r.maxWorkers = op.n
			}
			err := r.pool.SetWorkers(op.n)
			want := error(nil)
			switch {
			case op.n < 1, op.n > smartpool.MaxWorkers:
				want = smartpool.RuleWorkers
			case closing:
				want = smartpool.ErrClosed
			}
			if op.n < 1 || op.n > smartpool.MaxWorkers {
				if !errors.Is(err, want) {
					t.Fatalf("SetWorkers(%d): %v, want %v", op.n, err, want)
				}
			} else {
				expect(fmt.Sprintf("SetWorkers(%d)", op.n), err, want, nil)
			}
			if err == nil {
				r.target = op.n
				if op.n > 1 && r.exact {
					r.degrade() // a second worker runs what the gate holds back
				}
			}
		case opCancel:
			id := op.id
			if r.cancelled[id] || r.cancels[id] == nil {
				break
			}
			r.cancelled[id] = true
			r.nCancels++
			what := fmt.Sprintf("Submit with WithContext of task %d, cancelled while it waits", id)
			if res, ok := r.pending[id]; ok {
				delete(r.pending, id)
				r.cancels[id]()
				// Exact: nothing freed a unit since it began to wait; but a
				// Close since then released it with ErrClosed first.
				err := fzRecv(t, res, what)
				want := context.Canceled
				if closing {
					want = smartpool.ErrClosed
				}
				expect(what, err, want, nil, context.Canceled)
				break
			}
			r.mu.Lock()
			queued := r.accepted[id] == 1
			r.mu.Unlock()
			if queued && r.exact && !closing && r.limit > 0 && r.alivePending() > 0 {
				r.degrade() // its unit goes to a waiting WithContext submit
			}
			r.cancels[id]()
			if queued && r.exact && !closing {
				r.unresolved = append(r.unresolved, id)
				if op.wait {
					r.resolve()
				}
			}
		case opSide:
			// The model knows neither the side tasks' units nor their
			// drops: the one-worker run keeps only the invariants.
			r.degrade()
			r.sideOp(op.n)
		case opNest:
			r.degrade() // the model does not know the nests' tasks either
			r.nestOp(op.n)
		case opReshape:
			if op.n == 3 {
				// The removal in flight waits for the gate (the grace: every
				// worker starts a new turn) and, draining, for its tasks:
				// open the gate, resume the channel, wake its tasks, wait.
				r.rmMu.Lock()
				rm := r.rmPending
				r.rmMu.Unlock()
				if rm == nil {
					break
				}
				if r.alivePending() > 0 || r.nestOwners.Load() > 0 {
					// A by-key call waiting for a unit (a WithContext submit
					// left waiting, a nest owner's Go) stays pinned, and the
					// removal returns only after the by-key callers' grace
					// (reshape.go, 6): wait for it after Close, which ends
					// those waits (reshapeDone).
					break
				}
				open()
				if paused[rm.ch] {
					if err := r.pool.Resume(fzLayout[rm.ch].key); err != nil && !errors.Is(err, smartpool.ErrClosed) && !errors.Is(err, smartpool.ErrUnknownKey) {
						t.Fatalf("Resume(%s) while it is removed: %v", fzLayout[rm.ch].key, err)
					}
					paused[rm.ch] = false
				}
				for id, sp := range specs {
					if sp.ch == rm.ch {
						r.wakeTask(id)
					}
				}
				r.collect(true)
				break
			}
			r.reshapeOp(op, closing)
		case opPause:
			// The order model does not know paused channels: a pause
			// keeps the invariants only, Close's counts among them.
			key := fzLayout[op.ch].key
			pause := op.n == 0
			var err error
			if pause {
				err = r.pool.Pause(key)
			} else {
				err = r.pool.Resume(key)
			}
			switch {
			case err == nil && closing && r.exact:
				t.Fatalf("Pause/Resume(%s) after Close: nil, want ErrClosed", key)
			case err == nil:
				if pause {
					r.degrade()
				}
				paused[op.ch] = pause
			case errors.Is(err, smartpool.ErrClosed) && (closing || r.pool.State() >= smartpool.Closing):
			case errors.Is(err, smartpool.ErrClosed) && r.reshaping && r.chState(op.ch) != fzLive:
				// Being removed: RemoveChannel's doc says Pause and Resume return ErrClosed then.
			case errors.Is(err, smartpool.ErrUnknownKey) && r.reshaping && r.chState(op.ch) != fzLive:
			default:
				t.Fatalf("Pause/Resume(%s): %v", key, err)
			}
		case opSetRate:
			// As a pause: the order model does not know rates, so a rate
			// keeps the invariants only; Close must end without waiting
			// for a token (fzWait bounds it).
			key, rt := fzLayout[op.ch].key, fzRates[op.n]
			err := r.pool.SetRate(key, rt)
			switch {
			case rt.PerSecond < 0:
				if !errors.Is(err, smartpool.ErrBadLimit) {
					t.Fatalf("SetRate(%s, %v): %v, want ErrBadLimit", key, rt, err)
				}
			case err == nil && closing && r.exact:
				t.Fatalf("SetRate(%s) after Close: nil, want ErrClosed", key)
			case err == nil:
				if lift := math.IsInf(rt.PerSecond, 1); !lift {
					r.degrade()
					rated[op.ch] = true
				} else {
					rated[op.ch] = false
				}
			case errors.Is(err, smartpool.ErrClosed) && (closing || r.pool.State() >= smartpool.Closing):
			case errors.Is(err, smartpool.ErrClosed) && r.reshaping && r.chState(op.ch) != fzLive:
			case errors.Is(err, smartpool.ErrUnknownKey) && r.reshaping && r.chState(op.ch) != fzLive:
			default:
				t.Fatalf("SetRate(%s, %v): %v", key, rt, err)
			}
		case opKeyedLimit:
			r.kMax = max(r.kMax, op.n)
			if op.n >= 1 {
				// Logged before the calls: a worker may start a task under
				// the new limit before SetLimit returns, and the check
				// must not take that start for one under the old limit.
				r.kCur = op.n
				r.log(fzEvent{kind: evKLimit, n: op.n})
			}
			for _, k := range r.keyed {
				err := k.SetLimit(op.n)
				if (op.n < 1) != errors.Is(err, smartpool.ErrBadLimit) || op.n >= 1 && err != nil {
					t.Fatalf("Keyed.SetLimit(%d): %v", op.n, err)
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
	close(r.sideWake)

	var rep *smartpool.Report[string]
	for range nCloses {
		res := fzRecv(t, closes, "Close")
		if res.err != nil || res.rep == nil {
			t.Fatalf("Close: %v, %v", res.rep, res.err)
		}
		if rep == nil {
			rep = res.rep
			r.checkReport(rep)
		} else if res.rep != rep {
			t.Fatalf("two Close calls returned different reports")
		}
	}
	// A WithContext submit left waiting returns when Close starts (ErrClosed),
	// or, once the run degraded, maybe with a unit freed before.
	for id, res := range r.pending {
		what := fmt.Sprintf("Submit with WithContext of task %d, left waiting", id)
		if err := fzRecv(t, res, what); !errors.Is(err, smartpool.ErrClosed) && !(err == nil && !r.exact) {
			t.Fatalf("%s: %v, want ErrClosed", what, err)
		}
	}
	// Suspended DROP tasks end (dropped) on their own goroutines after Close.
	fzWait(t, "every accepted task reaching an outcome", r.allDone)
	r.reshapeDone()
	fzWait(t, "every side task ending, its Future or Group resolved", r.sideDone)
	r.checkNests()
	fzWait(t, "final stats matching the ledger", r.countsMatch)
	fzWait(t, "OnEnd's books matching the final stats", r.booksMatch)
	r.checkLedger()
	r.checkSide()
	if r.exact && !t.Failed() {
		r.checkOrder()
	}
	for _, cancel := range r.cancels {
		if cancel != nil {
			cancel()
		}
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
		// heirs: indexes into fzHeirs
		toHiF, toHiP, toMidD, toMidF, toLoP, toLoF, toKC, toKD, toNope = 0, 1, 2, 3, 4, 5, 6, 7, 8
	)
	all := func(s fzSeed, kind byte) fzSeed {
		return s.each(func(s fzSeed, i int) fzSeed { return s.submit(i, i, kind) }, fzAddr)
	}
	cb := func(ch, param int) byte { return byte(ch | param<<3) }
	seeds := []fzSeed{
		// Paused channels met by Close: every channel's tasks queued, half
		// of the channels paused (one resumed again), Close while pinned:
		// the complete-on-close ones run, the dropping ones are dropped.
		all(fzStartX(true, 0, 2), 0).pause(hiF).pause(hiP).pause(midM).pause(loM).pause(fzKC).pause(fzKD).
			resume(midM).stats().close().pause(loF).resume(hiF).stats(),
		// Paused while a limit holds: SetLimit(0) admits nothing, paused
		// tasks keep their units; resumed before the unpinned Close.
		all(fzStartX(false, 4, 1), kYield1).pause(midD).pause(loP).setLimit(0).submit(hiF, 0, 0).
			pause(hiF).setLimit(3).resume(midD).stats().close(),
		// Rated channels met by Close: every channel's tasks queued, some
		// at a rate of 0, some slow, a bad rate refused; Close while
		// pinned drains or drops them without waiting for a token.
		all(fzStartX(true, 0, 2), 0).setRate(hiF, 0).setRate(midM, 3).setRate(loF, 4).setRate(loP, 2).
			setRate(fzKC, 0).setRate(midD, 6).stats().close().setRate(loF, 1).stats(),
		// Rates with yields, a pause and a rate of 0 on one channel, rates
		// lifted again; the unpinned Close settles first.
		all(fzStartX(false, 4, 1), kYield1).setRate(hiF, 3).setRate(loM, 0).pause(loM).setRate(midF, 5).
			resume(loM).setRate(loM, 7).setRate(hiF, 1).stats().close(),
		// Submit racing shutdown: a full queue, Close while pinned, then
		// submits of every kind after it, by key and through the channel.
		all(all(fzStart(true), 0), kTyped).close().
			submit(hiF, 0, 0).submit(loM, 3, kTyped).submit(midD, 2, kTyped).unknown().nilSubmit(loF).stats(),
		// Shutdown with blocked work: tasks of every channel suspended on
		// wake-ups that come only after Close started.
		all(fzStart(false), kYield1|kBlock).stats().close().stats().
			each(func(s fzSeed, i int) fzSeed { return s.wake(i) }, fzAddr),
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
		fzStart(false).each(func(s fzSeed, i int) fzSeed { return s.nilSubmit(i) }, fzAddr).unknown().
			submit(hiF, 0, 0).close().unknown().each(func(s fzSeed, i int) fzSeed { return s.nilSubmit(i) }, fzAddr),
		// Wake-ups before the task runs and twice over.
		fzStart(false).submit(midD, 0, kYield3|kBlock).wake(0).wake(0).submit(hiP, 0, kYield2|kBlock).
			wake(1).close().wake(1).wake(0),
		// Nothing: the implicit Close of an idle pool; then two closes.
		{},
		fzStart(true).close().close(),

		// The in-flight limit (the gate holds a unit): submits of every
		// kind refused with ErrFull while pinned, SetLimit raising it
		// (more admitted at once), lowering it (nothing revoked, admission
		// stops), bad values.
		fzStartX(false, 3, 1).submit(hiF, 0, 0).submit(loP, 3, kTyped).submit(midF, 0, 0).
			keyed(false, 1, 0, kTyped, 0).submit(loM, 1, kTyped).unknown().stats().setLimit(6).
			submit(midM, 0, 0).submit(loM, 2, kTyped).keyed(false, 2, 0, kTyped, 0).keyed(true, 1, 0, kTyped, 0).
			stats().setLimit(1).submit(hiF, 0, 0).setLimit(-1).setLimit(0).stats().close().setLimit(2).stats(),
		// ... the same with Close while pinned.
		fzStartX(true, 2, 1).submit(midF, 0, 0).submit(hiF, 0, 0).stats().setLimit(4).submit(hiF, 0, 0).
			submit(loF, 0, 0).close().submit(hiF, 0, 0).setLimit(1).stats(),
		// A child refused with ErrFull: a task holds its unit while it
		// waits, its child and another's fill the limit.
		fzStartX(false, 3, 1).submit(hiF, loF, kChild|kYield1|kBlock).submit(hiP, loF, kChild).close().wake(0),
		// WithContext at the limit: one waiting and cancelled at once
		// (context.Canceled), one left waiting (Stats.Waiting) that Close
		// releases with ErrClosed; pinned and not.
		fzStartX(true, 2, 1).submit(hiF, 0, 0).submitCtx(midF, 0, 0, false).submitCtx(loF, 0, 0, true).
			stats().submitCtx(hiP, 0, 0, true).stats().close().stats(),
		fzStartX(false, 2, 1).submit(hiF, 0, 0).submitCtx(midF, 0, 0, false).submitCtx(loF, 0, 0, true).stats().close(),
		// Cancellation of queued tasks: counted, units back at once,
		// skipped by the worker (its cursor moves); a second cancel is a
		// no-op; the freed room admits a submit; a DROP one is not
		// dropped again at a pinned Close.
		fzStartX(false, 4, 1).submitCtx(hiF, 0, 0, false).submitCtx(loF, 0, 0, false).submitCtx(midM, 0, 0, false).
			cancel(0, true).stats().cancel(1, true).cancel(0, true).submit(hiF, 0, 0).stats().close(),
		fzStartX(true, 0, 1).submitCtx(loF, 0, 0, false).submitCtx(hiP, 0, kYield1, false).submitCtx(hiF, 0, 0, false).
			cancel(0, true).cancel(2, true).stats().close().cancel(1, true),
		// A cancel op that does not wait: the next op sees it counted.
		fzStartX(false, 3, 1).submitCtx(midF, 0, 0, false).submitCtx(midD, 0, 0, false).cancel(1, false).stats().
			submit(hiF, 0, 0).cancel(0, false).xstats().close(),
		// A raised limit and a cancellation admit waiting submitters: the
		// one-worker run degrades to the invariants.
		fzStartX(false, 2, 1).submit(hiF, 0, 0).submitCtx(loF, 0, 0, true).setLimit(3).stats().
			submitCtx(midF, 0, 0, true).submitCtx(hiP, 0, 0, false).close(),
		fzStartX(false, 3, 1).submitCtx(hiF, 0, 0, false).submitCtx(loF, 0, 0, true).cancel(0, true).stats().close(),
		// Handoff: before and after yields, to every kind of heir (a Keyed
		// channel, an unknown key), the heir panicking or calling Goexit;
		// with a full limit a chain still runs through.
		fzStartX(false, 3, 1).handoff(0, cb(hiF, 0), 0, toKC, false, 0).
			handoff(0, cb(loP, 1), kYield1|kTyped, toMidD, true, 1).handoff(0, cb(midF, 0), kChild, toNope, false, 0).
			close(),
		fzStartX(false, 2, 1).handoff(0, cb(loF, 0), kYield1|kBlock, toHiF, true, 2).
			handoff(0, cb(hiP, 0), 0, toLoP, false, 0).stats().close().wake(0),
		// Handoff while Close drains, with and without a limit: into a
		// complete-on-close channel it continues (Requeue), into a
		// dropping one it is refused.
		fzStartX(true, 4, 1).handoff(0, cb(hiF, 0), 0, toMidD, false, 0).handoff(0, cb(loP, 2), kTyped, toKC, false, 0).
			handoff(0, cb(midM, 0), 0, toLoF, false, 0).handoff(0, cb(loF, 0), 0, toHiF, false, 0).close(),
		fzStartX(true, 0, 1).handoff(0, cb(hiF, 0), 0, toMidD, false, 0).handoff(0, cb(loP, 2), kTyped, toKD, false, 0).
			handoff(0, cb(midD, 1), kTyped, toNope, false, 0).close(),
		// ... late, from a task woken after Close, and from a closer.
		fzStartX(false, 3, 1).handoff(0, cb(hiF, 0), kYield1|kBlock, toKC, true, 0).
			handoff(0, cb(midD, 0), kYield1|kBlock|kTyped, toHiP, true, 0).close().wake(0).wake(2),
		fzStartX(false, 3, 1).handoff(0, cb(midF, 0), kCloser, toHiF, false, 0).
			handoff(0, cb(loP, 0), kCloser|kYield1, toKC, true, 1).submit(loF, 0, 0),
		// SetWorkers: bad values, a grow while pinned (the one-worker run
		// degrades), a shrink, ErrClosed after Close.
		fzStartX(false, 0, 1).setWorkers(0).setWorkers(-1).setWorkers(smartpool.MaxWorkers+1).submit(hiF, 0, 0).
			setWorkers(1).stats().setWorkers(3).submit(loF, 0, kYield1).submit(midM, 0, 0).stats().setWorkers(2).
			close().setWorkers(1).setWorkers(0).stats(),
		fzStartX(true, 3, 1).submit(hiF, 0, kYield1|kBlock).setWorkers(2).submit(loF, 0, 0).close().setWorkers(3).wake(0),
		// Keyed: groups at their limit while a task waits holding its slot,
		// others served past them, by key into group 0, a dropping Keyed
		// emptied at Close; bad and raised limits.
		fzStartX(false, 0, 1).keyed(false, 0, 0, kYield1|kBlock|kTyped, 0).keyed(false, 0, 0, kTyped, 0).
			keyed(false, 1, 0, kTyped, 0).keyed(true, 2, 0, kTyped|kYield1|kBlock, 0).keyed(true, 2, 0, kTyped, 0).
			keyed(false, 0, 0, 0, 0).stats().keyedLimit(0).keyedLimit(2).close().wake(0).wake(3),
		fzStartX(true, 0, 2).keyed(false, 0, 0, kTyped|kYield2, 0).keyed(false, 0, 0, kTyped|kYield1, 0).
			keyed(false, 0, 0, kTyped, 0).keyed(true, 1, 0, kTyped|kYield1|kBlock, 0).keyed(true, 1, 0, kTyped, 0).
			keyed(false, 3, 0, kTyped|kPanic, 0).keyed(false, 3, 0, kTyped|kGoexit, 0).close().keyedLimit(1).wake(3),
		// Keyed with the in-flight limit, WithContext and cancellation
		// through the Keyed's wrapper, and a limit change after the gate.
		fzStartX(false, 4, 1).keyed(false, 0, 0, 0, fCtx).keyed(true, 0, 0, 0, fCtx).cancel(0, true).
			keyed(false, 0, 0, kYield1, 0).keyed(false, 1, 0, kTyped|kYield2, 0).keyed(false, 1, 0, kTyped, 0).
			stats().close().keyedLimit(3).cancel(1, false),
		// Side tasks (opSide). DropLate: late on arrival through the
		// channel's own submit, by key (Go, Group.Go: never late on
		// arrival), on time, with a yield; with the in-flight limit.
		fzStartX(false, 4, 1).side(0, sideOwn, 0, true, false).side(0, sideFuture, 0, true, false).
			side(0, sideGo, 0, false, false).side(0, sideGroup, 1, false, false).side(0, sideOwn, 2, false, true).
			side(0, sideFuture, 0, false, false).close(),
		// DropOldest: each submit to the full channel displaces the one
		// before it, whatever its entry; the last one runs.
		fzStartX(false, 0, 1).side(1, sideOwn, 0, false, false).side(1, sideFuture, 0, false, false).
			side(1, sideGo, 1, false, false).side(1, sideGroup, 2, false, false).side(1, sideOwn, 0, false, true).close(),
		// CallerRuns: the first fills the channel, the rest run on their
		// submitter: returning, panicking, calling Goexit, by every entry.
		fzStartX(false, 0, 1).side(2, sideOwn, 0, false, false).side(2, sideOwn, 1, false, false).
			side(2, sideFuture, 2, false, false).side(2, sideGo, 1, false, false).side(2, sideGroup, 2, false, false).
			side(2, sideGo, 2, false, false).side(2, sideFuture, 0, false, true).close(),
		// Side tasks of the channels' own submits, on time and with room:
		// they run and end every way, or Close drops them; then refused.
		fzStartX(true, 3, 1).side(0, sideOwn, 0, false, false).side(1, sideOwn, 2, false, false).
			side(2, sideOwn, 1, false, false).close().side(0, sideOwn, 0, false, false).side(1, sideGo, 0, false, false).
			side(2, sideGroup, 0, false, false),
		// Side tasks dropped by a pinned Close, then one refused after it
		// (with two workers it may race the Close and run).
		fzStartX(true, 3, 1).side(0, sideOwn, 0, false, false).side(1, sideFuture, 0, false, false).
			side(2, sideGroup, 0, false, false).close().side(0, sideOwn, 0, false, false),
		// Side tasks that run on a worker and end every way, then tasks
		// suspended at Close and dropped when they wake.
		fzStartX(false, 0, 1).side(0, sideOwn, 0, false, false).side(2, sideOwn, 1, false, false).stats().
			side(1, sideOwn, 2, false, false).side(0, sideOwn, 1, false, true).side(2, sideFuture, 0, false, true).
			side(1, sideGroup, 0, false, true).side(0, sideGo, 2, false, true).close(),
		// Side tasks among modelled ones, a lowered limit refusing them
		// (ErrFull: Go's Future and the Group report it), a waiting task.
		fzStartX(false, 5, 2).submit(hiF, 0, kYield1|kBlock).side(0, sideGo, 1, false, true).setLimit(2).
			side(1, sideGroup, 0, false, false).side(2, sideGo, 0, false, false).side(0, sideOwn, 0, true, false).
			setLimit(6).side(2, sideOwn, 0, false, true).side(2, sideOwn, 2, false, false).close().wake(0),
		// Results in place of the Group (sideGroup, late): run, panicked,
		// Goexit, displaced by DropOldest, on the caller by CallerRuns,
		// dropped while yielded at Close, refused after it.
		fzStartX(false, 0, 1).side(0, sideGroup, 0, true, false).side(1, sideGroup, 1, true, false).
			side(1, sideGroup, 0, true, false).side(2, sideGroup, 0, true, false).side(2, sideGroup, 2, true, false).
			side(2, sideGroup, 1, true, false).side(0, sideGroup, 0, true, true).close().side(1, sideGroup, 0, true, false),
		// Nested group spawning at the group's and the pool's limit (the
		// errgroup crawler): deep and narrow, yielding, spread over
		// channels; a pinned close; a nest started while Close drains.
		fzStartX(false, 2, 1).nest(0, 4, 2, false, false).nest(1, 3, 1, true, true).stats().close(),
		fzStartX(true, 1, 1).nest(2, 4, 2, true, false).nest(0, 2, 1, false, true).close(),
		fzStartX(false, 0, 1).nest(0, 4, 1, false, true).submit(hiF, 0, kYield1|kBlock).nest(1, 2, 3, true, false).
			close().wake(0).nest(2, 2, 2, false, false),
		// The same through a Results (channel 3): one value per Go, in the
		// order of the Go calls, at the limit, yielding, spread; a nest
		// started while Close drains.
		fzStartX(false, 2, 1).nest(3, 4, 1, true, true).nest(3, 3, 2, false, false).stats().close(),
		fzStartX(false, 0, 1).nest(3, 4, 3, false, true).submit(hiF, 0, kYield1|kBlock).close().wake(0).nest(3, 2, 1, true, false),
		// Reshaping (opReshape; fzRemovable indexes: 0 hiP, 1 midF, 2 midM,
		// 3 loM, 4 loF). Drain while pinned: the queued tasks run once the
		// gate opens; submits by key and typed refused meanwhile and after;
		// the key added again serves submits.
		all(fzStartX(false, 0, 1), 0).reshape(4, 0).submit(loF, 0, 0).submit(loF, 1, kTyped).stats().reshape(4, 3).
			submit(loF, 0, 0).reshape(4, 2).submit(loF, 0, 0).submit(loF, 0, kTyped).stats().close(),
		// Drop of a complete-on-close Multi: queued tasks dropped, one
		// yielded on a wake re-enters through its followup (hiF) and runs;
		// added again and used, with a limit.
		fzStartX(false, 3, 1).submit(midM, 0, kYield1|kBlock).submit(midM, 0, 0).submit(midM, 1, kTyped).
			reshape(2, 1).stats().reshape(2, 3).reshape(2, 2).submit(midM, 0, 0).submit(midM, 0, kTyped).close(),
		// The followup rule: hiP (midF's followup) and midF (loM's) refused
		// while those are present; removed in order, added back in the
		// reverse order (midF refused until hiP is back).
		all(fzStartX(false, 0, 1), kYield1).reshape(0, 0).reshape(1, 1).reshape(3, 1).reshape(3, 3).
			reshape(1, 0).reshape(1, 3).reshape(0, 1).reshape(0, 3).reshape(1, 2).reshape(0, 2).reshape(1, 2).
			reshape(3, 2).each(func(s fzSeed, i int) fzSeed { return s.submit(i, i, kTyped) }, fzAddr).close(),
		// Close during a removal, pinned: the removal ends with Close; a
		// removal after Close is refused; adding after it too.
		all(fzStartX(true, 3, 1), kYield1).reshape(4, 0).close().reshape(4, 1).reshape(3, 0).reshape(4, 2).stats(),
		// Children and heirs into a channel being removed and removed.
		fzStartX(false, 0, 1).submit(hiF, loF, kChild|kYield1|kBlock).handoff(0, cb(hiP, 0), kYield1|kBlock, toLoF, true, 0).
			submit(loF, 0, kYield1|kBlock).reshape(4, 1).wake(0).reshape(4, 3).wake(1).submit(midF, loF, kChild).close(),
		// A paused channel removed with Drain: it runs once resumed.
		all(fzStartX(false, 2, 1), 0).pause(loM).reshape(3, 0).stats().reshape(3, 3).reshape(3, 2).
			submit(loM, 2, kTyped).pause(loM).close(),
		// Everything at once.
		fzStartX(false, 5, 2).submit(hiF, midF, kChild|kYield1).submitCtx(loP, 1, kYield2, false).
			handoff(fCtx, cb(midD, 0), kYield1|kBlock, toKD, true, 0).keyed(true, 1, 0, kTyped|kYield1, 0).
			cancel(0, false).setLimit(6).handoff(fKeyed, byte(2|1<<3), kTyped, toHiP, false, 0).
			submitCtx(hiP, 0, 0, true).setWorkers(2).keyedLimit(1).stats().close().wake(2).setLimit(3).
			setWorkers(1).cancel(1, true),
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, ops, specs := fzDecode(data)
		fzExec(t, 1, h, ops, specs)
		fzExec(t, 2, h, ops, specs)
	})
}

// ---------------------------------------------------------------------------
// H2 FuzzConfig

// ---------------------------------------------------------------------------
// H1: reshaping (opReshape)
//
// An input with a reshape op runs on a pool built with Config.Spare (all
// zeros: a removed channel's own room is what AddChannel reuses). A removal
// runs on a goroutine of its own (Drain waits for the gate and for wakes),
// at most one at a time; the op returns once the channel refuses submits
// (Stats shows it Removing, or gone). Its tasks end as the policy says and
// the ledger (OnEnd) records it: Drain runs what the channel holds, Drop
// drops what has not started (even in a complete-on-close channel), a task
// that yielded re-enters through its followup. Submits to the channel are
// refused from then on (ErrClosed while it is removed, ErrUnknownKey once
// it is), until AddChannel adds a fresh channel under the key again. The
// order model does not know reshaping: a reshape degrades the run to the
// invariants, which keep every count exact: Stats is read with the channels
// in layout order (fzRun.stats), a removed channel's counts (those
// RemoveChannel returned, or Stats.Removed for the removal in flight) added
// to its key's, so the final Stats still match the ledger channel by
// channel, and Stats.Removed sums what the removals returned.
