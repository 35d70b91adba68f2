package engine

import "github.com/smartpool-go/smartpool/task"

// # Units of channels the pool cannot trust with the limit
//
// The in-flight limit (Config.Limit, admit.go) relies on every task holding
// one unit from the moment it is queued: the pool takes it for its own
// submits, and a channel's own submit methods take it with Bits.Admit. A
// channel that forgets Admit queues tasks that hold none, and their ends
// would release units others hold: Admitted would go negative and the pool
// would admit past its limit. So the pool keeps the limit itself for every
// channel that has not declared, at Attach, that its own submits admit
// (Bits.AdmitsOwnSubmits; the channels package's channels all do). For such
// an accounted channel it counts credit: units that entered with its queued
// tasks (added before the task can be polled, so that a poll never misses
// it). A task leaving the queue takes one credit back: polled, it runs on
// that unit; if there is none, the task came without one and the worker
// charges a unit for it (even over the limit: it is queued already), which
// it releases when it ends like any other. A task dropped from the queue
// releases a unit only if it took a credit.
//
// So Admitted never goes negative and every release matches an admission or
// a charge. Credits are not tied to tasks: while a channel holds both tasks
// that came with a unit and tasks that did not, one may run on another's
// unit, and the limit may be exceeded by at most the number of tasks queued
// without a unit, until those are polled. Declared channels pay nothing for
// this, and pools without a limit account nothing.

// AdmitsOwnSubmits is source.Bits.AdmitsOwnSubmits, whose documentation is the channel author's.
func (b Bits) AdmitsOwnSubmits() {
	if b.e == nil {
		return
	}
	if b.att.declaring() { // AddChannel's Attach
		b.att.admits.Store(true)
		return
	}
	if !b.e.attaching() {
		return
	}
	for i := range b.n {
		b.e.admitDeclared[b.base+i] = true
	}
}

// attaching reports whether New is attaching the channels: declarations
// (AdmitsOwnSubmits, WakesOutsideLock) count only then.
func (e *Engine) attaching() bool { return e.admitDeclared != nil }

// SetAccounting decides, once every channel attached and the limit is set,
// which channels the pool accounts: those with a queue not declared by
// AdmitsOwnSubmits. New calls it before any worker starts.
func (e *Engine) SetAccounting(preQueued []int) {
	for i := range e.Chans {
		c := &e.Chans[i]
		if c.c == nil {
			continue // spare room (reshape.go)
		}
		declared := true
		for q := c.first; q < c.first+c.queues; q++ {
			declared = declared && e.admitDeclared[q]
		}
		c.accounted.Store(e.admit.on && !declared)
		if c.accounted.Load() {
			c.credit.Store(int64(preQueued[i])) // queued before Attach: New admitted them
		}
	}
	e.admitDeclared = nil // Attach is over: later declarations change nothing
}

// channelOf returns the channel index b covers, or -1 for Bits of no queue
// or of a standalone engine (standalone.go), which lists no channels.
func (e *Engine) channelOf(b Bits) int {
	if b.n == 0 || b.base >= len(e.queues) {
		return -1
	}
	return e.queues[b.base].ch
}

// credited records that k units entered channel ch with tasks about to be
// queued, if the pool accounts ch.
func (e *Engine) credited(ch, k int) {
	if ch >= 0 && e.Chans[ch].accounted.Load() {
		e.Chans[ch].credit.Add(int64(k))
	}
}

// takeCredit takes back one credit of channel ch for a task that leaves its
// queue, and reports whether there was one.
func (e *Engine) takeCredit(ch int) bool {
	c := &e.Chans[ch].credit
	for {
		n := c.Load()
		if n <= 0 {
			return false
		}
		if c.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// charge is called by a worker for a task it took from an accounted channel
// (not a re-entry): it reports whether the task came without a unit, in
// which case it now holds one.
func (e *Engine) charge(ch int) bool {
	if e.takeCredit(ch) {
		return false
	}
	e.admit.held.Add(1)
	return true
}

// queuedUnitsDone releases the units of k tasks of channel ch that leave its
// queue without running (dropped, or refused after admission): for an
// accounted channel, only those that took a credit.
func (e *Engine) queuedUnitsDone(ch, k int) {
	if ch < 0 || !e.Chans[ch].accounted.Load() {
		e.unitsDone(k)
		return
	}
	n := 0
	for range k {
		if e.takeCredit(ch) {
			n++
		}
	}
	e.unitsDone(n)
}

// channel returns the index of the channel b serves in a running pool, or
// ErrClosed: the pool closing, the channel removed, or b of no channel
// (Submit says which, with Refusal).
func (b Bits) channel() (int, error) {
	if b.Closed() {
		return 0, task.ErrClosed
	}
	if ch := b.e.channelOf(b); ch >= 0 {
		return ch, nil
	}
	return 0, task.ErrClosed
}
