package smartpool

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/smartpool-go/smartpool/internal/nilcheck"
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
	case nilcheck.Nil(c):
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
	if nilcheck.Nil(src) {
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
	if start {
		rm.policy = want
		ci.removal.Store(want) // workers drop from here, if dropping
		sl.att.state.Store(attRemoving)
	}
	c, user := ci.c, ci.user
	rs.mu.Unlock()
	if start {
		e.resumeChannel(i) // a paused channel drains or drops as at Close (pause.go)
		ci.held.Add(1)     // what Close(true) takes out is held until dropped: see startClose
		e.dropTasks(i, c.Close(want == removeDropping))
		ci.held.Add(-1)
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
