package engine

import (
	"context"

	"github.com/smartpool-go/smartpool/task"
)

// # Observing tasks (Config.Observe)
//
// A pool built with an observer (PoolSpec.Observe) wraps every task it
// admits in an observed, on the submitting goroutine, after calling the
// observer's factory with the submit's context; a pool without one never
// reaches this file: each path below is behind one nil check of e.observe,
// read-only after Build.
//
// The wrapper sits innermost, inside WithContext's cancellable, a stamp and
// any channel's wrapper (task.Unwrapper), so that:
//
//   - Start runs only when the task really starts: a cancellable whose
//     context ended never calls its inner Run;
//   - the ending reuses the one ending path every task takes, ended (the
//     place OnEnd is called from), which finds the wrapper by unwrapping
//     (observedOf). A pool with an observer gives every channel an OnEnd
//     (noEnd when it has none), so the guards "onEnd != nil" before ended
//     let every ending through, and nothing else changes on those paths.
//     Every task ends exactly once (see "Close and the endings off the
//     workers", doc.go), so End is called exactly once;
//   - a submit that fails returns its error before the task was queued or
//     run: nothing will end it, so the submit itself ends it (End with the
//     zero Outcome and the error);
//   - a yield and its re-entry (YieldFor) tell the innermost observed task
//     the goroutine runs: taskContext.obs, which the wrapper's Run sets and
//     restores around its task (an inline run nests).
//
// A panic's value reaches End through the wrapper's err, set on the ending
// goroutine before ended runs (notePanic), whether the worker recovered it
// or the task's Future or Group did (taskContext.Recovered), and a
// cancellation's cause the same way.

// Observer is a task's observer, which the pool's observer factory returns
// at submit (smartpool.TaskObserver).
type Observer interface {
	Start(ctx context.Context) context.Context
	Yield()
	Resume()
	End(o task.Outcome, err error)
}

// observed is a task of a pool with an observer, as queued. obs and Task
// are written at submit, before the task is queued, and read-only after;
// err is written by the goroutine that ends the task, before ended.
type observed struct {
	task.Task
	obs Observer
	err error
}

// Unwrap returns the task as submitted (OnEnd, drops, Handles see it).
func (o *observed) Unwrap() task.Task { return o.Task }

// ObservedRunner is implemented by the library's task types that build the
// context their function receives themselves (a group's task, from its
// group's context): they get the context the observer's Start returned, to
// look values up in first.
type ObservedRunner interface {
	RunObserved(ctx, started context.Context)
}

// Run starts the observer and runs the task with the context it returned.
func (o *observed) Run(ctx context.Context) {
	started := o.obs.Start(ctx)
	if started == nil {
		started = ctx
	}
	if tc := TaskOf(ctx); tc != nil {
		prev := tc.obs
		tc.obs = o
		defer func() { tc.obs = prev }()
	}
	if r, ok := o.Task.(ObservedRunner); ok {
		r.RunObserved(ctx, started)
		return
	}
	o.Task.Run(started)
}

// observe wraps t, submitted to channel ch with ctx (context.Background():
// none, which the observer gets as nil), when the
// pool has an observer; it returns t and nil otherwise, or when the
// observer's factory returned nil for this task.
func (e *Engine) observe(ctx context.Context, ch int, t task.Task) (task.Task, *observed) {
	if e.observer == nil {
		return t, nil
	}
	if ctx == context.Background() {
		ctx = nil // no context: a plain submit, or WithHandle alone
	}
	obs := e.observer(ctx, ch)
	if obs == nil {
		return t, nil
	}
	o := &observed{Task: t, obs: obs}
	return o, o
}

// Observed returns t wrapped for the pool's observer, for a task the
// library runs in place of a submit (a group's task run inline), or t.
func (e *Engine) Observed(ctx context.Context, ch int, t task.Task) task.Task {
	t, _ = e.observe(ctx, ch, t)
	return t
}

// refused ends o, whose submit failed with err before it was queued.
func (o *observed) refused(err error) {
	if o != nil && err != nil {
		o.obs.End(0, err)
	}
}

// submitContextObserved is SubmitContext for a pool with an observer.
func (e *Engine) submitContextObserved(ctx context.Context, ch int, t task.Task, how SubmitMode, pin *KeyPin) error {
	t, o := e.observe(ctx, ch, t)
	err := e.submitContext(ctx, ch, t, how, pin)
	o.refused(err)
	return err
}

// observedOf returns the observed wrapper inside t, or nil.
func observedOf(t task.Task) *observed {
	for {
		if o, ok := t.(*observed); ok {
			return o
		}
		inner, ok := unwrapOnce(t)
		if !ok {
			return nil
		}
		t = inner
	}
}

// plain returns t without the observed wrapper, for the library's type
// assertions on the task as submitted (CancelHook).
func plain(t task.Task) task.Task {
	if o, ok := t.(*observed); ok {
		return o.Task
	}
	return t
}

// notePanic records err as the cause of t's coming end, for its observer.
func (e *Engine) notePanic(t task.Task, err error) {
	if e.observer == nil {
		return
	}
	if o := observedOf(t); o != nil {
		o.err = err
	}
}

// endObserved tells t's observer, if any, how t ended, from ended; a
// panic in End goes to the panic handler, and OnEnd still runs.
func (e *Engine) endObserved(ch int, t task.Task, how task.Outcome) {
	o := observedOf(t)
	if o == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			e.panicked(ch, &task.PanicError{Value: r, Stack: Stack()})
		}
	}()
	o.obs.End(how, o.err)
}

// noEnd is the OnEnd of a channel without one in a pool with an observer.
func noEnd(task.Task, task.Outcome) {}

// onEndOf is channel cs's OnEnd as the engine keeps it.
func (e *Engine) onEndOf(cs *ChanSpec) func(task.Task, task.Outcome) {
	if cs.OnEnd == nil && e.observer != nil {
		return noEnd
	}
	return cs.OnEnd
}

// LevelOf returns channel ch's level; ch is pinned by the caller (a submit).
func (e *Engine) LevelOf(ch int) int { return e.Chans[ch].level }

// Unstamp is source.Bits.Unstamp, whose documentation is the channel
// author's: Stamp observed t (a channel's own submit), and the channel
// could not queue it.
func (b Bits) Unstamp(t task.Task, err error) {
	if b.e != nil && b.e.observer != nil {
		observedOf(t).refused(err)
	}
}
