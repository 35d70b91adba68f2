package smartpool

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

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// RemovePolicy says what RemoveChannel does with the tasks a channel holds.
type RemovePolicy int

const (
	// Drain stops admission to the channel, runs every task it holds and
	// waits for its running and yielded tasks to end.
	Drain RemovePolicy = iota + 1
	// Drop stops admission to the channel and drops every task it holds
	// that has not started, as Close does for a channel that does not
	// complete on close; it waits for its running and yielded tasks.
	Drop
)

func (p RemovePolicy) String() string {
	switch p {
	case Drain:
		return "Drain"
	case Drop:
		return "Drop"
	}
	return fmt.Sprintf("RemovePolicy(%d)", int(p))
}

// chanInfo.removal values.
const (
	removeDraining int32 = 1
	removeDropping int32 = 2
)

var (
	errLevelFull = errors.New("no room left in the level")
	errRemove    = errors.New("the channel cannot be removed")
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
	stats  any           // ChannelStats[K]
}

// counts are a slot's cumulative end counters.
type counts struct{ ran, panicked, goexited, dropped, cancelled uint64 }

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
func (w *worker) quiet() { w.gen.Store(genQuiet) }

// genQuiet is worker.gen while the worker reads no room: above every
// generation, so that settled passes over it.
const genQuiet = math.MaxUint64

// turn copies the grace generation at the top of each turn of the worker
// loop: the search that follows reads the shape published before it.
func (w *worker) turn() {
	if g := w.e.reshape.gen.Load(); w.gen.Load() != g {
		w.gen.Store(g)
	}
}

// settled returns the latest grace generation every reader has passed:
// each worker started a turn since, is idle or has no goroutine, and no
// search on an idle worker's behalf is in progress (see "Reshaping", 5).
func (e *engine) settled() uint64 {
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
	e.eachWorker(func(w *worker) {
		if !w.active.Load() || w.idle.Load() != claimed {
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
func (e *engine) untrack(ch int) {
	if c := &e.chans[ch]; c.tracked {
		c.held.Add(-1)
	}
}

// slotCounts sums channel index i's cumulative end counters.
func (e *engine) slotCounts(i int) counts {
	c := &e.chans[i]
	n := counts{dropped: c.dropped.Load(), cancelled: c.cancelled.Load()}
	add := func(s *taskStats) {
		n.ran += s.ran.Load()
		n.panicked += s.panicked.Load()
		n.goexited += s.goexited.Load()
	}
	add(&c.inWait)
	add(&c.inline)
	e.eachWorker(func(w *worker) { add(&w.stats[i]) })
	return n
}

func (n counts) minus(b counts) counts {
	return counts{n.ran - b.ran, n.panicked - b.panicked, n.goexited - b.goexited, n.dropped - b.dropped, n.cancelled - b.cancelled}
}

func (n counts) plus(b counts) counts {
	return counts{n.ran + b.ran, n.panicked + b.panicked, n.goexited + b.goexited, n.dropped + b.dropped, n.cancelled + b.cancelled}
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

// pin marks a by-key caller in progress before it loads the key map, and
// returns the counter to give to unpin; -1, doing nothing, in a pool
// without Config.Spare. Between pin and unpin, the channel index the
// caller looked up keeps its channel (see "Reshaping", 6).
func (e *engine) pin() int {
	rs := e.reshape
	if rs == nil {
		return -1
	}
	k := int(rs.epoch.Load() & 1)
	rs.pins[k].n.Add(1)
	return k
}

// unpin ends the by-key call pin began, after its last use of the channel
// index it looked up.
func (e *engine) unpin(k int) {
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

// AddChannel adds channel c to level level of a running pool built with
// Config.Spare, under params (its key, close policy, OnEnd and cap, as in
// Config.Levels); its yielded tasks re-enter through the channel named
// followup (params.Key: itself), which must be present and not being
// removed. It claims c.Queues() contiguous queues of the level's spare room
// (room freed by RemoveChannel included), attaches c, and publishes its key:
// from its return, submits through c and Submit(params.Key, ...) are
// served. Keys unknown at New are fine.
//
// Errors wrap ErrConfig, and name the rule: a pool built without
// Config.Spare, a level out of range, a nil channel or one without queues
// (ErrNoQueues), a bad cap (ErrBadLimit), a key in use, a bad followup (not
// present, being removed, capped by MaxInFlight, or not completing on close
// when params.CompleteOnClose), a level without that much contiguous room,
// or a channel whose Attach refused (ErrAttached: it belongs to a pool). After
// Close started it returns an error wrapping ErrClosed. On error nothing
// changed: c is not attached. It is safe for concurrent use; it may be
// called from a task.
func (p *Pool[K]) AddChannel(level int, params ChannelParams[K], c Channel, followup K) error {
	e := p.e
	rs := e.reshape
	key := params.Key
	switch {
	case rs == nil:
		return configErr(errNotConfigured, "AddChannel(%v): the pool was built without Config.Spare", key)
	case isNil(c):
		return configErr(errNilChannel, "AddChannel(%v): the channel is nil", key)
	case level < 0 || level >= len(rs.levelFirst):
		return configErr(errLevelFull, "AddChannel(%v): level %d: the pool has levels 0 to %d", key, level, len(rs.levelFirst)-1)
	case params.MaxInFlight > 0 && followup == key:
		return configErr(errFollowup, "AddChannel(%v): a channel with a MaxInFlight cap cannot be its own followup", key)
	}
	if err := checkCaps(params); err != nil {
		return err
	}
	src := SourceOf(c)
	if isNil(src) {
		return configErr(errNoSource, "AddChannel(%v): a %T not made by its constructor holds no Source (use %s)", key, c, constructorOf(c))
	}
	n := src.Queues()
	if n < 1 {
		return configErr(ErrNoQueues, "AddChannel(%v): the channel has %d queues, at least 1 needed", key, n)
	}
	rs.mu.Lock()
	if e.stopped.Load() {
		rs.mu.Unlock()
		return poolClosed("AddChannel")
	}
	index := *p.index.Load()
	f, err := p.checkAdd(index, params, followup)
	if err != nil {
		rs.mu.Unlock()
		return err
	}
	settled := e.settled()
	i := rs.claimSlot(settled)
	first := -1
	if i >= 0 {
		first = rs.claimRoom(settled, level, n, i)
		if first < 0 {
			rs.free = append([]int{i}, rs.free...)
		}
	}
	if first < 0 {
		rs.mu.Unlock()
		return configErr(errLevelFull, "AddChannel(%v): level %d has no room for %d contiguous queues (Config.Spare; room freed by RemoveChannel is reused)", key, level, n)
	}
	if f < 0 {
		f = i
	}
	att := new(attachment)
	att.state.Store(attPending)
	att.decl.Store(true)
	p.fillSlot(i, level, first, params, c, src, f)
	rs.slots[i] = slot{state: slotPending, att: att, base: e.slotCounts(i)}
	rs.mu.Unlock()

	err = src.Attach(Bits{e: e, base: first, n: n, att: att})
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
		case errors.Is(err, ErrAttached):
			return configErr(err, "AddChannel(%v): the channel already belongs to a pool", key)
		}
		return configErr(fmt.Errorf("%w: %w", ErrAttached, err), "AddChannel(%v): the channel refused Attach: %v", key, err)
	}
	for q := first; q < first+n; q++ {
		e.queues[q].wakeHands = att.wakesOutside.Load() // no worker reads it before the channel sets a bit
	}
	e.chans[i].accounted.Store(e.admit.on && !att.admits.Load())
	rs.slots[i].state = slotLive
	index = *p.index.Load() // another AddChannel may have published while c attached
	m := make(map[K]int, len(index)+1)
	for k, v := range index {
		m[k] = v
	}
	m[key] = i
	p.index.Store(&m)
	att.state.Store(attLive) // open: submits are served from here
	return nil
}

// checkAdd applies AddChannel's key and followup rules; it returns the
// followup's channel index, -1 for the channel itself. Under mu.
func (p *Pool[K]) checkAdd(index map[K]int, params ChannelParams[K], followup K) (int, error) {
	e, key := p.e, params.Key
	if _, dup := index[key]; dup {
		return 0, configErr(errDuplicateKey, "AddChannel(%v): the key is in use", key)
	}
	if followup == key {
		return -1, nil
	}
	j, ok := index[followup]
	switch {
	case !ok:
		return 0, configErr(errFollowup, "AddChannel(%v): followup %v: no channel has that key", key, followup)
	case e.reshape.slots[j].state != slotLive:
		return 0, configErr(errFollowup, "AddChannel(%v): followup %v is being removed", key, followup)
	case e.chans[j].capped && e.chans[j].holdsYield:
		return 0, configErr(errFollowup, "AddChannel(%v): followup %v has a MaxInFlight cap", key, followup)
	case params.CompleteOnClose && !e.chans[j].coc:
		return 0, configErr(errFollowup, "AddChannel(%v): it completes on close but its followup %v does not", key, followup)
	}
	return j, nil
}

// fillSlot writes slot i's tables for channel c, whose queues start at
// global queue first. The slot is free and its grace passed: nothing reads
// it. Under mu.
func (p *Pool[K]) fillSlot(i, level, first int, params ChannelParams[K], user Channel, c Source, followup int) {
	e := p.e
	ci := &e.chans[i]
	ci.c, ci.user, ci.level, ci.first, ci.queues = c, user, level, first, c.Queues()
	ci.coc, ci.onEnd, ci.tracked = params.CompleteOnClose, params.OnEnd, true
	ci.name = params.Key
	ci.capped, ci.holdsYield = false, false
	ci.maxRunning.Store(0)
	ci.pause.paused.Store(false) // a slot reused after a removal starts unpaused (pause.go)
	ci.pause.setCap(0)
	if limit := max(params.MaxRunning, params.MaxInFlight); limit > 0 {
		ci.capped, ci.holdsYield = true, params.MaxInFlight > 0
		ci.maxRunning.Store(int64(limit))
		ci.pause.setCap(int64(limit))
	}
	ci.running.Store(0)
	ci.credit.Store(0)
	ci.removal.Store(0)
	e.followup[i] = followup
	p.keys[i] = params.Key
	e.timing.chans[i].wait.p.Store(nil)
	e.timing.chans[i].run.p.Store(nil)
	op, _ := c.(OrderedPoller)
	bp, _ := c.(BatchPoller)
	if !batches(ci.capped, level, e.field.Levels()) {
		bp = nil
	}
	for q := range ci.queues {
		e.queues[first+q] = queueRef{c: c, local: q, ch: i, ordered: op, batch: bp, level: level}
	}
}

// clearRoom clears the bits of queues [first, first+n), which no channel
// serves any more, and unblocks them. Under mu.
func (e *engine) clearRoom(first, n int) {
	for q := first; q < first+n; q++ {
		if e.field.Has(q) && e.field.Clear(q) {
			e.wake()
		}
		if e.field.Blocked(q) && e.field.Unblock(q) {
			e.wake()
		}
	}
}

// RemoveChannel removes the channel named key from a running pool built
// with Config.Spare, whether New listed it or AddChannel added it, and
// returns its final stats (Queued 0, the counts of every task it ever
// took: as Close's report has them for a channel). policy Drain runs what
// the channel holds; Drop drops what has not started (each task counted in
// Dropped, its Future or Group resolved with ErrDropped and OnEnd called
// with DroppedOnClose, once, as Close does). Either way it waits for the
// channel's running and yielded tasks to end. A paused channel is resumed
// first (and a cap SetCap set to 0 raised back to its cap), as Close does,
// so a removal never waits for a Resume; Pause and Resume of a channel
// being removed return an error wrapping ErrClosed.
//
// From the call on, submits to the channel return ErrClosed (by key too,
// while the removal runs; once it returned, a by-key submit returns
// ErrUnknownKey, and the key may be added again). A yielded task of the
// channel re-enters through its followup as usual; if that is the channel
// itself, it runs under Drain and is dropped under Drop. A removed channel
// is closed for good (its Close was called): add a new channel to reuse its
// room, which RemoveChannel frees, under the same key or another.
//
// Tasks of other channels do not hold it back, however long they run.
// Before it returns, it waits for the by-key calls in progress anywhere in
// the pool (Submit, SubmitTask, Group.Go, Handoff and the like) to end,
// since one may have looked the key up before the removal. None waits
// while it holds that lookup: a call that waits for a unit of Config.Limit
// or for room in its group holds no channel meanwhile, and looks its key
// up again once it got one (so it meets ErrClosed, or the channel added
// under the key since); one that waits for room in a full Bounded, or runs
// a task inline in its submitter's place, holds only that channel, whose
// removal waits for it (and ends the wait for room, which returns
// ErrClosed). Only a task that a full CallerRuns Bounded runs on the
// submitter of a by-key call holds every removal until it ends. Once the
// channel is gone, RemoveChannel returns its stats even if ctx ends during
// that wait; AddChannel reuses the slot once those calls ended.
//
// If ctx ends first, RemoveChannel returns ctx.Err(): the removal carries
// on (the channel refuses submits; a dropping removal keeps dropping), and a
// later call for the same key waits for it again (with Drop, turning a
// draining removal into a dropping one). Concurrent calls share one removal
// and return the same stats. Close during a removal closes the channel as
// any other (its queued tasks run or are dropped by its CompleteOnClose);
// the removal then ends as its tasks do, and no task is reported twice.
// Called from a pool task, RemoveChannel waits inside Yield, and it refuses
// to remove the channel of the calling task, or of a task the calling
// goroutine runs in a task's place (Bits.RunInTask, help-while-you-wait),
// which it would wait for; so it does from the OnEnd or the panic handler a
// worker runs for a task of the channel (the task counts until they return:
// remove the channel from another goroutine). A task a channel runs on a
// goroutine outside the pool (Bits.RunHere) cannot be told apart: removing
// its own channel waits for it until ctx ends.
//
// Errors: ErrUnknownKey for a key no channel has (wrapped, naming it);
// ErrConfig for a pool without Config.Spare, a bad policy, or a channel
// that another present channel names as its followup (remove that one
// first); ErrClosed once Close started, unless a removal of the channel was
// in progress.
//
// The pool's totals still add up: Stats lists the channels present, and
// Stats.Removed sums the final counts of every channel removed, which
// Stats.Total includes.
func (p *Pool[K]) RemoveChannel(ctx context.Context, key K, policy RemovePolicy) (ChannelStats[K], error) {
	e := p.e
	rs := e.reshape
	if ctx == nil {
		ctx = context.Background()
	}
	switch {
	case rs == nil:
		return ChannelStats[K]{}, configErr(errNotConfigured, "RemoveChannel(%v): the pool was built without Config.Spare", key)
	case policy != Drain && policy != Drop:
		return ChannelStats[K]{}, configErr(errRemove, "RemoveChannel(%v): policy %v: want Drain or Drop", key, policy)
	}
	rs.mu.Lock()
	i, ok := p.lookup(key)
	if !ok {
		rs.mu.Unlock()
		return ChannelStats[K]{}, unknownKey(key)
	}
	sl := &rs.slots[i]
	if sl.state == slotLive {
		if err := p.checkRemove(ctx, i, key); err != nil {
			rs.mu.Unlock()
			return ChannelStats[K]{}, err
		}
		sl.state, sl.rm = slotRemoving, &removal{done: make(chan struct{})}
	}
	rm, ci := sl.rm, &e.chans[i]
	want := removeDraining
	if policy == Drop {
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
			e.dropTasks(i, c.Close(want == removeDropping))
		}()
	}
	var err error
	Yield(ctx, func() {
		err = waitUntil(ctx, func() bool {
			return isDone(rm.done) || user.Len() == 0 && ci.held.Load() == 0
		})
	})
	if err != nil {
		return ChannelStats[K]{}, err
	}
	g, keyed := p.detach(i, rm)
	if g > 0 {
		// A call from a task waits for the workers only: the task may run
		// inside a pinned call of its own goroutine (a Bounded's CallerRuns
		// run), which would wait for itself; the slot is freed later, as
		// AddChannel looks.
		fromTask := e.calledFromTask(ctx)
		Yield(ctx, func() {
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
	return rm.stats.(ChannelStats[K]), nil
}

// checkRemove applies RemoveChannel's rules to live channel i. Under mu.
func (p *Pool[K]) checkRemove(ctx context.Context, i int, key K) error {
	e, rs := p.e, p.e.reshape
	if e.stopped.Load() {
		return poolClosed("RemoveChannel")
	}
	for j := range rs.slots {
		if j != i && rs.listed(j) && e.followup[j] == i {
			return configErr(errRemove, "RemoveChannel(%v): it is the followup of %v: remove that channel first", key, p.keys[j])
		}
	}
	if tc := taskOf(ctx); tc != nil && tc.e == e && (tc.cur != nil && (tc.cur.ch == i || tc.detached && tc.origin == i) || slices.Contains(tc.inline, i)) {
		return configErr(errRemove, "RemoveChannel(%v): called from one of its own tasks, which it would wait for", key)
	}
	if cb := callbackOf(); cb != nil && cb.e == e && cb.cur.ch == i { // the task counts in held until its callbacks returned
		return configErr(errRemove, "RemoveChannel(%v): called from the OnEnd or panic handler of one of its tasks, which it would wait for", key)
	}
	return nil
}

// detach ends removal rm of channel index i once its tasks all ended (see
// "Reshaping", 4) and returns the grace generation its room waits for and
// the epoch the by-key callers' grace of its slot waits for; 0 if a
// concurrent call detached it already.
func (p *Pool[K]) detach(i int, rm *removal) (uint64, uint64) {
	e, rs := p.e, p.e.reshape
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if isDone(rm.done) {
		return 0, 0
	}
	sl, ci := &rs.slots[i], &e.chans[i]
	n := e.slotCounts(i).minus(sl.base)
	key := p.keys[i]
	st := ChannelStats[K]{Key: key, Level: ci.level, CompleteOnClose: ci.coc,
		Wait: e.timing.chans[i].wait.snapshot(), Run: e.timing.chans[i].run.snapshot()}
	st.Ran, st.Panicked, st.Goexited, st.Dropped, st.Cancelled = n.ran, n.panicked, n.goexited, n.dropped, n.cancelled
	if ci.capped {
		st.Cap = int(ci.maxRunning.Load())
	}
	rs.removed = rs.removed.plus(n)
	sl.att.state.Store(attDetached)
	old := *p.index.Load()
	m := make(map[K]int, len(old))
	for k, v := range old {
		if k != key {
			m[k] = v
		}
	}
	p.index.Store(&m)
	e.timers.stopChannel(i) // after the map: see schedule
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

// reshapeStats turns Stats' per-slot channels into the channels present,
// less the counts of the slot's earlier channels, and fills Removed. Under
// mu.
func (p *Pool[K]) reshapeStats(s *Stats[K]) {
	rs := p.e.reshape
	out := s.Channels[:0]
	for i := range s.Channels {
		sl := &rs.slots[i]
		if !rs.listed(i) {
			continue
		}
		c := s.Channels[i]
		c.Ran -= sl.base.ran
		c.Panicked -= sl.base.panicked
		c.Goexited -= sl.base.goexited
		c.Dropped -= sl.base.dropped
		c.Cancelled -= sl.base.cancelled
		c.Removing = sl.state == slotRemoving
		out = append(out, c)
	}
	s.Channels = out
	s.Removed.Ran, s.Removed.Panicked, s.Removed.Goexited = rs.removed.ran, rs.removed.panicked, rs.removed.goexited
	s.Removed.Dropped, s.Removed.Cancelled = rs.removed.dropped, rs.removed.cancelled
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
