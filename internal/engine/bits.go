package engine

// Bits is a channel's handle on the availability bits of its queues. The zero
// Bits belongs to no pool: Closed reports true, so a channel refuses tasks
// until New attaches it, and Set, Clear and Wake do nothing. Bits is a small
// value; copy it freely.
type Bits struct {
	E    *Engine
	base int // global number of the channel's queue 0
	N    int
	att  *attachment // the channel's attachment in a pool with Config.Spare (reshape.go); nil otherwise
}

// Attached reports whether b binds its channel to a pool: false for the zero
// Bits and for the Bits of a New that failed (the channel may then be
// attached again).
func (b Bits) Attached() bool {
	return b.E != nil && !b.E.failed.Load() && (b.att == nil || b.att.state.Load() != attDetached)
}

// Len returns the number of queues b covers.
func (b Bits) Len() int { return b.N }

// Slice returns the Bits of queues [i, i+n) of b, for composite channels that
// hand parts of their queues to inner channels.
func (b Bits) Slice(i, n int) Bits {
	if i < 0 || n < 0 || i+n > b.N {
		panic("smartpool: Bits.Slice out of range")
	}
	return Bits{E: b.E, base: b.base + i, N: n, att: b.att}
}

// Set marks queue i as holding work. Call it with the channel's lock held.
func (b Bits) Set(i int) {
	if b.E != nil && b.att.attached() { // a removed channel's queues may serve another now
		b.E.Field.Set(b.index(i))
	}
}

// Clear marks queue i as empty. Call it with the channel's lock held.
func (b Bits) Clear(i int) {
	if b.E != nil && b.att.attached() && b.E.Field.Clear(b.index(i)) {
		b.E.wake() // a repair republished work: see the availability-bit protocol
	}
}

// Has reports whether queue i's bit is set, for channels that keep the bit
// rule without one lock over both submits and polls (see channels.FIFO).
func (b Bits) Has(i int) bool {
	return b.E != nil && b.E.Field.Has(b.index(i))
}

// Closed reports whether no running pool serves the channel: it was never
// attached, its New failed, or the pool's Close started. Channels check it
// under their lock on every submit and refuse with ErrClosed while it
// reports true; it is one atomic load.
//
// In a pool with Config.Spare, it reports true too once RemoveChannel
// started removing the channel, and before AddChannel finished adding it.
func (b Bits) Closed() bool {
	return b.E == nil || b.E.Stopped.Load() || b.att != nil && b.att.state.Load() != attLive
}

// Closing reports whether the channel's Close may act: the pool it is
// attached to is closing (its Close started and has not finished). A
// channel's Close does nothing while Closing reports false, so a user's call
// cannot remove tasks that a running pool would run, nor close a channel
// that no pool holds, or that a failed New left free for another.
//
// A channel being removed (Pool.RemoveChannel) is closing too, until its
// removal ends; a removed channel never again.
func (b Bits) Closing() bool {
	if b.att != nil {
		switch b.att.state.Load() {
		case attRemoving:
			return true
		case attDetached:
			return false
		}
	}
	// live counts the closer's share from start until the close ends.
	return b.E != nil && (b.E.Standalone || b.E.Stopped.Load() && b.E.live.Load() > 0)
}

// Wake tells the pool that n tasks were added, so that idle workers start.
// Call it after releasing the channel's lock. It costs one atomic load when
// no worker is idle.
func (b Bits) Wake(n int) {
	if b.E != nil && n > 0 && b.att.attached() {
		b.E.wakeFrom(b.base)
	}
}

// WakesOutsideLock declares, from the channel's Attach, that the channel
// calls Wake only after releasing every lock its Poll takes. Wake then hands
// the idle worker it wakes its first task: it polls, on the calling
// goroutine, the task the scheduler would choose (from this channel or
// another), so that on an idle pool a submitted task has started by the time
// its submit returns (a bounded channel has room again, and Close does not
// drop it). Without the declaration Wake only wakes the worker, which is
// safe for a channel that calls Wake under its lock (the search would call
// its Poll). The channels package's channels all declare it. Calls after
// New returned have no effect.
func (b Bits) WakesOutsideLock() {
	if b.E == nil {
		return
	}
	if b.att.declaring() { // AddChannel's Attach
		b.att.wakesOutside.Store(true)
		return
	}
	if !b.E.attaching() {
		return
	}
	for i := range b.N {
		b.E.Queues[b.base+i].wakeHands = true
	}
}

func (b Bits) index(i int) int {
	if uint(i) >= uint(b.N) {
		panic("smartpool: queue index out of range")
	}
	return b.base + i
}
