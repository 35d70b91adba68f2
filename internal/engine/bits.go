package engine

import "github.com/smartpool-go/smartpool/task"

// Bits is the engine's side of source.Bits, which wraps it and forwards
// each method (inlined): a channel's queues in one pool. The zero Bits
// belongs to no pool.
type Bits struct {
	e    *Engine
	base int // global number of the channel's queue 0
	n    int
	att  *attachment // the channel's attachment in a pool with Config.Spare (reshape.go); nil otherwise
}

// Attached is source.Bits.Attached, whose documentation is the channel author's.
func (b Bits) Attached() bool {
	return b.e != nil && !b.e.failed.Load() && (b.att == nil || b.att.state.Load() != attDetached)
}

// Refusal is source.Bits.Refusal, whose documentation is the channel author's.
func (b Bits) Refusal() error {
	if b.e == nil || b.e.failed.Load() || b.att != nil && b.att.state.Load() == attPending {
		return task.ErrNotServed
	}
	return task.ErrClosed
}

// Len is source.Bits.Len, whose documentation is the channel author's.
func (b Bits) Len() int { return b.n }

// Slice is source.Bits.Slice, whose documentation is the channel author's.
func (b Bits) Slice(i, n int) Bits {
	if i < 0 || n < 0 || i+n > b.n {
		panic("smartpool: Bits.Slice out of range")
	}
	return Bits{e: b.e, base: b.base + i, n: n, att: b.att}
}

// Set is source.Bits.Set, whose documentation is the channel author's.
func (b Bits) Set(i int) {
	if b.e != nil && b.att.attached() { // a removed channel's queues may serve another now
		b.e.Field.Set(b.index(i))
	}
}

// Clear is source.Bits.Clear, whose documentation is the channel author's.
func (b Bits) Clear(i int) {
	if b.e != nil && b.att.attached() && b.e.Field.Clear(b.index(i)) {
		b.e.wake() // a repair republished work: see the availability-bit protocol
	}
}

// Has is source.Bits.Has, whose documentation is the channel author's.
func (b Bits) Has(i int) bool {
	return b.e != nil && b.e.Field.Has(b.index(i))
}

// Closed is source.Bits.Closed, whose documentation is the channel author's.
func (b Bits) Closed() bool {
	return b.e == nil || b.e.stopped.Load() || b.att != nil && b.att.state.Load() != attLive
}

// Closing is source.Bits.Closing, whose documentation is the channel author's.
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
	return b.e != nil && (b.e.standalone || b.e.stopped.Load() && b.e.live.Load() > 0)
}

// Wake is source.Bits.Wake, whose documentation is the channel author's.
func (b Bits) Wake(n int) {
	if b.e != nil && n > 0 && b.att.attached() {
		b.e.wakeFrom(b.base)
	}
}

// WakesOutsideLock is source.Bits.WakesOutsideLock, whose documentation is the channel author's.
func (b Bits) WakesOutsideLock() {
	if b.e == nil {
		return
	}
	if b.att.declaring() { // AddChannel's Attach
		b.att.wakesOutside.Store(true)
		return
	}
	if !b.e.attaching() {
		return
	}
	for i := range b.n {
		b.e.queues[b.base+i].wakeHands = true
	}
}

func (b Bits) index(i int) int {
	if uint(i) >= uint(b.n) {
		panic("smartpool: queue index out of range")
	}
	return b.base + i
}
