package engine

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"

	"github.com/smartpool-go/smartpool/internal/gid"
	"github.com/smartpool-go/smartpool/task"
)

// SubmitMode says how submitContext queues a task.
type SubmitMode struct {
	Order  task.Order                        // the key the channel orders the task by (WithDeadline, WithPriority)
	push   func(task.Task, task.Order) error // queues the task; nil: the channel's Push
	values bool                              // the task's context looks values up in the submitter's ctx first
	Wait   bool                              // wait for a unit of the in-flight limit, else ErrFull
	Room   bool                              // also wait for room in a full channel that can wait for it (pushWaiter)
	Handle *Handle                           // WithHandle's, filled once the task is queued; nil: not asked for
}

// pushWaiter is implemented by channels whose Push refuses a task with
// ErrFull when they are full and that can wait for room instead
// (channels.Bounded). Like Push, PushWait receives a task that holds its unit
// of the in-flight limit; it returns nil exactly when it queued t.
type pushWaiter interface {
	PushWait(ctx context.Context, t task.Task) error
}

// CancelHook is implemented by the library's own task types (futures, group
// tasks) that must resolve when their submitter's context cancels them while
// they are queued, or a Handle's Cancel does (err is then context.Canceled).
type CancelHook interface{ Cancelled(err error) }

// HandleCancelHook is implemented by the library's task types that resolve
// a Handle's Cancel other than a cancellation by their context: a group
// task records context.Canceled as its own error, not as the context's.
type HandleCancelHook interface{ CancelledByHandle() }

// SubmitContext queues t in channel ch, to be cancelled if ctx ends while
// it is queued. It waits, as how says, for a unit of the in-flight limit
// and (how.room) for room in the channel, until ctx ends; a wait from a
// pool task's goroutine (another pool's, or this pool's at a channel's cap)
// yields the worker. A task of this pool otherwise never waits: where it
// would, it runs t itself and returns nil (help.go). No wait and no run
// inline holds pin, the caller's, if not nil (see keyPin).
func (e *Engine) SubmitContext(ctx context.Context, ch int, t task.Task, how SubmitMode, pin *KeyPin) error {
	if e.observer != nil {
		return e.submitContextObserved(ctx, ch, t, how, pin) // observe.go
	}
	return e.submitContext(ctx, ch, t, how, pin)
}

func (e *Engine) submitContext(ctx context.Context, ch int, t task.Task, how SubmitMode, pin *KeyPin) error {
	if e.stopped.Load() {
		return task.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	user := t // as submitted, for a run inline
	if e.admit.on && !e.admit.tryAdmit(1) {
		if !how.Wait {
			return errLimitFull
		}
		if tc := e.Helper(ctx); tc != nil { // every unit is held: see help.go
			ok, err := e.claimInline(ch) // ErrClosed once a removal started (hold.go)
			if err != nil {
				return err
			}
			if ok {
				pin.HeldInline() // held in ch until the run ends: no other removal waits for it
				e.RunInline(tc, ch, inlineTaskContext(tc, ctx, how.values), user)
				return nil
			}
		}
		var err error
		admitted := false
		ch, err = pin.Unpinned(ch, func() (err error) {
			YieldFor(ctx, func() { err = e.admitWait(ctx) }) // a plain wait on a goroutine that runs no task
			admitted = err == nil
			return err
		})
		if err != nil {
			if admitted { // the channel was removed while it waited
				e.unitDone()
			}
			return err
		}
	}
	values := how.values && ctx != context.Background() && ctx != context.TODO()
	var c *cancellable
	switch {
	case ctx.Done() != nil || how.Handle != nil:
		c = newCancellable(ctx, e, ch, t, values)
		t = c
	case values:
		t = &withValues{Task: t, vals: submitterValues{values: ctx}}
	}
	e.credited(ch, 1)
	channel := e.Chans[ch].c
	stamped := e.timing.stamp(ch, t)
	var err error
	var indexed reorderer // the channel queued the task where its Reorder finds it
	if how.push == nil && how.Handle != nil {
		indexed, _ = channel.(reorderer)
	}
	switch {
	case how.push != nil:
		err = how.push(stamped, how.Order)
	case indexed != nil:
		err = indexed.PushIndexed(stamped, how.Order)
	default:
		err = channel.Push(stamped, how.Order)
	}
	if pw, ok := channel.(pushWaiter); ok && how.Room && errors.Is(err, task.ErrFull) {
		indexed = nil
		// The channel is full: a task runs the new one itself (help.go),
		// unless a removal started since the push (ErrClosed, hold.go).
		var refused error
		if tc := e.Helper(ctx); tc != nil {
			var inline bool
			if inline, refused = e.claimInline(ch); inline {
				if c != nil {
					c.refused()
				}
				e.queuedUnitsDone(ch, 1)
				pin.HeldInline() // held in ch until the run ends: no other removal waits for it
				e.RunInline(tc, ch, inlineTaskContext(tc, ctx, how.values), user)
				return nil
			}
		}
		if err = refused; err == nil {
			err = pin.holdInstead(ch) // the wait is in ch: a removal of ch waits for it, and ends it by closing ch
		}
		if err == nil {
			YieldFor(ctx, func() { err = pw.PushWait(ctx, stamped) })
		}
	}
	switch {
	case err != nil:
		if c != nil {
			c.refused()
		}
		e.queuedUnitsDone(ch, 1)
	case c != nil:
		if how.Handle != nil {
			*how.Handle = Handle{c: c, queued: stamped, src: indexed, channel: e.Chans[ch].name}
		}
		c.pushed()
	}
	return err
}

// inlineTaskContext is the context of a task run inline by the task carried
// by tc (help.go): tc's, as a worker would pass, with the submitter's values
// first if values, as submitContext would pass them.
func inlineTaskContext(tc *taskContext, ctx context.Context, values bool) context.Context {
	if values && ctx != context.Background() && ctx != context.TODO() {
		return &submitterValues{Context: tc, values: ctx}
	}
	return tc
}

// submitterValues is the context a task submitted with a context receives:
// the pool's task context (cancellation, deadline, the handle Yield needs)
// with the submitter's values looked up first.
type submitterValues struct {
	context.Context                 // the task context the worker passes to Run
	values          context.Context // the submitter's
}

// Value looks key up in the submitter's context, then in the task's; the
// pool's own task handle always comes from the task's.
func (c *submitterValues) Value(key any) any {
	if key != (TaskKey{}) {
		if v := c.values.Value(key); v != nil {
			return v
		}
	}
	return c.Context.Value(key)
}

// withValues is a task submitted with a context that cannot be cancelled
// but may carry values.
type withValues struct {
	task.Task
	vals submitterValues
}

// Run runs the task with the submitter's values.
func (t *withValues) Run(ctx context.Context) {
	t.vals.Context = ctx
	t.Task.Run(&t.vals)
}

// Unwrap returns the task as it was submitted, for drop reports.
func (t *withValues) Unwrap() task.Task { return t.Task }

// cancellable is a task queued by WithContext with a context that can end.
// Exactly one party claims it, by compare-and-swap on state: its Run (the
// task starts), a cancellation, Close or a channel that drops it, or the
// submit whose Push failed. The claimer accounts for it; everyone else
// leaves it alone, so it is counted once and its unit released once. The
// check is in Run, so it works through channels that wrap the tasks they
// queue (channels.Keyed): a Run that lost the claim marks its task context
// skipped, and the worker counts nothing.
//
// A task is pushing until its submit's Push returned. The context's
// AfterFunc cannot claim it then, since Push may yet fail (the submit
// returns the error, and the task was never queued, so it is not
// cancelled); the submit looks at the context once Push succeeded instead.
// Whoever holds the task from the queue (a worker's Run, a drop) knows it
// was queued and may claim it in either state.
//
// A winning cancellation counts the task, then resolves the Future or Group
// the task belongs to (CancelHook) with the context's error.
//
// A Handle's Cancel is one more such party: a cancellation that claims the
// task from queued only (its submit has returned), and resolves it with
// context.Canceled. A task submitted with WithHandle and no context gets a
// cancellable over context.Background(), which registers no AfterFunc.
type cancellable struct {
	task.Task
	ctx    context.Context // the submitter's: Run checks it, as the AfterFunc may not have run yet
	e      *Engine
	ch     int
	stop   func() bool // unregisters the AfterFunc; set before the task is queued
	state  atomic.Int32
	values bool            // Run passes the submitter's values on (vals)
	vals   submitterValues // the context Run passes, when values; written by Run only
}

const (
	pushing int32 = iota
	queued
	claimedStarted
	cancelling // claimed by a cancellation that is counting it
	claimedCancelled
	claimedDropped
	claimedRefused
)

// newCancellable wraps t. A context that never ends (Done returns nil:
// context.Background(), a WithHandle submit's) gets no AfterFunc: it would
// never run, yet AfterFunc allocates its registration all the same.
func newCancellable(ctx context.Context, e *Engine, ch int, t task.Task, values bool) *cancellable {
	c := &cancellable{Task: t, ctx: ctx, e: e, ch: ch, values: values, vals: submitterValues{values: ctx}}
	if ctx.Done() == nil {
		c.stop = neverStarted
		return c
	}
	c.stop = context.AfterFunc(ctx, func() { c.cancel(false) })
	return c
}

// neverStarted is the stop of a cancellable whose context never ends.
func neverStarted() bool { return false }

// claim moves c from queued (or, with fromQueue, from pushing too) to how,
// and reports whether it did. A winner other than a cancellation unregisters
// the AfterFunc (a cancellation needs not: its context is done; and the
// AfterFunc may run before newCancellable has stored stop). A loser waits
// until a cancellation that won has been counted, so that a worker or a
// Close that goes on after losing sees the count: the report Close returns
// is exact. The wait spans a few instructions of the cancelling goroutine.
func (c *cancellable) claim(how int32, fromQueue bool) bool {
	for {
		s := c.state.Load()
		if s != queued && (!fromQueue || s != pushing) {
			break
		}
		if c.state.CompareAndSwap(s, how) { // fails only if the submit moved it from pushing to queued
			if how != cancelling {
				c.stop()
			}
			return true
		}
	}
	for c.state.Load() == cancelling {
		runtime.Gosched()
	}
	return false
}

// pushed is called by the submit once Push queued c: from now on its
// context's end cancels it, and if it ended meanwhile, it cancels it now.
func (c *cancellable) pushed() {
	if c.state.CompareAndSwap(pushing, queued) && c.ctx.Err() != nil {
		c.cancel(false)
	}
}

// refused is called by the submit whose Push failed: c was never queued, so
// nothing else can claim it, and the submit releases its unit.
func (c *cancellable) refused() {
	c.state.Store(claimedRefused)
	c.stop()
}

// Run runs the task unless its submitter cancelled it first. The context is
// checked here too: the AfterFunc runs on a goroutine of its own, which may
// not have been scheduled yet when a worker reaches the task.
func (c *cancellable) Run(ctx context.Context) {
	if c.state.Load() == claimedStarted || (c.ctx.Err() == nil && c.claim(claimedStarted, true)) { // claimed by a hand-over (park.go), or now
		if c.values {
			c.vals.Context = ctx
			ctx = &c.vals
		}
		c.Task.Run(ctx)
		return
	}
	if run, ok := ctx.Value(InlineKey{}).(*InlineRun); ok {
		// Run by its channel on the submitting goroutine (Bits.RunHere),
		// which gave its unit back before running it: count, release nothing.
		c.cancelUnit(true, false)
		run.skipped = true
		return
	}
	c.cancel(true) // unless the AfterFunc counted it already
	if tc := TaskOf(ctx); tc != nil && tc.E == c.e {
		tc.skipped = true
	}
}

// cancel counts c as cancelled, unless another party claimed it. It runs
// when the submitter's context ends (on the AfterFunc's goroutine), from
// the submit if that came first, or from Run (fromQueue) when the context
// ended before the AfterFunc ran.
func (c *cancellable) cancel(fromQueue bool) { c.cancelUnit(fromQueue, true) }

// cancelUnit is cancel, releasing the task's unit of the limit only if
// release: a task its channel ran on the submitter holds none any more.
func (c *cancellable) cancelUnit(fromQueue, release bool) { c.cancelWith(fromQueue, release, false) }

// cancelWith is cancelUnit resolving the task's Future or Group with the
// context's error, or for byHandle as a Handle's Cancel (context.Canceled,
// HandleCancelHook), reporting whether this call cancelled it.
func (c *cancellable) cancelWith(fromQueue, release, byHandle bool) bool {
	if !c.claim(cancelling, fromQueue) {
		return false
	}
	if !fromQueue && c.e.share() {
		// Off the pool's goroutines (the AfterFunc's, a Handle's caller,
		// the submit): hold a share of live until OnEnd returned, so that
		// Close does not return before it. Taken while cancelling, before
		// whoever meets the task in its queue can go on and exit.
		defer c.e.exit()
		if c.e.Chans[c.ch].onEnd != nil {
			id := gid.Current() // a Close from the OnEnd must not wait for it
			c.e.callbacks.add(id)
			defer c.e.callbacks.remove(id)
		}
	}
	c.e.Chans[c.ch].cancelled.Add(1)
	if release {
		c.e.unitDone()
	}
	c.state.Store(claimedCancelled)
	err := context.Canceled
	if !byHandle {
		err = c.ctx.Err()
	}
	if hh, ok := plain(c.Task).(HandleCancelHook); ok && byHandle {
		hh.CancelledByHandle()
	} else if h, ok := plain(c.Task).(CancelHook); ok {
		h.Cancelled(err)
	}
	c.e.notePanic(c.Task, err) // the cause, for an observer (observe.go)
	c.e.ended(c.ch, c.Task, task.Cancelled)
	return true
}

// cancelByHandle is Handle.Cancel: it claims c from queued, as a
// cancellation whose context has not ended, so the AfterFunc, if any, is
// unregistered here.
func (c *cancellable) cancelByHandle() bool {
	if !c.cancelWith(false, true, true) {
		return false
	}
	c.stop()
	return true
}
