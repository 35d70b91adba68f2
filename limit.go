package smartpool

// # Concurrency caps
//
// A channel configured with ChannelParams.MaxRunning > 0 runs at most that
// many of its tasks at once. A worker reserves a slot before it polls the
// channel (reserve: compare-and-swap running from n to n+1 only while
// n < max), so the cap is never exceeded, and gives it back when the task's
// run ends: it returns, panics, calls runtime.Goexit, or yields (a resumed
// task reserves again on the channel it re-entered through).
//
// So that a capped channel costs the picker nothing, a channel at its cap
// has its queues blocked in the availability bitfield: they stop counting
// as work. Blocking is a hint; reserve is the guard. The hint never sticks
// wrongly: the reserver that fills the cap blocks the queues and then
// re-reads running, unblocking them if a slot freed meanwhile; a releaser
// decrements running and then unblocks any blocked queue. Sequential
// consistency makes one of the two see the other. Channels without a cap
// never touch these counters.

import "errors"

// ErrNotCapped is returned by SetMaxRunning for a channel that was not
// given a MaxRunning at New: uncapped channels keep no running count, so
// that they pay nothing for the feature.
var ErrNotCapped = errors.New("smartpool: channel has no MaxRunning cap")

// reserve takes a running slot of channel ch, or blocks its queues and
// reports false when the channel is at its cap.
func (e *engine) reserve(ch int) bool {
	c := &e.chans[ch]
	for {
		n, limit := c.running.Load(), c.maxRunning.Load()
		if n >= limit {
			e.block(ch)
			return false
		}
		if c.running.CompareAndSwap(n, n+1) {
			if n+1 == limit {
				e.block(ch)
			}
			return true
		}
	}
}

// release gives back a slot taken by reserve.
func (e *engine) release(ch int) {
	c := &e.chans[ch]
	if c.running.Add(-1) < c.maxRunning.Load() {
		e.unblock(ch)
	}
}

func (e *engine) block(ch int) {
	c := &e.chans[ch]
	for q := c.first; q < c.first+c.queues; q++ {
		if e.field.Block(q) {
			e.wake()
		}
	}
	if c.running.Load() < c.maxRunning.Load() {
		e.unblock(ch) // a slot freed while we blocked
	}
}

func (e *engine) unblock(ch int) {
	c := &e.chans[ch]
	for q := c.first; q < c.first+c.queues; q++ {
		if e.field.Blocked(q) && e.field.Unblock(q) {
			e.wake()
		}
	}
}

// SetMaxRunning changes the cap of the channel named key at run time: at
// most n of its tasks run at once from now on (tasks already running are
// not interrupted, so a lowered cap takes effect as they finish). n must be
// at least 1. It returns ErrUnknownKey, ErrNotCapped for a channel created
// without a cap, or ErrBadLimit for n < 1.
func (p *Pool[K]) SetMaxRunning(key K, n int) error {
	i, ok := p.index[key]
	switch {
	case !ok:
		return ErrUnknownKey
	case !p.e.chans[i].capped:
		return ErrNotCapped
	case n < 1:
		return ErrBadLimit
	}
	c := &p.e.chans[i]
	c.maxRunning.Store(int64(n))
	if c.running.Load() < int64(n) {
		p.e.unblock(i)
	} else {
		p.e.block(i)
	}
	return nil
}

// ErrBadLimit is returned for a limit below 1.
var ErrBadLimit = errors.New("smartpool: limit must be at least 1")
