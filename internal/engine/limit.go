package engine

import (
	"fmt"

	"github.com/smartpool-go/smartpool/task"
)

// # Concurrency caps
//
// A channel configured with ChannelParams.MaxRunning > 0 runs at most that
// many of its tasks at once; one configured with MaxInFlight > 0 has at most
// that many of its tasks in progress (running or yielded). A worker reserves
// a slot before it polls the channel (reserve: compare-and-swap running from
// n to n+1 only while n < max), so the cap is never exceeded. The slot goes
// back when the task's run ends (MaxRunning: it returns, panics, calls
// runtime.Goexit or yields; a resumed task reserves again on the channel it
// re-entered through) or when the task ends (MaxInFlight: yields keep it).
// A MaxInFlight channel may not be a followup target, so its queue never
// holds re-entering tasks that its own full cap would keep out.
//
// So that a capped channel costs the picker nothing, a channel at its cap
// has its queues blocked in the availability bitfield: they stop counting
// as work. Blocking is a hint; reserve is the guard. The hint never sticks
// wrongly: the reserver that fills the cap blocks the queues and then
// re-reads running, unblocking them if a slot freed meanwhile; a releaser
// decrements running and then unblocks any blocked queue. Sequential
// consistency makes one of the two see the other. Channels without a cap
// never touch these counters.

// reserve takes a running slot of channel ch, or blocks its queues and
// reports false when the channel is at its cap.
func (e *Engine) reserve(ch int) bool {
	c := &e.Chans[ch]
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

// Release gives back a slot taken by reserve.
func (e *Engine) Release(ch int) {
	c := &e.Chans[ch]
	if c.running.Add(-1) < c.maxRunning.Load() {
		e.unblock(ch)
	}
}

func (e *Engine) block(ch int) {
	c := &e.Chans[ch]
	for q := c.first; q < c.first+c.queues; q++ {
		if e.Field.Block(q) {
			e.wake()
		}
	}
	if c.running.Load() < c.maxRunning.Load() {
		e.unblock(ch) // a slot freed while we blocked
	}
}

func (e *Engine) unblock(ch int) {
	c := &e.Chans[ch]
	for q := c.first; q < c.first+c.queues; q++ {
		if e.Field.Blocked(q) && e.Field.Unblock(q) {
			e.wake()
		}
	}
}

// endSegment gives back the MaxRunning slot of a task taken from channel ch
// whose run ends or yields.
func (e *Engine) endSegment(ch int) {
	if c := &e.Chans[ch]; c.Capped && !c.holdsYield {
		e.Release(ch)
	}
}

// endTask gives back the MaxInFlight slot of a task of channel ch that ended.
func (e *Engine) endTask(ch int) {
	if c := &e.Chans[ch]; c.Capped && c.holdsYield {
		e.Release(ch)
	}
}

// SetCap is Pool.SetCap for channel i, named key, present.
func (e *Engine) SetCap(i int, key any, n int) error {
	switch {
	case !e.Chans[i].Capped:
		return ConfigErr(ErrNotConfigured, "SetCap(%v, %d): channel %v has no cap: set MaxRunning or MaxInFlight at New", key, n, key)
	case n < 0:
		return ConfigErr(task.ErrBadLimit, "SetCap(%v, %d): a cap must be at least 0", key, n)
	}
	c := &e.Chans[i].pause
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.stopped.Load() { // under mu: see setPaused (pause.go)
		return poolClosed(fmt.Sprintf("SetCap(%v, %d)", key, n))
	}
	c.cap.Store(int64(n))
	e.gate(i)
	return nil
}
