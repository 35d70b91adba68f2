package engine

// Bits is the engine's side of source.Bits, which wraps it and forwards
// each method (inlined): a channel's queues in one pool. The zero Bits
// belongs to no pool.
type Bits struct {
	E    *Engine
	base int // global number of the channel's queue 0
	N    int
	att  *attachment // the channel's attachment in a pool with Config.Spare (reshape.go); nil otherwise
}

// Attached is source.Bits.Attached, whose documentation is the channel author's.
func (b Bits) Attached() bool {
	return b.E != nil && !b.E.failed.Load() && (b.att == nil || b.att.state.Load() != attDetached)
}

// Len is source.Bits.Len, whose documentation is the channel author's.
func (b Bits) Len() int { return b.N }

// Slice is source.Bits.Slice, whose documentation is the channel author's.
func (b Bits) Slice(i, n int) Bits {
	if i < 0 || n < 0 || i+n > b.N {
		panic("smartpool: Bits.Slice out of range")
	}
	return Bits{E: b.E, base: b.base + i, N: n, att: b.att}
}

// Set is source.Bits.Set, whose documentation is the channel author's.
func (b Bits) Set(i int) {
	if b.E != nil && b.att.attached() { // a removed channel's queues may serve another now
		b.E.Field.Set(b.index(i))
	}
}

// Clear is source.Bits.Clear, whose documentation is the channel author's.
func (b Bits) Clear(i int) {
	if b.E != nil && b.att.attached() && b.E.Field.Clear(b.index(i)) {
		b.E.wake() // a repair republished work: see the availability-bit protocol
	}
}

// Has is source.Bits.Has, whose documentation is the channel author's.
func (b Bits) Has(i int) bool {
	return b.E != nil && b.E.Field.Has(b.index(i))
}

// Closed is source.Bits.Closed, whose documentation is the channel author's.
func (b Bits) Closed() bool {
	return b.E == nil || b.E.Stopped.Load() || b.att != nil && b.att.state.Load() != attLive
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
	return b.E != nil && (b.E.Standalone || b.E.Stopped.Load() && b.E.live.Load() > 0)
}

// Wake is source.Bits.Wake, whose documentation is the channel author's.
func (b Bits) Wake(n int) {
	if b.E != nil && n > 0 && b.att.attached() {
		b.E.wakeFrom(b.base)
	}
}

// WakesOutsideLock is source.Bits.WakesOutsideLock, whose documentation is the channel author's.
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
