package smartpool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smartpool-go/smartpool/internal/gid"
)

// Missed says what a periodic schedule does with ticks it could not fire on
// time (the process was busy or suspended).
type Missed int

const (
	// Skip fires once for the missed ticks, then keeps to the original
	// grid: the next tick is the first grid point after now (time.Ticker's
	// policy).
	Skip Missed = iota
	// CatchUp fires once per missed tick, back to back, until it is on
	// time again (smartpool's policy).
	CatchUp
)

// ErrBadSchedule is returned by Every for a non-positive interval or an
// unknown Missed policy.
var ErrBadSchedule = errors.New("smartpool: bad schedule")

// Timer is a scheduled submission made by After, At or Every. It uses a
// runtime timer, not a goroutine; each firing submits the task to its
// channel. A firing refused with ErrFull (a full bounded channel, the
// in-flight limit) is skipped and an Every timer carries on; any other
// submit error stops the timer. Close stops every timer of the pool and
// waits for a firing in progress (but for the one it is called from, by a
// task a full CallerRuns channel runs on the firing, or an OnEnd there:
// that Close returns ErrCloseFromTask). Safe for concurrent use.
type Timer struct {
	s       *schedules
	ch      int
	task    Task
	every   time.Duration // 0 for one-shot
	missed  Missed
	skipped atomic.Uint64 // firings refused with ErrFull

	// guarded by s.mu
	t       *time.Timer
	next    time.Time // the grid point the pending firing is for
	stopped bool
}

// schedules tracks a pool's timers so Close can stop them.
type schedules struct {
	e      *engine
	mu     sync.Mutex
	closed bool                // guarded by mu
	active map[*Timer]struct{} // guarded by mu
	firing sync.WaitGroup      // firings in progress
	firers gidSet              // the goroutines running them: a Close from one does not wait for itself
}

// After submits fn to the channel named key once d has elapsed. It returns
// ErrNilTask, ErrClosed or ErrUnknownKey as Submit does, checked now.
func (p *Pool[K]) After(d time.Duration, key K, fn func(ctx context.Context)) (*Timer, error) {
	return p.schedule(time.Now().Add(d), 0, Skip, key, fn)
}

// At submits fn to the channel named key at time t (at once if t is past).
func (p *Pool[K]) At(t time.Time, key K, fn func(ctx context.Context)) (*Timer, error) {
	return p.schedule(t, 0, Skip, key, fn)
}

// Every submits fn to the channel named key every interval, the first time
// one interval from now, until the Timer is stopped or the pool closes.
// missed chooses what happens to ticks that could not fire on time.
func (p *Pool[K]) Every(interval time.Duration, missed Missed, key K, fn func(ctx context.Context)) (*Timer, error) {
	if interval <= 0 || (missed != Skip && missed != CatchUp) {
		return nil, ErrBadSchedule
	}
	return p.schedule(time.Now().Add(interval), interval, missed, key, fn)
}

func (p *Pool[K]) schedule(at time.Time, every time.Duration, missed Missed, key K, fn func(ctx context.Context)) (*Timer, error) {
	if fn == nil {
		return nil, ErrNilTask
	}
	if p.e.stopped.Load() {
		return nil, ErrClosed
	}
	defer p.e.unpin(p.e.pin()) // see "Reshaping", 6 (reshape.go)
	if _, ok := p.lookup(key); !ok {
		return nil, unknownKey(key)
	}
	s := &p.e.timers
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	// Looked up under mu: a removal publishes the map without the key
	// before stopChannel takes mu, so a timer registered here is either
	// seen by stopChannel or made for the channel present now.
	ch, ok := p.lookup(key)
	if !ok {
		return nil, unknownKey(key)
	}
	tm := &Timer{s: s, ch: ch, task: Func(fn), every: every, missed: missed}
	tm.next = at
	tm.t = time.AfterFunc(time.Until(at), tm.fire)
	s.active[tm] = struct{}{}
	return tm, nil
}

// Stop cancels the Timer's future firings. It reports whether it stopped an
// active timer (false if it had already fired its last, was stopped, or the
// pool closed). A firing already in progress completes.
func (tm *Timer) Stop() bool {
	s := tm.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return tm.stopLocked()
}

// Skipped returns the number of firings refused with ErrFull (a full
// bounded channel, the pool's in-flight limit) and so skipped.
func (tm *Timer) Skipped() uint64 { return tm.skipped.Load() }

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
	k := s.e.pin()
	s.mu.Lock()
	if tm.stopped || s.closed {
		s.mu.Unlock()
		s.e.unpin(k)
		return
	}
	s.firing.Add(1)
	s.mu.Unlock()
	defer s.firing.Done()
	id := gid.Current()
	s.firers.add(id)
	defer s.firers.remove(id)

	err := func() error {
		defer s.e.unpin(k) // deferred: Push may run the task here, and it may Goexit
		return s.e.submit(tm.ch, tm.task, Order{}, nil)
	}()
	if errors.Is(err, ErrFull) {
		tm.skipped.Add(1)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if tm.stopped {
		return
	}
	if err != nil && !errors.Is(err, ErrFull) || tm.every == 0 {
		tm.stopLocked()
		return
	}
	now := time.Now()
	tm.next = tm.next.Add(tm.every)
	if tm.missed == Skip && !tm.next.After(now) {
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

// close stops every timer and waits for firings in progress, but its own:
// called from a firing (a task a full CallerRuns channel runs on the
// timer's goroutine, an OnEnd of a task it displaced, both held by the
// channel: see "Endings off the pool's goroutines", engine.go), it would
// wait for itself. Only startClose calls it, once, so the count it takes
// out for the wait is put back before that firing's deferred Done.
func (s *schedules) close() {
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
