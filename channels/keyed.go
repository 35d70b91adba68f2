package channels

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/internal/nilcheck"
	"github.com/smartpool-go/smartpool/internal/queue"
)

// Keyed is an unbounded first-in, first-out channel whose tasks belong to
// groups (a host, a tenant, a database), with a limit on how many tasks of
// one group may be in progress at once: a fetch channel that never has more
// than two requests to a host in flight. It is one queue.
//
// # Order and limits
//
// A task is in progress from the moment Poll hands it out until its Run
// ends, however it ends: it returns, panics, or calls runtime.Goexit
// (including a yielded task the pool drops on Close). A task that calls
// smartpool.Yield keeps its group's slot while it waits, since the resource
// the limit guards (the host's connection) is usually what it waits on.
// Poll returns the oldest queued task whose group has fewer than the limit
// in progress; a group at its limit does not block the others, so the
// channel's bit stays set while any group may run. When a task ends, the
// next task of its group becomes eligible and an idle worker is woken for it.
//
// Yielded tasks re-entering through Requeue (when a Keyed is a followup
// channel) are not subject to the limits, since they already hold whatever
// they hold: they wait in a FIFO of their own, which Poll serves first.
//
// Unlike a channel's smartpool.ChannelParams.MaxInFlight cap, which limits
// the channel as a whole, a Keyed limits each group separately and may be a
// followup channel. Do not shard a Keyed with Multi: each shard would keep
// its own limits.
//
// # Cost
//
// Poll, submits and the end of a task are O(log g) for g groups with work
// queued: each group keeps its tasks in a list, and the groups that may run
// are in a heap ordered by the age of their oldest task. SetLimit is O(g).
// Each submitted task costs one allocation, a small wrapper that links it
// into its group's list and gives its slot back when its Run ends; a group
// costs one more when it becomes active. A group's state is removed as soon
// as it has nothing queued and nothing in progress, so memory follows the
// groups active at once, not every group ever seen.
//
// # Wrapped tasks
//
// Poll returns each submitted task wrapped (re-entries are returned as
// they are); the wrapper's Unwrap returns the task as it was submitted, so
// the pool's reports and smartpool.ChannelParams.OnEnd see the
// submitted task, and a task submitted with smartpool.WithContext whose
// context ends while it waits here is skipped as it should be. One race is
// left: a task a worker polls just as the pool's Close starts on a channel
// that does not complete on close is dropped without running, so its slot
// is never given back; that matters to nothing but Running and Stats, since
// the pool is closing.
//
// # Zero value
//
// The zero Keyed has limit 0: it has no queues (Queues returns 0, so
// smartpool.New refuses it with smartpool.ErrNoQueues) and its submit methods
// return smartpool.ErrNoQueues until SetLimit gives it a limit. Use NewKeyed.
// A Keyed must not be copied after first use. All methods are safe for
// concurrent use and none blocks beyond a short critical section. G must be
// comparable at run time too: an interface G holding a slice panics, as it
// would as a map key.
//
// A Keyed takes tasks only while a running pool serves it: before New attached
// it, after a New that failed, and from the pool's Close on, its submit
// methods return smartpool.ErrClosed (see smartpool.Channel). Its Queues,
// Attach, Push, Requeue, Poll and Close are called by the pool, not by users.
type Keyed[G comparable] struct {
	mu sync.Mutex
	// Invariants, each holding whenever mu is free:
	//  - groups holds exactly the groups with queued > 0 or running > 0;
	//  - ready holds exactly the groups with queued > 0 and running < limit,
	//    as a min-heap on their head task's seq, each at its own index;
	//  - bitSet == (requeued.Len() > 0 || len(ready) > 0), and the pool's bit
	//    was last Set or Cleared to match it (see updateBitLocked).
	groups   map[G]*keyedGroup[G]        // guarded by mu
	ready    []*keyedGroup[G]            // guarded by mu
	requeued queue.Queue[smartpool.Task] // re-entries, served first; guarded by mu
	queued   int                         // submitted tasks waiting, over all groups; guarded by mu
	running  int                         // tasks handed out whose Run has not ended; guarded by mu
	limit    int                         // in-progress tasks allowed per group; 0 for the zero Keyed; guarded by mu
	seq      uint64                      // submissions so far: the age order; guarded by mu
	bitSet   bool                        // what the availability bit was last set to; guarded by mu
	closed   bool                        // Close was called; guarded by mu
	dropped  bool                        // Close(true) emptied it: Requeue refuses too; guarded by mu
	bits     smartpool.Bits              // set by Attach before the pool starts; guarded by mu
}

// keyedGroup is the state of one active group. Every field is guarded by
// its Keyed's mu.
type keyedGroup[G comparable] struct {
	key        G
	head, tail *keyedTask[G] // queued tasks, oldest first, linked by next
	queued     int
	running    int // tasks of the group handed out whose Run has not ended
	index      int // position in the Keyed's ready heap, or -1
}

// keyedTask wraps a submitted task: it links the task into its group's list
// and gives the group's slot back when Run ends.
type keyedTask[G comparable] struct {
	k    *Keyed[G]
	g    *keyedGroup[G] // set at submit; valid until Run ends, as the group stays active
	t    smartpool.Task // read-only
	seq  uint64         // read-only
	next *keyedTask[G]  // guarded by k.mu
}

// Run runs the submitted task, then gives back its group's slot, even if the
// task panics or calls runtime.Goexit.
func (kt *keyedTask[G]) Run(ctx context.Context) {
	defer kt.k.release(kt.g)
	kt.t.Run(ctx)
}

// Unwrap returns the task as it was submitted.
func (kt *keyedTask[G]) Unwrap() smartpool.Task { return kt.t }

// NewKeyed returns an empty Keyed that lets at most limit tasks of each group
// be in progress at once. For limit < 1 it returns an error wrapping
// smartpool.ErrBadLimit.
func NewKeyed[G comparable](limit int) (*Keyed[G], error) {
	if limit < 1 {
		return nil, fmt.Errorf("channels: NewKeyed limit %d: %w", limit, smartpool.ErrBadLimit)
	}
	return &Keyed[G]{limit: limit}, nil
}

// Submit queues fn under group; it is SubmitTask for a function, with the
// same errors and options (and smartpool.ErrNilTask for a nil fn).
func (k *Keyed[G]) Submit(group G, fn func(ctx context.Context), opts ...smartpool.Option) error {
	if fn == nil {
		return smartpool.ErrNilTask
	}
	return k.SubmitTask(group, smartpool.Func(fn), opts...)
}

// SubmitTask queues t under group. It returns smartpool.ErrNilTask for a nil
// t, smartpool.ErrNoQueues for a Keyed without a limit (see Keyed),
// smartpool.ErrClosed once the pool's Close started, and smartpool.ErrFull
// when the pool's in-flight limit (smartpool.Config.Limit) is reached. It
// does not block unless opts say so: smartpool.WithContext waits for a unit
// of the limit and cancels t if ctx ends while it is queued; t keeps its
// group either way. A Keyed has no order key, so WithDeadline and
// WithPriority are refused with smartpool.ErrOption.
func (k *Keyed[G]) SubmitTask(group G, t smartpool.Task, opts ...smartpool.Option) error {
	if nilcheck.Nil(t) { // a Func(nil) would panic on the worker
		return smartpool.ErrNilTask
	}
	if len(opts) == 0 {
		return k.push(group, t, submitted)
	}
	k.mu.Lock()
	b, limit := k.bits, k.limit // read under mu: Attach may run concurrently
	k.mu.Unlock()
	if limit == 0 {
		return smartpool.ErrNoQueues
	}
	return b.Submit(t, smartpool.Order{}, opts, func(t smartpool.Task, o smartpool.Order) error {
		if o.HasDeadline || o.HasPriority {
			return smartpool.Unordered(o)
		}
		return k.push(group, t, pushed) // admitted by the pool, under its own group
	})
}

// Push queues t under the zero value of G; it is the by-key submit of
// smartpool.Pool.Submit. Every task submitted that way shares that one group
// and its limit.
//
// Called by the pool; not for users (Pool.Submit is the by-key submit).
func (k *Keyed[G]) Push(t smartpool.Task, o smartpool.Order) error {
	if o.HasDeadline || o.HasPriority {
		return smartpool.Unordered(o)
	}
	var zero G
	return k.push(zero, t, pushed)
}

func (k *Keyed[G]) push(group G, t smartpool.Task, how entry) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	kt := &keyedTask[G]{k: k, t: t} // allocated before locking
	k.mu.Lock()
	if k.limit == 0 {
		k.mu.Unlock()
		return smartpool.ErrNoQueues
	}
	if err := how.admitLocked(k.bits, k.dropped, k.closed); err != nil {
		k.mu.Unlock()
		return err
	}
	kt.t = how.stamp(k.bits, t)
	g := k.groups[group]
	if g == nil {
		if k.groups == nil {
			k.groups = make(map[G]*keyedGroup[G])
		}
		g = &keyedGroup[G]{key: group, index: -1}
		k.groups[group] = g
	}
	k.seq++
	kt.g, kt.seq = g, k.seq
	if g.tail == nil {
		g.head = kt
	} else {
		g.tail.next = kt
	}
	g.tail = kt
	g.queued++
	k.queued++
	// A group not in ready but under its limit had nothing queued: kt is its
	// head, and it may run now.
	if g.index < 0 && g.running < k.limit {
		k.pushReadyLocked(g)
	}
	eligible := g.index >= 0
	k.updateBitLocked()
	b := k.bits // read under mu: Attach may run concurrently
	k.mu.Unlock()
	if eligible {
		b.Wake(1)
	}
	return nil
}

// Requeue queues a yielded task re-entering the pool, outside every group
// and ahead of the submitted tasks (see Keyed); see smartpool.Channel. It
// returns smartpool.ErrClosed only once Close(true) emptied the channel.
//
// Called by the pool; not for users.
func (k *Keyed[G]) Requeue(t smartpool.Task) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	k.mu.Lock()
	if k.limit == 0 {
		k.mu.Unlock()
		return smartpool.ErrNoQueues
	}
	if err := requeued.admitLocked(k.bits, k.dropped, k.closed); err != nil {
		k.mu.Unlock()
		return err
	}
	k.requeued.Push(t)
	k.updateBitLocked()
	b := k.bits
	k.mu.Unlock()
	b.Wake(1)
	return nil
}

// Poll removes and returns the oldest re-entry, or else the oldest submitted
// task whose group is under its limit, wrapped (see Keyed); it returns nil if
// there is neither. From then until the returned task's Run ends, the task
// holds one of its group's slots.
//
// Called by the pool; not for users.
func (k *Keyed[G]) Poll(int) smartpool.Task {
	k.mu.Lock()
	defer k.mu.Unlock()
	if t, ok := k.requeued.Pop(); ok {
		k.updateBitLocked()
		return t
	}
	if len(k.ready) == 0 {
		return nil
	}
	g := k.ready[0]
	kt := g.head
	g.head, kt.next = kt.next, nil
	if g.head == nil {
		g.tail = nil
	}
	g.queued--
	g.running++
	k.queued--
	k.running++
	if g.queued == 0 || g.running >= k.limit {
		k.removeTopLocked()
	} else {
		k.downLocked(0) // the group's head is younger now
	}
	k.updateBitLocked()
	return kt
}

// release gives back a slot of g when a task's Run ends. It may make g
// eligible again: then it sets the bit, if no group was eligible, and wakes
// a worker after unlocking, so that a waiting task never sits queued while
// every worker sleeps.
func (k *Keyed[G]) release(g *keyedGroup[G]) {
	k.mu.Lock()
	g.running--
	k.running--
	eligible := false
	switch {
	case g.queued > 0 && g.index < 0 && g.running < k.limit:
		k.pushReadyLocked(g)
		k.updateBitLocked()
		eligible = true
	case g.queued == 0 && g.running == 0:
		delete(k.groups, g.key)
	}
	b := k.bits
	k.mu.Unlock()
	if eligible {
		b.Wake(1)
	}
}

// SetLimit sets the number of tasks of each group that may be in progress at
// once to n. Raising it makes waiting tasks eligible at once and wakes idle
// workers for them; lowering it stops nothing already in progress: a group
// over the new limit just gets no more slots until enough of its tasks end.
// It returns an error wrapping smartpool.ErrBadLimit for n < 1 and then
// changes nothing.
func (k *Keyed[G]) SetLimit(n int) error {
	if n < 1 {
		return fmt.Errorf("channels: Keyed.SetLimit(%d): %w", n, smartpool.ErrBadLimit)
	}
	k.mu.Lock()
	k.limit = n
	before := len(k.ready)
	clear(k.ready)
	k.ready = k.ready[:0]
	for _, g := range k.groups {
		g.index = -1
		if g.queued > 0 && g.running < n {
			g.index = len(k.ready)
			k.ready = append(k.ready, g)
		}
	}
	for i := len(k.ready)/2 - 1; i >= 0; i-- {
		k.downLocked(i)
	}
	added := len(k.ready) - before
	k.updateBitLocked()
	b := k.bits
	k.mu.Unlock()
	b.Wake(added)
	return nil
}

// Limit returns the number of tasks of each group that may be in progress at
// once: 0 for the zero Keyed.
func (k *Keyed[G]) Limit() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.limit
}

// Len returns the number of queued tasks, re-entries included; tasks in
// progress are not queued.
func (k *Keyed[G]) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.queued + k.requeued.Len()
}

// Running returns the number of tasks of group in progress: handed out by
// Poll, their Run not yet ended.
func (k *Keyed[G]) Running(group G) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if g := k.groups[group]; g != nil {
		return g.running
	}
	return 0
}

// KeyedStats is a snapshot of a Keyed.
type KeyedStats struct {
	// Queued counts queued tasks, re-entries included: Len.
	Queued int
	// Running counts tasks in progress, over all groups.
	Running int
	// Groups counts the groups with tasks queued or in progress: the
	// groups whose state the Keyed keeps.
	Groups int
	// Ready counts the groups with a task Poll may return now.
	Ready int
	// Limit is the number of tasks of each group that may be in progress
	// at once.
	Limit int
}

// Stats returns a snapshot of the Keyed, every field read at the same
// instant under the channel's lock.
func (k *Keyed[G]) Stats() KeyedStats {
	k.mu.Lock()
	defer k.mu.Unlock()
	return KeyedStats{
		Queued:  k.queued + k.requeued.Len(),
		Running: k.running,
		Groups:  len(k.groups),
		Ready:   len(k.ready),
		Limit:   k.limit,
	}
}

// Queues returns 1, or 0 for a Keyed without a limit (see Keyed).
//
// Called by the pool; not for users.
func (k *Keyed[G]) Queues() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.limit == 0 {
		return 0
	}
	return 1
}

// Attach binds the Keyed to a pool; it is called by smartpool.New. It
// returns smartpool.ErrAttached if the Keyed already belongs to a pool.
//
// Called by the pool; not for users.
func (k *Keyed[G]) Attach(b smartpool.Bits) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.bits.Attached() {
		return smartpool.ErrAttached
	}
	k.bits = b
	b.AdmitsOwnSubmits() // Submit and SubmitTask take their units (entry.go)
	b.WakesOutsideLock() // Wake comes after the lock is released
	if k.bitSet {
		k.bits.Set(0)
	}
	return nil
}

// Close stops admission and, if drop is set, empties the Keyed and returns
// its tasks: re-entries first, as they are, then the submitted tasks, oldest
// first, as they were submitted (not wrapped). It is called by the pool's
// Close. Tasks in progress keep their slots until their Run ends.
//
// Called by the pool; not for users.
func (k *Keyed[G]) Close(drop bool) []smartpool.Task {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.bits.Closing() {
		return nil // a user's call while a pool serves it, or before one does: see smartpool.Channel
	}
	k.closed = true
	k.dropped = k.dropped || drop
	if !drop || k.queued+k.requeued.Len() == 0 {
		return nil
	}
	out := k.requeued.Drain()
	waiting := make([]*keyedTask[G], 0, k.queued)
	for key, g := range k.groups {
		for kt := g.head; kt != nil; kt = kt.next {
			waiting = append(waiting, kt)
		}
		g.head, g.tail, g.queued, g.index = nil, nil, 0, -1
		if g.running == 0 {
			delete(k.groups, key)
		}
	}
	slices.SortFunc(waiting, func(a, b *keyedTask[G]) int { return cmp.Compare(a.seq, b.seq) })
	for _, kt := range waiting {
		out = append(out, kt.t)
	}
	k.queued = 0
	clear(k.ready)
	k.ready = k.ready[:0]
	k.updateBitLocked()
	return out
}

// updateBitLocked keeps the bit rule of smartpool.Channel: the bit is set
// while a re-entry is queued or a group may run, and clear otherwise. Every
// method that changes either calls it before unlocking.
func (k *Keyed[G]) updateBitLocked() {
	avail := k.requeued.Len() > 0 || len(k.ready) > 0
	if avail == k.bitSet {
		return
	}
	k.bitSet = avail
	if avail {
		k.bits.Set(0)
	} else {
		k.bits.Clear(0)
	}
}

// The ready heap: a binary min-heap of groups on their head task's seq, each
// group keeping its index.

func (k *Keyed[G]) pushReadyLocked(g *keyedGroup[G]) {
	g.index = len(k.ready)
	k.ready = append(k.ready, g)
	k.upLocked(g.index)
}

func (k *Keyed[G]) removeTopLocked() {
	h := k.ready
	n := len(h) - 1
	top := h[0]
	h[0] = h[n]
	h[n] = nil // do not retain the group after it left
	k.ready = h[:n]
	top.index = -1
	if n > 0 {
		k.downLocked(0)
	}
}

func (k *Keyed[G]) upLocked(i int) {
	h := k.ready
	g := h[i]
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].head.seq <= g.head.seq {
			break
		}
		h[i] = h[parent]
		h[i].index = i
		i = parent
	}
	h[i] = g
	g.index = i
}

func (k *Keyed[G]) downLocked(i int) {
	h := k.ready
	n := len(h)
	g := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].head.seq < h[c].head.seq {
			c = r
		}
		if g.head.seq <= h[c].head.seq {
			break
		}
		h[i] = h[c]
		h[i].index = i
		i = c
	}
	h[i] = g
	g.index = i
}
