package engine

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/smartpool-go/smartpool/task"
)

// # Pausing a channel
//
// A paused channel is a channel at a cap of 0: its queues are blocked in the
// availability bitfield (limit.go), so that no worker's search, batch poll
// or wake-up hand-over (park.go, handOver) chooses them, and a capped
// channel's reserve finds no slot (maxRunning reads 0). Submits go on: the
// queue grows, its bit is set, and the blocked bit keeps it out of the
// summary, so that idle workers stay asleep. Resume unblocks the queues and
// wakes a worker for them, as a released cap slot does.
//
// Nothing is added to the path of a task: the search already skips blocked
// queues, and only Pause, Resume, SetCap and Close write the blocked bits of
// an uncapped channel (under the channel's pause lock), so the block is not
// a hint there but the guard. A yielded task re-entering through a paused
// followup channel checks the flag off that path: it takes no idle worker
// for itself but queues (yield.go, takeIdle). A child that a Group's task
// runs inline at the group's limit (help.go) is no task taken from the
// queue but part of its parent, which would otherwise wait for a room that
// only it can free: a pause does not stop it, while a capped channel's cap
// in force (0 when paused) does, as any cap without a free slot.
//
// Tasks that left the queue before Pause still run: one a worker holds or
// was handed, the rest of a batch in a worker's run buffer (buffer.go; at
// most batchMax-1 per worker), and the one a worker is polling as Pause
// blocks the bits (it chose the queue before). Pause does not wait for
// them. A channel that runs tasks on their submitter (Bits.RunHere) still
// does: that is not a worker taking a task.
//
// Close resumes every paused channel, and raises a cap SetCap set to 0 back
// to the cap of New, after it stopped admission and before the workers look
// for the drain (engine.startClose): so a complete-on-close channel's
// queued tasks run and Close never waits for a paused channel, and a
// dropping channel's are dropped and reported as those of any other.
// Pause and Resume refuse once Close started, so the resume sticks.

// chanPause is a channel's paused state and the cap set for it.
type chanPause struct {
	mu     sync.Mutex   // serialises Pause, Resume, SetCap and Close's resumeAll on the channel
	paused atomic.Bool  // written under mu; read by Stats, takeIdle and inlineSlot
	cap    atomic.Int64 // capped channels: the cap of New or of the last SetCap; written under mu, read by Stats
	newCap int64        // capped channels: the cap of New, which Close restores if SetCap set 0; read-only after New
}

// setCap records the cap of New.
func (p *chanPause) setCap(n int64) {
	p.cap.Store(n)
	p.newCap = n
}

// paused reports whether channel ch is paused; off the path of a task.
func (e *Engine) paused(ch int) bool { return e.Chans[ch].pause.paused.Load() }

// gate makes channel ch's queues eligible or not from its paused state and
// cap, with ch's pause lock held. A capped channel gets its cap in force
// (0 while paused) and is blocked or unblocked as a cap change would
// (reserve is its guard); an uncapped one is blocked while paused and
// unblocked otherwise, which wakes a worker if it has tasks.
func (e *Engine) gate(ch int) {
	c := &e.Chans[ch]
	open := !c.pause.paused.Load()
	if !c.Capped {
		if open {
			e.unblock(ch)
		} else {
			e.block(ch)
		}
		return
	}
	limit := c.pause.cap.Load()
	if !open {
		limit = 0
	}
	c.maxRunning.Store(limit)
	if c.running.Load() < limit {
		e.unblock(ch)
	} else {
		e.block(ch)
	}
}

// resumeAll resumes every paused channel and raises every cap SetCap set to
// 0 back to the cap of New, for Close, after it stopped admission: from then
// on Pause, Resume and SetCap refuse, so nothing pauses a channel again. It
// holds the reshape lock (if any), under which AddChannel writes a slot's
// tables (fillSlot: capped, the caps) after it found admission open: so
// every slot filled before reads whole, and none is filled after.
func (e *Engine) resumeAll() {
	defer e.reshape.lock()()
	for i := range e.Chans {
		e.resumeChannel(i)
	}
}

// resumeChannel resumes channel i if it is paused, and raises a cap SetCap
// set to 0 back to the cap of New: for Close, and for a removal, which
// drains or drops the channel as Close does (reshape.go).
func (e *Engine) resumeChannel(i int) {
	c := &e.Chans[i]
	c.pause.mu.Lock()
	defer c.pause.mu.Unlock()
	zero := c.Capped && c.pause.cap.Load() == 0
	if c.pause.paused.Load() || zero || c.rate.Load() != nil { // a rate no longer holds its tasks back (rate.go)
		c.pause.paused.Store(false)
		if zero {
			c.pause.cap.Store(c.pause.newCap)
		}
		e.gate(i)
	}
}

// SetPaused is Pool.Pause and Pool.Resume (call) for channel i, named
// key, present.
func (e *Engine) SetPaused(i int, key any, paused bool, call string) error {
	c := &e.Chans[i].pause
	c.mu.Lock()
	defer c.mu.Unlock()
	// Read under mu: Close's resumeAll takes mu after it stopped admission,
	// so a Pause that finds stopped false is resumed by it.
	if e.stopped.Load() {
		return poolClosed(fmt.Sprintf("%s(%v)", call, key))
	}
	if e.Chans[i].removal.Load() != 0 { // stored before the removal's resumeChannel takes mu
		return fmt.Errorf("smartpool: %s(%v): the channel is being removed: %w", call, key, task.ErrClosed)
	}
	c.paused.Store(paused)
	e.gate(i)
	return nil
}
