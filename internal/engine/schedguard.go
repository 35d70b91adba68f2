package engine

import (
	"math/bits"
	"time"

	"github.com/smartpool-go/smartpool/internal/nilcheck"
	"github.com/smartpool-go/smartpool/scheduler"
)

// A Scheduler is user code that runs inside the pool: its Start in New, its
// NewPicker on every worker start, its Picker's Pick between every two tasks.
// A panic in any of them must not kill the process nor leave a worker
// without a policy, so each call is guarded here. A panic in Start fails New
// with ErrConfig. A worker whose NewPicker panicked or returned nil, or whose
// Pick panicked, logs it once and from then on serves the highest level with
// work, without calling that picker again: a policy that panicked once would
// likely panic on every task.

// StrictPriority reports whether s declares that its pickers serve the
// highest level with work (scheduler.StrictPriority); a panic in the
// declaration is a no.
func StrictPriority(s scheduler.Scheduler) (yes bool) {
	sp, ok := s.(scheduler.StrictPriority)
	if !ok {
		return false
	}
	defer func() {
		if recover() != nil {
			yes = false
		}
	}()
	return sp.PicksHighestFirst()
}

// StartScheduler calls s.Start, turning a panic into a configuration error.
func StartScheduler(s scheduler.Scheduler, levels int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = ConfigErr(errSchedulerPanic, "the scheduler's Start panicked: %v", r)
		}
	}()
	if err := s.Start(levels); err != nil {
		return ConfigErr(err, "Schedule refused %d levels: %v", levels, err)
	}
	return nil
}

// newPicker returns a picker of e's scheduler for a new worker, or nil (the
// highest level with work) if NewPicker panicked or returned nil.
func (e *Engine) newPicker() (p scheduler.Picker) {
	if e.sched == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			e.logSchedulerPanic("NewPicker", r)
			p = nil
		}
	}()
	p = e.sched.NewPicker()
	if nilcheck.Nil(p) {
		e.log.Error("smartpool: the scheduler's NewPicker returned nil; the worker serves the highest level with work")
		return nil
	}
	return p
}

// pick returns the level w serves next among those set in avail (non-zero).
// A level outside avail means the highest level with work.
func (w *Worker) pick(avail uint64) (l int) {
	if w.picker == nil {
		return bits.TrailingZeros64(avail)
	}
	defer func() {
		if r := recover(); r != nil {
			w.e.logSchedulerPanic("Pick", r)
			w.picker = nil // only the worker's owner touches it (worker.go)
			l = -1
		}
	}()
	return w.picker.Pick(avail, time.Now)
}

func (e *Engine) logSchedulerPanic(hook string, r any) {
	e.log.Error("smartpool: the scheduler's "+hook+" panicked; the worker serves the highest level with work from now on",
		"panic", r, "stack", StackFrames(Stack()))
}
