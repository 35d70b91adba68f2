package smartpool

import (
	"context"
	"time"

	"github.com/smartpool-go/smartpool/internal/engine"
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
	if p.e.Stopping() {
		return nil, ErrClosed
	}
	defer p.e.Unpin(p.e.Pin()) // see "Reshaping", 6 (internal/engine/reshape.go)
	if _, ok := p.lookup(key); !ok {
		return nil, engine.UnknownKey(key)
	}
	lookup := func() (int, bool) { return p.lookup(key) }
	tm, err := p.e.Timers.Add(at, every, missed == CatchUp, Func(fn), lookup)
	if err != nil {
		if err == engine.ErrGone {
			return nil, engine.UnknownKey(key)
		}
		return nil, err
	}
	return &Timer{t: tm}, nil
}

// Timer is a scheduled submission made by After, At or Every. It uses a
// runtime timer, not a goroutine; each firing submits the task to its
// channel. A firing refused with ErrFull (a full bounded channel, the
// in-flight limit) is skipped and an Every timer carries on; any other
// submit error stops the timer. Close stops every timer of the pool and
// waits for a firing in progress. Safe for concurrent use.
type Timer struct{ t *engine.Timer }

// Stop cancels the Timer's future firings. It reports whether it stopped an
// active timer (false if it had already fired its last, was stopped, or the
// pool closed). A firing already in progress completes.
func (tm *Timer) Stop() bool { return tm.t.Stop() }

// Skipped returns the number of firings refused with ErrFull (a full
// bounded channel, the pool's in-flight limit) and so skipped.
func (tm *Timer) Skipped() uint64 { return tm.t.Skipped.Load() }
