package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smartpool-go/smartpool/task"
)

// # Reshaping: channels added and removed at run time
//
// A pool built with Config.Spare reserves room: Spare[l] queues at the end
// of level l's range of the availability bitfield, and one slot of the
// channel tables (chans, followup, keys, timing, the workers' stats) per
// spare queue. Everything workers read is sized at New, so AddChannel only
// writes into free room and slots, and workers read them without a lock.
//
// Adding (Pool.AddChannel), under reshaper.mu: claim n contiguous free
// queues of the level and a free slot, write the slot's chanInfo, queueRefs,
// followup and key, then call the channel's Attach (outside the lock: it is
// the user's code) with Bits whose attachment is pending, so the channel
// refuses submits (Bits.Closed); then, under the lock again, mark the slot
// live, publish a copy of the key map with the new key, and open the
// attachment. Workers reach the new queueRefs only through a bit the
// channel sets, which it does only once open: the atomics order the writes
// before their reads.
//
// Removing (Pool.RemoveChannel):
//
//  1. Under the lock: the slot turns removing, chanInfo.removal takes the
//     policy and the attachment turns removing, so Bits.Closed reports true
//     (submits, by key or through the channel, return ErrClosed) and
//     Bits.Closing too. Requeue still takes the channel's own yielded tasks.
//  2. The channel's Close(drop) (Drop: true), which waits out any submit in
//     progress under its lock; Drop reports what it returns as dropped,
//     exactly as the pool's Close does (dropQueued).
//  3. Wait until the channel's Len reads 0 and then held reads 0. held
//     (chanInfo.held) counts the tasks taken from the channel and not yet
//     ended: a worker adds one before it polls (and the rest of a batch
//     after it), and whoever ends the task (worker.run, taskContext.end,
//     endDropped, the worker's drop of a task it took) subtracts it after
//     OnEnd. A resumption of the channel's own yielded task counts in held
//     from the first take to the end, not again when it is polled. A task
//     that ends outside the queue and the workers is held too (hold.go): one
//     the channel took out under its lock to Discard after (a displaced
//     oldest task), or ran on its submitter (Bits.RunInTask, Bits.RunHere),
//     from a Bits.Hold under the lock in which its submit saw Closed report
//     false (so before step 2's Close takes that lock) to the Bits.Unhold
//     after it ended; one the pool runs inline for a by-key or group submit
//     (help.go) from holdUnlessRemoving, which adds to held and then loads removal,
//     and refuses with ErrClosed once step 1 stored it. So a task of the
//     channel is in its queue or counted in held at every instant, and
//     nothing enters the queue after step 2 but the channel's own yielded
//     tasks, held already: Len 0 and then held 0 mean every task of the
//     channel ended and was counted. Draining, workers run the queue as
//     usual (its bits stay set); dropping, a worker that takes a task of the
//     channel that has not started (polled before Close emptied the queue,
//     buffered, handed over) drops it, and a yielded task whose followup is
//     the channel itself is refused when it re-enters (the channel's Requeue
//     refuses after Close(true), and takeIdle does not run it): it ends as
//     dropped, as at Close. A yielded task whose followup is another channel
//     re-enters and runs there.
//  4. Under the lock: the final stats, the attachment detached (Bits.Set,
//     Clear and Wake do nothing, Attached reports false), the key removed
//     from a new copy of the map, the room's bits cleared, and the room and
//     slot freed in quarantine under a new grace generation G.
//  5. The grace: a worker may have read a queueRef or chanInfo of the room
//     before step 4 and still be using it, so the room is reused only once
//     every worker started a new turn after G was published (worker.gen,
//     copied at the top of each turn: two loads per turn in a reshaping
//     pool, one branch in others), took a task (worker.quiet: the rest of
//     its turn reads only that task's channel, which held keeps, so a long
//     task of another channel holds no removal back), is idle, or has no
//     goroutine, and no search on an idle worker's behalf (handOver,
//     counted in handing) is in progress. RemoveChannel waits for it too,
//     within its ctx, so that the room is free when it returns.
//  6. The by-key callers' grace, for the slot: a by-key call (Submit,
//     SubmitTask, Group.Go and TryGo, Handoff, SetCap, Pause, Resume, a
//     timer's creation and each firing, and Bits.Submit, which checks
//     Closed) turns a key into a channel index with one load of the key map
//     and then reads e.chans[i] and pushes into its channel; a caller that
//     loaded the map before step 4 may use the slot long after. So each
//     pins first (engine.pin: k = epoch&1, pins[k]++, all seq-cst) and
//     unpins after its last use of the slot (after the push returned). The
//     slot freed in step 4 records keyed = epoch+1, and is reused only once
//     drained reaches it (keysGraced, under mu, which serialises the
//     flips): the epoch is flipped once (callers from then on pin the other
//     counter, so the wait cannot starve) and the old counter read 0. A
//     caller that loaded the old map pinned the old counter before, so it
//     is counted; one whose pin comes after the flip loads the new map
//     (no key) or sees the attachment detached (Bits.Submit). It costs a
//     pool without Config.Spare one branch on e.reshape == nil. The
//     channel's timers are stopped in step 4 after the map is published
//     (a timer created from then on looks the key up again under the
//     timers' lock, and a firing pins before it reads stopped), so no
//     timer fires into a reused slot. A caller that waits for a unit of the
//     limit or for room in its group unpins for the wait and pins and looks
//     its key up again after it (keyPin), as a new call would, so that it
//     holds back no removal. One that waits for room in a full Bounded, or
//     runs a task inline (help.go), trades its pin for a count in that
//     channel's held, taken while pinned and refused once a removal of the
//     channel started (holdUnlessRemoving): step 3 of that channel's removal
//     waits for it (its Close in step 2 ends a wait for room), and no other
//     removal does. RemoveChannel waits for this grace too, within its ctx,
//     except when called from a task of the pool, which may run inside a
//     pinned call of its own goroutine (a full Bounded's CallerRuns run of
//     a submit with options) and would wait for itself: then AddChannel
//     finds the slot free once the callers ended.
//     RemoveChannel refuses to remove a channel whose task the calling
//     goroutine runs inline (taskContext.inline), which step 3 would wait
//     for.
//
// A channel another present channel names as its followup cannot be
// removed (its yielded tasks must be able to re-enter); remove that one
// first.
//
// Ownership: reshaper.mu guards the slots, the room and the removed
// totals, the writes AddChannel makes to a slot's tables, the publication
// of the key map, and the epoch's flips and drained; Stats and the stall
// watchdog hold it while they read the tables; startClose holds it to list
// the channels present. It is never held while user code runs, except a
// channel's Len under Stats. Who may touch a slot's tables without it:
// workers, between the publication of its bits and the worker grace (5),
// and by-key callers between their pin and unpin, which hold the slot
// against reuse (6); AddChannel writes a slot only once both graces
// passed.

// chanInfo.removal values.
const (
	removeDraining int32 = 1
	removeDropping int32 = 2
)

var (
	errLevelFull = errors.New("no room left in the level")
	ErrRemove    = errors.New("the channel cannot be removed")
)

// Attachment states (attachment.state). The zero value is live: the
// channels New attaches start so.
const (
	attLive     int32 = iota
	attPending        // AddChannel is attaching it: refuses submits
	attRemoving       // RemoveChannel runs: refuses submits, closing
	attDetached       // removed: its Bits act on nothing
)

// attachment is one channel's binding to a reshaping pool, which its Bits
// point at: what Closed, Closing and Attached read besides the pool's own
// state. state is written under reshaper.mu and read by anyone; the
// declarations are written by the channel's Attach during AddChannel and
// read by AddChannel after it.
type attachment struct {
	state        atomic.Int32
	decl         atomic.Bool // AddChannel's Attach is running
	wakesOutside atomic.Bool // declared Bits.WakesOutsideLock
	admits       atomic.Bool // declared Bits.AdmitsOwnSubmits
}

// attached reports whether a's channel may touch its queues' bits: always
// outside a reshaping pool (nil).
func (a *attachment) attached() bool { return a == nil || a.state.Load() != attDetached }

func (a *attachment) declaring() bool { return a != nil && a.decl.Load() }

// Slot states (slot.state).
const (
	slotFree int8 = iota
	slotPending
	slotLive
	slotRemoving
)

// reshaper is the run-time shape of a pool with Config.Spare.
type reshaper struct {
	gen     atomic.Uint64 // the grace generation: bumped by each removal's detach
	handing atomic.Int32  // searches on an idle worker's behalf in progress (handOver)
	passed  atomic.Uint64 // the highest grace settled() has seen pass: a passed grace stays passed

	// The by-key callers' grace (see "Reshaping", 6). epoch's parity picks
	// the counter a caller pins; drained (under mu) is the epoch below which
	// every pin ended. epoch is flipped under mu, at most one ahead of
	// drained, so the two counters never mix three epochs.
	epoch atomic.Uint64
	_     pad
	pins  [2]struct {
		n atomic.Int64
		_ [56]byte
	}
	drained uint64

	afterLookup func() // tests: called by a by-key submit between its lookup and its push

	mu         sync.Mutex // guards what follows: see "Ownership"
	levelFirst []int      // per level: first global queue
	levelN     []int      // per level: queues, spare room included
	owner      []int      // per global queue: its channel index, -1 if free
	quar       []uint64   // per free global queue: reusable once this grace passed
	slots      []slot     // per channel index
	free       []int      // free slots, the longest free first
	removed    counts     // the final counts of every removed channel (Stats.Removed)
}

type slot struct {
	state int8
	att   *attachment
	quar  uint64   // when free: reusable once this grace passed
	keyed uint64   // when free: reusable once drained reaches it (by-key callers' grace)
	base  counts   // the slot's cumulative counts when its channel was added (Stats subtracts them)
	rm    *removal // the removal in progress or done, when removing
}

// removal is one channel's removal, shared by concurrent RemoveChannel calls.
type removal struct {
	policy int32
	done   chan struct{} // closed when detached; stats set before
	stats  ChanCensus    // the channel's final counts
}

// counts are a slot's cumulative end counters.
type counts struct {
	ran, panicked, goexited, cancelled uint64
	dropped                            [NumDropCauses]uint64
}

func newReshaper(perLevel, levelFirst []int, slots, listed int) *reshaper {
	total := 0
	for _, n := range perLevel {
		total += n
	}
	rs := &reshaper{levelFirst: levelFirst, levelN: perLevel, owner: make([]int, total), quar: make([]uint64, total),
		slots: make([]slot, slots)}
	for q := range rs.owner {
		rs.owner[q] = -1
	}
	for i := range rs.slots {
		if i < listed {
			rs.slots[i] = slot{state: slotLive, att: new(attachment)}
		} else {
			rs.free = append(rs.free, i)
		}
	}
	return rs
}

// own marks the listed channels' queues (New).
func (rs *reshaper) own(first, n, ch int) {
	for q := first; q < first+n; q++ {
		rs.owner[q] = ch
	}
}

// present returns which of n channel indexes hold a channel Close must
// close: all without reshaping; else the live and removing slots.
func (rs *reshaper) present(n int) []bool {
	p := make([]bool, n)
	if rs == nil {
		for i := range p {
			p[i] = true
		}
		return p
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for i := range p {
		p[i] = rs.listed(i)
	}
	return p
}

// listed reports whether channel index i holds a channel now (live or
// being removed); under mu, or true without reshaping.
func (rs *reshaper) listed(i int) bool {
	return rs == nil || rs.slots[i].state == slotLive || rs.slots[i].state == slotRemoving
}

// lock locks mu if rs is not nil and returns the unlock.
func (rs *reshaper) lock() func() {
	if rs == nil {
		return func() {}
	}
	rs.mu.Lock()
	return rs.mu.Unlock
}

// quiet marks the worker's search over once it took a task (counted in its
// channel's held): the rest of the turn reads only that channel's tables,
// which held keeps, so no grace waits for the worker while the task runs
// (see "Reshaping", 5). Its next turn copies the generation again before
// it reads anything else.
func (w *Worker) quiet() { w.gen.Store(genQuiet) }

// genQuiet is worker.gen while the worker reads no room: above every
// generation, so that settled passes over it.
const genQuiet = math.MaxUint64

// turn copies the grace generation at the top of each turn of the worker
// loop: the search that follows reads the shape published before it.
func (w *Worker) turn() {
	if g := w.e.reshape.gen.Load(); w.gen.Load() != g {
		w.gen.Store(g)
	}
}

// settled returns the latest grace generation every reader has passed:
// each worker started a turn since, is idle or has no goroutine, and no
// search on an idle worker's behalf is in progress (see "Reshaping", 5).
func (e *Engine) settled() uint64 {
	rs := e.reshape
	now := rs.gen.Load()
	select {
	case <-e.done:
		return rs.pass(now) // every worker has exited
	default:
	}
	if rs.handing.Load() != 0 {
		return rs.passed.Load()
	}
	least := now
	e.EachWorker(func(w *Worker) {
		if !w.active.Load() || w.Idle.Load() != claimed {
			return
		}
		least = min(least, w.gen.Load())
	})
	return rs.pass(least)
}

// pass records that grace g passed and returns the highest grace that has.
// The reading above is not monotonic (an idle worker that wakes is counted
// again with the generation of its last turn, until its new turn copies the
// current one), but a grace, once passed, stays passed: a worker idle when
// it was read held nothing of the room, and starts its next turn from the
// tables as they are. Without this, an AddChannel right after a removal
// could find its room still quarantined.
func (rs *reshaper) pass(g uint64) uint64 {
	for {
		p := rs.passed.Load()
		if g <= p {
			return p
		}
		if rs.passed.CompareAndSwap(p, g) {
			return g
		}
	}
}

// untrack ends a take of a task of channel ch (see "Reshaping", 3).
func (e *Engine) untrack(ch int) {
	if c := &e.Chans[ch]; c.tracked {
		c.held.Add(-1)
	}
}

// slotCounts sums channel index i's cumulative end counters.
func (e *Engine) slotCounts(i int) counts {
	c := &e.Chans[i]
	n := counts{cancelled: c.cancelled.Load()}
	for k := range n.dropped {
		n.dropped[k] = c.dropped[k].Load()
	}
	add := func(s *taskStats) {
		n.ran += s.ran.Load()
		n.panicked += s.panicked.Load()
		n.goexited += s.goexited.Load()
	}
	add(&c.inWait)
	add(&c.inline)
	e.EachWorker(func(w *Worker) { add(&w.stats[i]) })
	return n
}

func (n counts) minus(b counts) counts {
	d := counts{ran: n.ran - b.ran, panicked: n.panicked - b.panicked, goexited: n.goexited - b.goexited, cancelled: n.cancelled - b.cancelled}
	for k := range d.dropped {
		d.dropped[k] = n.dropped[k] - b.dropped[k]
	}
	return d
}

func (n counts) plus(b counts) counts {
	d := counts{ran: n.ran + b.ran, panicked: n.panicked + b.panicked, goexited: n.goexited + b.goexited, cancelled: n.cancelled + b.cancelled}
	for k := range d.dropped {
		d.dropped[k] = n.dropped[k] + b.dropped[k]
	}
	return d
}

// claimRoom finds n contiguous free queues of level l whose grace passed,
// marks them owned by ch and returns the first, or -1. Under mu.
func (rs *reshaper) claimRoom(settled uint64, l, n, ch int) int {
	first, end := rs.levelFirst[l], rs.levelFirst[l]+rs.levelN[l]
	run := 0
	for q := first; q < end; q++ {
		if rs.owner[q] >= 0 || rs.quar[q] > settled {
			run = 0
			continue
		}
		if run++; run == n {
			start := q - n + 1
			rs.own(start, n, ch)
			return start
		}
	}
	return -1
}

// claimSlot takes the longest-free slot whose grace passed, or -1. Under mu.
func (rs *reshaper) claimSlot(settled uint64) int {
	for k, i := range rs.free {
		if rs.slots[i].quar <= settled && rs.keysGraced(rs.slots[i].keyed) {
			rs.free = append(rs.free[:k], rs.free[k+1:]...)
			return i
		}
	}
	return -1
}

// release frees slot i and its room in quarantine under grace g and, for
// the slot, the by-key callers' grace keyed (0: none). Under mu.
func (rs *reshaper) release(i, first, n int, g, keyed uint64) {
	for q := first; q < first+n; q++ {
		rs.owner[q], rs.quar[q] = -1, g
	}
	rs.slots[i] = slot{state: slotFree, quar: g, keyed: keyed}
	rs.free = append(rs.free, i)
}

// Pin marks a by-key caller in progress before it loads the key map, and
// returns the counter to give to unpin; -1, doing nothing, in a pool
// without Config.Spare. Between pin and unpin, the channel index the
// caller looked up keeps its channel (see "Reshaping", 6).
func (e *Engine) Pin() int {
	rs := e.reshape
	if rs == nil {
		return -1
	}
	k := int(rs.epoch.Load() & 1)
	rs.pins[k].n.Add(1)
	return k
}

// Unpin ends the by-key call pin began, after its last use of the channel
// index it looked up.
func (e *Engine) Unpin(k int) {
	if k >= 0 {
		e.reshape.pins[k].n.Add(-1)
	}
}

// keysGraced reports whether every by-key caller that may have loaded a key
// map published before epoch need ended, flipping the epoch when needed
// (see "Reshaping", 6). Under mu, which serialises the flips; it never
// waits.
func (rs *reshaper) keysGraced(need uint64) bool {
	for rs.drained < need {
		ep := rs.epoch.Load()
		if ep != rs.drained { // a flip is pending: its old counter must drain
			if rs.pins[(ep-1)&1].n.Load() != 0 {
				return false
			}
			rs.drained = ep
			continue
		}
		rs.epoch.Add(1) // callers from here on pin the other counter
	}
	return true
}

// clearRoom clears the bits of queues [first, first+n), which no channel
// serves any more, and unblocks them. Under mu.
func (e *Engine) clearRoom(first, n int) {
	for q := first; q < first+n; q++ {
		if e.Field.Has(q) && e.Field.Clear(q) {
			e.wake()
		}
		if e.Field.Blocked(q) && e.Field.Unblock(q) {
			e.wake()
		}
	}
}

// waitUntil polls cond with a growing pause (20 µs to 2 ms) until it holds
// or ctx ends. Removals are rare and their tasks end on their own time: a
// poll keeps every task path free of a notification.
func waitUntil(ctx context.Context, cond func() bool) error {
	pause := 20 * time.Microsecond
	var t *time.Timer
	for !cond() {
		if t == nil {
			t = time.NewTimer(pause)
			defer t.Stop()
		} else {
			t.Reset(pause)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, 2*time.Millisecond)
	}
	return nil
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// LookedUp runs the test hook between a by-key submit's lookup and its
// push (export_test.go), in a pool with Config.Spare.
func (e *Engine) LookedUp() {
	if f := e.reshape.afterLookup; f != nil {
		f()
	}
}

// SetAfterLookup sets the hook lookedUp runs; tests only.
func (e *Engine) SetAfterLookup(f func()) { e.reshape.afterLookup = f }

// Reshapes reports whether the pool was built with Config.Spare, which
// AddChannel and RemoveChannel need.
func (e *Engine) Reshapes() bool { return e.reshape != nil }

// Adding is the root's part of an AddChannel: the key, which the engine
// does not know.
type Adding struct {
	// Check applies the key's rules under the reshape lock and returns
	// the followup's channel index and key (-1: the channel itself).
	Check func() (followup int, followupKey any, err error)
	// Claim records the key of slot i, under the lock, before the
	// channel is attached.
	Claim func(i int)
	// Attach is the channel's Attach, outside the lock.
	Attach func(b Bits) error
	// Publish serves the key from slot i, under the lock, once attached.
	Publish func(i int)
}

// AddChannel is AddChannel's engine half, for the channel cs (its name the
// key): it claims a slot and contiguous room in its level, attaches it and
// has its key published; see "Reshaping".
func (e *Engine) AddChannel(cs *ChanSpec, a Adding) error {
	rs := e.reshape
	key := cs.Name
	if cs.Level < 0 || cs.Level >= len(rs.levelFirst) {
		return ConfigErr(errLevelFull, "AddChannel(%v): level %d: the pool has levels 0 to %d", key, cs.Level, len(rs.levelFirst)-1)
	}
	n := cs.Src.Queues()
	if n < 1 {
		return ConfigErr(task.ErrNoQueues, "AddChannel(%v): the channel has %d queues, at least 1 needed", key, n)
	}
	rs.mu.Lock()
	if e.stopped.Load() {
		rs.mu.Unlock()
		return poolClosed("AddChannel")
	}
	f, err := e.checkAdd(cs, a.Check)
	if err != nil {
		rs.mu.Unlock()
		return err
	}
	settled := e.settled()
	i := rs.claimSlot(settled)
	first := -1
	if i >= 0 {
		first = rs.claimRoom(settled, cs.Level, n, i)
		if first < 0 {
			rs.free = append([]int{i}, rs.free...)
		}
	}
	if first < 0 {
		rs.mu.Unlock()
		return ConfigErr(errLevelFull, "AddChannel(%v): level %d has no room for %d contiguous queues (Config.Spare; room freed by RemoveChannel is reused)", key, cs.Level, n)
	}
	if f < 0 {
		f = i
	}
	att := new(attachment)
	att.state.Store(attPending)
	att.decl.Store(true)
	e.fillSlot(i, first, cs, f)
	a.Claim(i)
	rs.slots[i] = slot{state: slotPending, att: att, base: e.slotCounts(i)}
	rs.mu.Unlock()

	err = a.Attach(Bits{e: e, base: first, n: n, att: att})
	att.decl.Store(false)

	rs.mu.Lock()
	defer rs.mu.Unlock()
	if err != nil || e.stopped.Load() {
		att.state.Store(attDetached)
		e.clearRoom(first, n)
		rs.release(i, first, n, rs.gen.Add(1), 0) // its key was never published
		switch {
		case err == nil:
			return poolClosed("AddChannel")
		case errors.Is(err, task.ErrAttached):
			return ConfigErr(err, "AddChannel(%v): the channel already belongs to a pool", key)
		}
		return ConfigErr(fmt.Errorf("%w: %w", task.ErrAttached, err), "AddChannel(%v): the channel refused Attach: %v", key, err)
	}
	for q := first; q < first+n; q++ {
		e.queues[q].wakeHands = att.wakesOutside.Load() // no worker reads it before the channel sets a bit
	}
	e.Chans[i].accounted.Store(e.admit.on && !att.admits.Load())
	rs.slots[i].state = slotLive
	a.Publish(i)
	att.state.Store(attLive) // open: submits are served from here
	return nil
}

// checkAdd applies AddChannel's followup rules to the index check gives;
// it returns the followup's channel index, -1 for the channel itself. Under
// mu.
func (e *Engine) checkAdd(cs *ChanSpec, check func() (int, any, error)) (int, error) {
	j, followup, err := check()
	if err != nil || j < 0 {
		return j, err
	}
	key := cs.Name
	switch {
	case e.reshape.slots[j].state != slotLive:
		return 0, ConfigErr(ErrFollowup, "AddChannel(%v): followup %v is being removed", key, followup)
	case e.Chans[j].Capped && e.Chans[j].holdsYield:
		return 0, ConfigErr(ErrFollowup, "AddChannel(%v): followup %v has a MaxInFlight cap", key, followup)
	case cs.Coc && !e.Chans[j].coc:
		return 0, ConfigErr(ErrFollowup, "AddChannel(%v): it completes on close but its followup %v does not", key, followup)
	}
	return j, nil
}

// fillSlot writes slot i's tables for channel c, whose queues start at
// global queue first. The slot is free and its grace passed: nothing reads
// it. Under mu.
func (e *Engine) fillSlot(i, first int, cs *ChanSpec, followup int) {
	c, level := cs.Src, cs.Level
	ci := &e.Chans[i]
	ci.c, ci.user, ci.level, ci.first, ci.queues = c, cs.User, level, first, c.Queues()
	ci.coc, ci.onEnd, ci.tracked = cs.Coc, e.onEndOf(cs), true
	ci.name = cs.Name
	ci.Capped, ci.holdsYield = false, false
	ci.maxRunning.Store(0)
	ci.pause.paused.Store(false) // a slot reused after a removal starts unpaused (pause.go)
	ci.pause.setCap(0)
	if limit := max(cs.MaxRunning, cs.MaxInFlight); limit > 0 {
		ci.Capped, ci.holdsYield = true, cs.MaxInFlight > 0
		ci.maxRunning.Store(int64(limit))
		ci.pause.setCap(int64(limit))
	}
	ci.running.Store(0)
	ci.credit.Store(0)
	ci.removal.Store(0)
	e.initRate(i, cs.RatePerSec, cs.RateBurst)
	e.followup[i] = followup
	e.timing.chans[i].wait.p.Store(nil)
	e.timing.chans[i].run.p.Store(nil)
	op, _ := c.(orderedPoller)
	bp, _ := c.(batchPoller)
	if !batches(ci.Capped, level, e.Field.Levels()) {
		bp = nil
	}
	for q := range ci.queues {
		e.queues[first+q] = queueRef{c: c, local: q, ch: i, ordered: op, batch: bp, level: level}
	}
}

// Removing is the root's part of a RemoveChannel: the key, which the
// engine does not know.
type Removing struct {
	// Lookup finds the channel's index, under the reshape lock.
	Lookup func() (int, bool)
	// Unpublish stops serving the key, under the lock, as the channel
	// detaches.
	Unpublish func()
}

// RemoveChannel is RemoveChannel's engine half for the channel named key
// (its policy Drop if drop, else Drain): it returns the channel's final
// counts once it detached; see "Reshaping".
func (e *Engine) RemoveChannel(ctx context.Context, key any, drop bool, r Removing) (*ChanCensus, error) {
	rs := e.reshape
	rs.mu.Lock()
	i, ok := r.Lookup()
	if !ok {
		rs.mu.Unlock()
		return nil, UnknownKey(key)
	}
	sl := &rs.slots[i]
	if sl.state == slotLive {
		if err := e.checkRemove(ctx, i, key); err != nil {
			rs.mu.Unlock()
			return nil, err
		}
		sl.state, sl.rm = slotRemoving, &removal{done: make(chan struct{})}
	}
	rm, ci := sl.rm, &e.Chans[i]
	want := removeDraining
	if drop {
		want = removeDropping
	}
	start := rm.policy < want
	shared := false
	if start {
		rm.policy = want
		ci.removal.Store(want) // workers drop from here, if dropping
		sl.att.state.Store(attRemoving)
		// The drops below end tasks on this goroutine, off the pool's: a
		// share of live keeps Close from reporting before they ended (see
		// "Endings off the pool's goroutines", engine.go). Taken under mu:
		// a first start found admission open, and startClose lists the
		// channels under mu after it stopped admission and before its own
		// share goes, so the share cannot fail then.
		shared = e.share()
	}
	c, user := ci.c, ci.user
	rs.mu.Unlock()
	if start {
		func() {
			if shared {
				defer e.exit()
			}
			// A Close from a drop's OnEnd must not wait for this share.
			defer e.leaveCallbacks(e.enterCallbacks(i))
			e.resumeChannel(i) // a paused channel drains or drops as at Close (pause.go)
			ci.held.Add(1)     // what Close(true) takes out is held until dropped: see startClose
			defer ci.held.Add(-1)
			e.dropTasks(i, c.Close(want == removeDropping), DropRemoved)
		}()
	}
	var err error
	YieldFor(ctx, func() {
		err = waitUntil(ctx, func() bool {
			return isDone(rm.done) || user.Len() == 0 && ci.held.Load() == 0
		})
	})
	if err != nil {
		return nil, err
	}
	g, keyed := e.detach(i, rm, r.Unpublish)
	if g > 0 {
		// A call from a task waits for the workers only: the task may run
		// inside a pinned call of its own goroutine (a Bounded's CallerRuns
		// run), which would wait for itself; the slot is freed later, as
		// AddChannel looks.
		fromTask := e.calledFromTask(ctx)
		YieldFor(ctx, func() {
			_ = waitUntil(ctx, func() bool {
				if e.settled() < g {
					return false
				}
				if fromTask {
					return true
				}
				rs.mu.Lock()
				defer rs.mu.Unlock()
				return rs.keysGraced(keyed)
			})
		})
	}
	return &rm.stats, nil
}

// checkRemove applies RemoveChannel's rules to live channel i. Under mu.
func (e *Engine) checkRemove(ctx context.Context, i int, key any) error {
	rs := e.reshape
	if e.stopped.Load() {
		return poolClosed("RemoveChannel")
	}
	for j := range rs.slots {
		if j != i && rs.listed(j) && e.followup[j] == i {
			return ConfigErr(ErrRemove, "RemoveChannel(%v): it is the followup of %v: remove that channel first", key, e.Chans[j].name)
		}
	}
	if tc := TaskOf(ctx); tc != nil && tc.E == e && (tc.cur != nil && (tc.cur.ch == i || tc.detached && tc.origin == i) || slices.Contains(tc.inline, i)) {
		return ConfigErr(ErrRemove, "RemoveChannel(%v): called from one of its own tasks, which it would wait for", key)
	}
	if cb := callbackOf(); cb != nil && cb.E == e && cb.cur.ch == i { // the task counts in held until its callbacks returned
		return ConfigErr(ErrRemove, "RemoveChannel(%v): called from the OnEnd or panic handler of one of its tasks, which it would wait for", key)
	}
	return nil
}

// detach ends removal rm of channel index i once its tasks all ended (see
// "Reshaping", 4) and returns the grace generation its room waits for and
// the epoch the by-key callers' grace of its slot waits for; 0 if a
// concurrent call detached it already.
func (e *Engine) detach(i int, rm *removal, unpublish func()) (uint64, uint64) {
	rs := e.reshape
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if isDone(rm.done) {
		return 0, 0
	}
	sl, ci := &rs.slots[i], &e.Chans[i]
	n := e.slotCounts(i).minus(sl.base)
	st := ChanCensus{Slot: i, Level: ci.level, Coc: ci.coc,
		Wait: e.timing.chans[i].wait.snapshot(), Run: e.timing.chans[i].run.snapshot()}
	st.Ran, st.Panicked, st.Goexited, st.DroppedBy, st.Cancelled = n.ran, n.panicked, n.goexited, n.dropped, n.cancelled
	if ci.Capped {
		st.Cap = int(ci.maxRunning.Load())
	}
	rs.removed = rs.removed.plus(n)
	sl.att.state.Store(attDetached)
	unpublish()
	e.Timers.stopChannel(i) // after the map: see schedule
	// Every caller that loaded an earlier map pinned an epoch up to the
	// current one: the slot waits until all of those drained.
	keyed := rs.epoch.Load() + 1
	e.clearRoom(ci.first, ci.queues)
	g := rs.gen.Add(1)
	rs.release(i, ci.first, ci.queues, g, keyed)
	rm.stats = st
	close(rm.done)
	return g, keyed
}
