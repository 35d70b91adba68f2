package engine

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smartpool-go/smartpool/internal/gid"
	"github.com/smartpool-go/smartpool/task"
)

// Timer is the engine side of a Timer: its firing and its stop.
type Timer struct {
	s       *schedules
	ch      int
	task    task.Task
	every   time.Duration // 0 for one-shot
	catchUp bool          // missed ticks fire back to back (CatchUp), not once (Skip)
	Skipped atomic.Uint64 // firings refused with ErrFull

	// guarded by s.mu
	t       *time.Timer
	next    time.Time // the grid point the pending firing is for
	stopped bool
}

// schedules tracks a pool's timers so Close can stop them.
type schedules struct {
	e      *Engine
	mu     sync.Mutex
	closed bool                // guarded by mu
	active map[*Timer]struct{} // guarded by mu
	firing sync.WaitGroup      // firings in progress
	firers gidSet              // the goroutines running them: a Close from one does not wait for itself
}

func (tm *Timer) stopLocked() bool {
	if tm.stopped {
		return false
	}
	tm.stopped = true
	tm.t.Stop()
	delete(tm.s.active, tm)
	return true
}

// fire runs on the runtime's timer goroutine: submit, then arm the next tick.
func (tm *Timer) fire() {
	s := tm.s
	// Pinned before it reads stopped: a removal stops the channel's
	// timers before it flips the epoch, so a firing that pinned after
	// the flip sees its timer stopped, and one pinned before holds the
	// slot until its submit returned (see "Reshaping", 6).
	k := s.e.Pin()
	s.mu.Lock()
	if tm.stopped || s.closed {
		s.mu.Unlock()
		s.e.Unpin(k)
		return
	}
	s.firing.Add(1)
	s.mu.Unlock()
	defer s.firing.Done()
	id := gid.Current()
	s.firers.add(id)
	defer s.firers.remove(id)

	err := func() error {
		defer s.e.Unpin(k) // deferred: Push may run the task here, and it may Goexit
		return s.e.Submit(tm.ch, tm.task, task.Order{}, nil)
	}()
	if errors.Is(err, task.ErrFull) {
		tm.Skipped.Add(1)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if tm.stopped {
		return
	}
	if err != nil && !errors.Is(err, task.ErrFull) || tm.every == 0 {
		tm.stopLocked()
		return
	}
	now := time.Now()
	tm.next = tm.next.Add(tm.every)
	if !tm.catchUp && !tm.next.After(now) {
		behind := now.Sub(tm.next)/tm.every + 1
		tm.next = tm.next.Add(behind * tm.every)
	}
	tm.t.Reset(tm.next.Sub(now))
}

// stopChannel stops the timers of channel index ch, which a removal
// detached (reshape.go).
func (s *schedules) stopChannel(ch int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tm := range s.active {
		if tm.ch == ch {
			tm.stopLocked()
		}
	}
}

// Close stops every timer and waits for firings in progress, but its own:
// called from a firing (a task a full CallerRuns channel runs on the
// timer's goroutine, an OnEnd of a task it displaced, both held by the
// channel: see "Endings off the pool's goroutines", engine.go), it would
// wait for itself. Only startClose calls it, once, so the count it takes
// out for the wait is put back before that firing's deferred Done.
func (s *schedules) Close() {
	s.mu.Lock()
	s.closed = true
	for tm := range s.active {
		tm.stopLocked()
	}
	s.mu.Unlock()
	if s.firers.has(gid.Current()) {
		s.firing.Done()
		defer s.firing.Add(1)
	}
	s.firing.Wait()
}

// ErrGone is add's error when lookup no longer finds the channel.
var ErrGone = errors.New("channel gone")

// Add schedules t for channel lookup() at at, then every every (0: once),
// unless the pool is closing (ErrClosed) or lookup fails under mu (errGone).
// Looked up under mu: a removal publishes the map without the key before
// stopChannel takes mu, so a timer registered here is either seen by
// stopChannel or made for the channel present now.
func (s *schedules) Add(at time.Time, every time.Duration, catchUp bool, t task.Task, lookup func() (int, bool)) (*Timer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, task.ErrClosed
	}
	ch, ok := lookup()
	if !ok {
		return nil, ErrGone
	}
	tm := &Timer{s: s, ch: ch, task: t, every: every, catchUp: catchUp}
	tm.next = at
	tm.t = time.AfterFunc(time.Until(at), tm.fire)
	s.active[tm] = struct{}{}
	return tm, nil
}

// Stop is Timer.Stop.
func (tm *Timer) Stop() bool {
	tm.s.mu.Lock()
	defer tm.s.mu.Unlock()
	return tm.stopLocked()
}
