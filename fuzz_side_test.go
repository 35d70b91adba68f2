package smartpool_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// ---------------------------------------------------------------------------
// H1: side tasks

// fzSideRec is one side task (opSide): an ending the modelled tasks cannot
// reach (DropLate, DropOldest, CallerRuns), or a task whose end its Future
// or Group reports. The op's argument byte: bits 0-1 the channel (0 and 3
// sL, 1 sO, 2 sR); bits 2-3 the entry (sideOwn, sideFuture, sideGo,
// sideGroup); bits 4-5 its final (return, panic, runtime.Goexit; 3
// returns); bit 6 a deadline already past (sL's own submit), or for
// sideGroup a Results in place of the Group; bit 7 one
// Yield first, whose wait lasts until the final wake-ups after Close started
// (so the task is dropped while yielded), unless CallerRuns runs it on its
// submitter. The test does not predict its ending: whatever ends it, it
// must end exactly once and every view must agree (checkSide): its own
// record, OnEnd, the channel's drop counters, its Future or Group, Stats,
// the units.
type fzSideRec struct {
	id, ch, entry int
	final         uint8
	late, yield   bool
	results       bool // sideGroup through a Results (bit 6): its one value is checked too

	// guarded by r.mu
	returned  bool  // the submit returned (a CallerRuns Goexit ends the submitting goroutine)
	err       error // what the submit returned
	starts    int
	inline    bool   // ran on the submitting goroutine (CallerRuns)
	submitter uint64 // the goroutine that submitted it, written before the submit
	outcomes  []fzOutcome
	ends      []smartpool.Outcome // what ChannelParams.OnEnd received for its task
	onDrop    int                 // ChannelParams.OnEnd calls with its task as dropped
	own       int                 // OnEnd calls with its task as the channel's own drop (late, displaced)
	resolved  bool
	resVal    int
	resErr    error
}

// The entries of a side task.
const (
	sideOwn    = iota // the channel's own submit of a Task: Deadline.SubmitTask, Bounded.SubmitTask
	sideFuture        // NewFuture, then the same submit
	sideGo            // Go, by key
	sideGroup         // Group.Go, by key, one Group (or Results) per task
)

type fzSidePanic struct{ id int }

type fzSideTask struct {
	r   *fzRun
	rec *fzSideRec
}

func (t *fzSideTask) Run(ctx context.Context) { t.r.sideBody(ctx, t.rec) }

// fzSideRefused is the ending of a side task its submit refused.
const fzSideRefused fzOutcome = 255

// fzSideCancelled is the ending of a Group's task skipped before it started
// because its group's context ended (a Close that gave up waiting cancels
// the tasks' contexts, and with them the group's): counted Cancelled.
const fzSideCancelled fzOutcome = 254

// named reports whether OnEnd receives a Task the test knows.
func (rec *fzSideRec) named() bool { return rec.entry == sideOwn || rec.entry == sideFuture }

// endingLocked returns how rec ended, or false if that is not known yet.
func (rec *fzSideRec) endingLocked() (fzOutcome, bool) {
	submitErr := rec.starts == 0 && rec.resolved &&
		(errors.Is(rec.resErr, smartpool.ErrClosed) || errors.Is(rec.resErr, smartpool.ErrFull))
	switch {
	case rec.returned && rec.err != nil:
		return fzSideRefused, true
	case len(rec.outcomes) > 0:
		return rec.outcomes[0], true
	case (rec.onDrop > 0 || rec.own > 0) && rec.starts > 0:
		return 0, false // dropped after a Yield: OnEnd comes before its deferred calls, which record the ending
	case rec.onDrop > 0 || rec.own > 0:
		return outDropped, true
	case submitErr && !rec.named(): // Go and Group.Go report the submit's error there
		return fzSideRefused, true
	case rec.entry == sideGroup && rec.starts == 0 && rec.resolved && errors.Is(rec.resErr, context.Canceled):
		return fzSideCancelled, true
	case rec.starts == 0 && rec.resolved && errors.Is(rec.resErr, smartpool.ErrDropped):
		return outDropped, true // a Go or Group task: only its result names it
	}
	return 0, false
}

// awaitsResultLocked reports whether rec has a Future or Group that must
// resolve.
func (rec *fzSideRec) awaitsResultLocked() bool {
	switch rec.entry {
	case sideFuture:
		return !(rec.returned && rec.err != nil) // NewFuture: a refused submit leaves it unresolved
	case sideGo:
		return rec.returned // a CallerRuns Goexit ends Go's caller before Go returns the Future
	}
	return rec.entry == sideGroup
}

func (r *fzRun) newSideChannel(i int, kind fzSideKind) smartpool.Channel {
	switch kind {
	case sideDropLate:
		return channels.NewDeadline(channels.DropLate())
	case sideDropOldest:
		return channels.NewBounded(1, channels.DropOldest())
	}
	return channels.NewBounded(1, channels.CallerRuns())
}

// sideOnEnd is a side channel's OnEnd (after onEnd kept its books): it
// records the ending of a task the test knows, and a drop as sideDropped:
// every drop, and apart the channel's own (late, displaced), which its
// counters count.
func (r *fzRun) sideOnEnd(ch int, t smartpool.Task, o smartpool.Outcome) {
	if o.Dropped() {
		r.sideDropped(ch, t, false)
	}
	if o == smartpool.DroppedLate || o == smartpool.DroppedDisplaced {
		r.sideDropped(ch, t, true)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec, ok := r.sideTasks[t]; ok && rec.ch == ch { // another channel's: sideDropped reported it, or checkSide will
		rec.ends = append(rec.ends, o)
	}
}

// sideDropped records an OnEnd call with a drop, or (own) with the
// channel's own drop. Every drop is counted in Stats before OnEnd runs.
func (r *fzRun) sideDropped(ch int, t smartpool.Task, own bool) {
	k, what := 0, "OnEnd (dropped)"
	if own {
		k, what = 1, "OnEnd (the channel's own drop)"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Read under the lock: the n-th callback to get here follows n counted
	// drops, whichever callbacks run concurrently.
	dropped := r.stats().Channels[ch].Dropped
	r.sideCalls[ch][k]++
	if n := r.sideCalls[ch][k]; dropped < uint64(n) {
		r.problems = append(r.problems, fmt.Sprintf("%s's %s call #%d saw Dropped %d: a drop must be counted before its callbacks", fzLayout[ch].key, what, n, dropped))
	}
	rec, ok := r.sideTasks[t]
	switch {
	case !ok:
		r.sideAnon[ch][k]++
	case rec.ch != ch:
		r.problems = append(r.problems, fmt.Sprintf("side task %d of %s dropped by %s", rec.id, fzLayout[rec.ch].key, fzLayout[ch].key))
	case own:
		rec.own++
	default:
		rec.onDrop++
	}
}

func (r *fzRun) sideEnd(rec *fzSideRec, o fzOutcome) {
	r.mu.Lock()
	rec.outcomes = append(rec.outcomes, o)
	r.mu.Unlock()
}

func (r *fzRun) sideBody(ctx context.Context, rec *fzSideRec) {
	r.mu.Lock()
	rec.starts++
	rec.inline = goroutineID() == rec.submitter // CallerRuns ran it on the submitting goroutine
	r.mu.Unlock()
	settled := false
	defer func() {
		if !settled {
			r.sideEnd(rec, outDroppedSuspended) // its own panic or Goexit is recorded first
		}
	}()
	if rec.yield {
		inline := rec.inline // written by this goroutine
		smartpool.Yield(ctx, func() {
			if !inline {
				<-r.sideWake
			}
		})
	}
	settled = true
	switch rec.final {
	case 1:
		r.sideEnd(rec, outPanicked)
		panic(fzSidePanic{rec.id})
	case 2:
		r.sideEnd(rec, outGoexited)
		runtime.Goexit()
	default:
		r.sideEnd(rec, outRan)
	}
}

// sideOp submits a side task from a goroutine of its own, on which
// CallerRuns may run it: its panic or Goexit must not reach the test's.
func (r *fzRun) sideOp(arg int) {
	rec := &fzSideRec{ch: [4]int{fzSL, fzSO, fzSR, fzSL}[arg&3], entry: arg >> 2 & 3, final: uint8(arg>>4&3) % 3,
		late: arg&(1<<6) != 0, yield: arg&(1<<7) != 0}
	rec.results = rec.entry == sideGroup && rec.late
	r.mu.Lock()
	rec.id = len(r.side)
	r.side = append(r.side, rec)
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(fzSidePanic); !ok {
					r.problem("the submit of side task %d panicked: %v", rec.id, p)
				}
			}
		}()
		err := r.sideSubmit(rec)
		r.mu.Lock()
		rec.returned, rec.err = true, err
		r.mu.Unlock()
	}()
	fzRecv(r.t, done, fmt.Sprintf("the submit of side task %d returning", rec.id))
}

func (r *fzRun) sideSubmit(rec *fzSideRec) (err error) {
	rec.submitter = goroutineID()
	key := fzLayout[rec.ch].key
	own := func(t smartpool.Task) error {
		switch c := r.chans[rec.ch].c.(type) {
		case *channels.Deadline:
			at := r.base
			if rec.late {
				at = time.Now().Add(-time.Hour)
			}
			return c.SubmitTask(at, t)
		case *channels.Bounded:
			return c.SubmitTask(t)
		}
		panic("unreachable")
	}
	fn := func(ctx context.Context) (int, error) { r.sideBody(ctx, rec); return rec.id, nil }
	switch rec.entry {
	case sideOwn:
		t := &fzSideTask{r: r, rec: rec}
		r.mu.Lock()
		r.sideTasks[t] = rec
		r.mu.Unlock()
		return own(t)
	case sideFuture:
		t, f := smartpool.NewFuture(fn)
		r.mu.Lock()
		r.sideTasks[t] = rec
		r.mu.Unlock()
		var err error
		returned := false
		defer func() { // also when a CallerRuns Goexit ends this goroutine inside the submit
			if !returned || err == nil {
				r.awaitFuture(rec, f)
			}
		}()
		err = own(t)
		returned = true
		return err
	case sideGo:
		r.awaitFuture(rec, goF(smartpool.Go(r.pool, key, fn)))
		return nil
	}
	if rec.results {
		return r.sideResults(rec, key)
	}
	// TryGo, not Go: Go waits for room at a full pool, and the harness's ops
	// are synchronous. A refusal leaves Wait nothing to report at a full pool,
	// so the result is then ErrFull, as the refusal's error.
	g := smartpool.NewGroup(context.Background(), r.pool)
	refused := false
	defer func() { // also when a CallerRuns Goexit ends this goroutine inside TryGo
		if !refused {
			r.awaitGroup(rec, g)
			return
		}
		// At once: nothing is pending. The refusal's error (ErrClosed, or
		// the group's context error if a Close that gave up cancelled it)
		// is the submit's error too, so the ledger counts a refusal.
		werr := g.Wait(context.Background())
		if werr == nil {
			werr = smartpool.ErrFull
		}
		r.resolveSide(rec, 0, werr)
		err = werr
	}()
	refused = !g.TryGo(key, func(ctx context.Context) error { r.sideBody(ctx, rec); return nil })
	return nil
}

// sideResults is sideGroup's submit through a Results: its TryGo, as the
// Group's. Its Wait must return one slot holding the task's value if it ran
// to its end, zero otherwise, and none if TryGo refused it.
func (r *fzRun) sideResults(rec *fzSideRec, key string) (err error) {
	g := smartpool.NewResults[int](context.Background(), r.pool)
	refused := false
	wait := func(ctx context.Context) (int, error) {
		vals, err := g.Wait(ctx)
		if ctx.Err() != nil {
			return 0, err
		}
		want := 1
		if refused {
			want = 0
		}
		if len(vals) != want {
			r.problem("side task %d's Results returned %d values, want %d (refused %v, error %v)", rec.id, len(vals), want, refused, err)
			return 0, err
		}
		if want == 0 {
			return 0, err
		}
		if vals[0] != 0 && (vals[0] != rec.id || err != nil) {
			r.problem("side task %d's Results returned value %d with %v; want %d with nil, or 0", rec.id, vals[0], err, rec.id)
		}
		return vals[0], err
	}
	defer func() { // also when a CallerRuns Goexit ends this goroutine inside TryGo
		if !refused {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*fzLong)
				defer cancel()
				if v, err := wait(ctx); ctx.Err() == nil {
					r.resolveSide(rec, v, err)
				}
			}()
			return
		}
		_, werr := wait(context.Background()) // at once: nothing is pending
		if werr == nil {
			werr = smartpool.ErrFull
		}
		r.resolveSide(rec, 0, werr)
		err = werr
	}()
	refused = !g.TryGo(key, func(ctx context.Context) (int, error) { r.sideBody(ctx, rec); return rec.id, nil })
	return nil
}

func (r *fzRun) resolveSide(rec *fzSideRec, v int, err error) {
	r.mu.Lock()
	rec.resolved, rec.resVal, rec.resErr = true, v, err
	r.mu.Unlock()
}

func (r *fzRun) awaitFuture(rec *fzSideRec, f *smartpool.Future[int]) {
	go func() {
		select {
		case <-f.Done():
			v, err := f.Wait(context.Background())
			r.resolveSide(rec, v, err)
		case <-time.After(2 * fzLong): // sideDone has failed the test by then
		}
	}()
}

func (r *fzRun) awaitGroup(rec *fzSideRec, g *smartpool.Group[string]) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*fzLong)
		defer cancel()
		err := g.Wait(ctx)
		if ctx.Err() == nil {
			r.resolveSide(rec, 0, err)
		}
	}()
}

// sideDone reports nil once every side task has ended and its Future or
// Group resolved.
func (r *fzRun) sideDone() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.side {
		o, ok := rec.endingLocked()
		switch {
		case !ok:
			return fmt.Errorf("side task %d (%s, entry %d, final %d) has not ended: started %d, OnEnd dropped %d, of them the channel's %d, result %v %v",
				rec.id, fzLayout[rec.ch].key, rec.entry, rec.final, rec.starts, rec.onDrop, rec.own, rec.resolved, rec.resErr)
		case rec.awaitsResultLocked() && !rec.resolved:
			return fmt.Errorf("side task %d (%s, entry %d) ended (%v) but its Future or Group has not resolved", rec.id, fzLayout[rec.ch].key, rec.entry, o)
		}
	}
	return nil
}

// checkSide checks, once everything ended, that each side task ended
// exactly once and every view agrees; Stats were matched by countsMatch.
func (r *fzRun) checkSide() {
	t := r.t
	r.mu.Lock()
	defer r.mu.Unlock()
	var anonDropped [fzChans]int
	var callerRan, skippedHere, handlerWant [fzChans]int
	var own [fzChans]int
	for _, rec := range r.side {
		o, _ := rec.endingLocked()
		what := fmt.Sprintf("side task %d (%s, entry %d, final %d, late %v, yield %v) ended %v", rec.id, fzLayout[rec.ch].key, rec.entry, rec.final, rec.late, rec.yield, o)
		dropped := o == outDropped || o == outDroppedSuspended
		if len(rec.outcomes) > 1 || rec.starts > 1 {
			t.Errorf("%s: outcomes %v, %d starts; want one ending", what, rec.outcomes, rec.starts)
		}
		if (rec.starts == 1) != (o != outDropped && o != fzSideRefused && o != fzSideCancelled) {
			t.Errorf("%s after %d starts", what, rec.starts)
		}
		switch {
		case rec.named() && dropped && rec.onDrop != 1:
			t.Errorf("%s: OnEnd called %d times with a drop, want once (as the channel's own %d times)", what, rec.onDrop, rec.own)
		case rec.named() && !dropped && rec.onDrop+rec.own != 0:
			t.Errorf("%s, yet OnEnd saw it dropped: %d times, as the channel's own %d", what, rec.onDrop, rec.own)
		case rec.own > 1:
			t.Errorf("%s: OnEnd saw it dropped by the channel %d times", what, rec.own)
		case !rec.named() && dropped:
			anonDropped[rec.ch]++
		}
		if rec.named() {
			// OnEnd: once, with the ending, unless the submit refused it.
			// A drop is the channel's (late, displaced) or Close's.
			var want []smartpool.Outcome
			switch {
			case o == fzSideRefused:
			case dropped && rec.own > 0 && rec.ch == fzSL:
				want = []smartpool.Outcome{smartpool.DroppedLate}
			case dropped && rec.own > 0:
				want = []smartpool.Outcome{smartpool.DroppedDisplaced}
			default:
				want = []smartpool.Outcome{fzEnding(o)}
			}
			if !slices.Equal(rec.ends, want) {
				t.Errorf("%s: OnEnd received %v, want %v (as the channel's own drop %d times)", what, rec.ends, want, rec.own)
			}
		}
		own[rec.ch] += rec.own
		if o == fzSideCancelled || o == fzSideRefused {
			skippedHere[rec.ch]++ // CallerRuns may have handed it to its submitter, which skipped it
		}
		if rec.inline {
			if rec.ch != fzSR {
				t.Errorf("%s on its submitter's goroutine, not by CallerRuns", what)
			}
			callerRan[rec.ch]++
		}
		if o == outPanicked {
			handlerWant[rec.ch]++ // every panic reaches the handler once, whoever else reports it
		}
		if !rec.resolved {
			continue
		}
		var pe *smartpool.PanicError
		switch {
		case o == fzSideRefused:
			if rec.named() && !errors.Is(rec.resErr, rec.err) || !rec.named() && !errors.Is(rec.resErr, smartpool.ErrClosed) && !errors.Is(rec.resErr, smartpool.ErrFull) && !errors.Is(rec.resErr, context.Canceled) {
				t.Errorf("%s: result %v, submit %v", what, rec.resErr, rec.err)
			}
		case o == outRan:
			if rec.resErr != nil || (rec.entry != sideGroup || rec.results) && rec.resVal != rec.id {
				t.Errorf("%s: result %d, %v; want %d, nil", what, rec.resVal, rec.resErr, rec.id)
			}
		case rec.results && o != outRan && rec.resVal != 0:
			t.Errorf("%s: Results' slot %d, want the zero value", what, rec.resVal)
		case o == outPanicked:
			if !errors.As(rec.resErr, &pe) {
				t.Errorf("%s: result %v, want a *PanicError", what, rec.resErr)
			}
		case o == outGoexited:
			if !errors.Is(rec.resErr, smartpool.ErrGoexit) {
				t.Errorf("%s: result %v, want ErrGoexit", what, rec.resErr)
			}
		case dropped:
			if !errors.Is(rec.resErr, smartpool.ErrDropped) {
				t.Errorf("%s: result %v, want ErrDropped", what, rec.resErr)
			}
		}
	}
	for ch := fzSL; ch <= fzSR; ch++ {
		key := fzLayout[ch].key
		if got := r.sideAnon[ch][0]; got != anonDropped[ch] {
			t.Errorf("%s: OnEnd got %d tasks of Go or Group.Go as dropped; %d of them were dropped", key, got, anonDropped[ch])
		}
		if got := r.sideAnon[ch][1]; got > anonDropped[ch] {
			t.Errorf("%s: OnEnd got %d tasks of Go or Group.Go as the channel's own drops; %d of them were dropped", key, got, anonDropped[ch])
		}
		switch c := r.chans[ch].c.(type) {
		case *channels.Deadline:
			if st := c.Stats(); st.DroppedLate != uint64(own[ch]+r.sideAnon[ch][1]) {
				t.Errorf("%s: DeadlineStats.DroppedLate %d, OnEnd saw %d dropped late", key, st.DroppedLate, own[ch]+r.sideAnon[ch][1])
			}
		case *channels.Bounded:
			st := c.Stats()
			if st.Dropped != uint64(own[ch]+r.sideAnon[ch][1]) || st.CallerRan < uint64(callerRan[ch]) || st.CallerRan > uint64(callerRan[ch]+skippedHere[ch]) {
				t.Errorf("%s: BoundedStats %+v; OnEnd saw %d displaced, tasks run on the caller %d (and %d skipped, cancelled or refused)",
					key, st, own[ch]+r.sideAnon[ch][1], callerRan[ch], skippedHere[ch])
			}
		}
		if got := r.sidePanics[key]; got != handlerWant[ch] {
			t.Errorf("%s: the panic handler saw %d side panics; %d side tasks panicked", key, got, handlerWant[ch])
		}
	}
}

// goroutineID returns the calling goroutine's number, read from its stack
// header ("goroutine 42 [running]:"): the harness tells a task CallerRuns ran
// on the submitter from one a worker ran by it, whatever context it got.
func goroutineID() uint64 {
	var buf [32]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = b[len("goroutine "):]
	id, _ := strconv.ParseUint(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}
