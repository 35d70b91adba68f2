package scheduler

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"time"
)

// MaxSlice is the longest time slice RoundRobin accepts, about 833 days. The
// bound lets a slice deadline share one atomic word with its level.
const MaxSlice = time.Duration(1 << 56)

// RoundRobin returns the time-slice policy: levels take turns, level i's turn
// lasting slices[i], and during a turn every worker of the pool serves that
// level. One slice clock is shared by all the workers of the pool, as if the
// pool were one thread switching levels; the first Pick after Start begins
// the first turn, given to the highest level that has work.
//
// When a turn's slice has elapsed, the next level in cyclic order that has
// work takes over. A level found empty when a worker picks hands the rest of
// its turn on at once: the next level with work gets a fresh full slice, so
// no time is spent on idle levels and a lone busy level gets every worker.
//
// Slices are checked between tasks, never by preemption: a turn overruns its
// slice by the task that was running when the slice ended, and the overrun is
// taken from the next turn, so the rotation keeps its length. Hence, with
// tasks shorter than the slices, the guarantees are: while every level has
// work, level i gets a share slices[i]/sum(slices) of the pool's time (not of
// its tasks: a level of long tasks runs fewer of them); and a level that gets
// work starts a task within one rotation, the sum of the slices, plus the
// duration of one task. Not guaranteed: a task longer than the following
// slice stretches the rotation by its overrun; and when a turn ends, workers
// still running tasks of the old level finish them, so for a moment both
// levels run.
//
// Pick reads the clock (it calls now once per pick) and keeps the slice
// clock in one atomic word that pickers advance by compare-and-swap, so
// concurrent pickers agree on the turn. It never blocks, and allocates only
// rarely: for the first pick after Start, and when it moves its epoch (every
// few years, or after the clock stepped back).
//
// Start returns an error wrapping ErrBadPolicy unless there is exactly one
// slice per level and every slice is positive and at most MaxSlice. The
// returned Scheduler serves one pool.
func RoundRobin(slices ...time.Duration) Scheduler {
	return &roundRobin{slices: append([]time.Duration(nil), slices...)}
}

// roundRobin is both the Scheduler and every worker's Picker: pickers hold
// no state of their own.
type roundRobin struct {
	slices []time.Duration // read-only after construction
	mask   uint64          // one bit per level; written by Start before any Pick

	// clock is nil between Start and the first Pick. The pointer changes
	// only then and when a picker rebases the epoch (see rebase); a picker
	// that still works on a replaced clock changes nothing that others see,
	// and at worst moves the clock one turn too late.
	clock atomic.Pointer[rrClock]
}

// rrClock is the shared slice clock. Its word packs the current level (top
// 6 bits) and the deadline of its turn (low 58 bits, nanoseconds since epoch),
// so that one compare-and-swap moves both and concurrent pickers agree.
type rrClock struct {
	epoch time.Time // read-only
	word  atomic.Uint64
}

const (
	deadlineBits = 64 - 6 // 6 bits hold a level below MaxLevels
	deadlineMask = 1<<deadlineBits - 1
	// rebaseAfter is when the epoch moves: past it, a deadline up to
	// MaxSlice ahead would no longer fit in deadlineBits.
	rebaseAfter = time.Duration(1 << 57)
)

func pack(l int, deadline time.Duration) uint64 {
	return uint64(l)<<deadlineBits | uint64(deadline)&deadlineMask
}

func unpack(w uint64) (l int, deadline time.Duration) {
	return int(w >> deadlineBits), time.Duration(w & deadlineMask)
}

func (r *roundRobin) Start(levels int) error {
	if err := checkLevels(levels); err != nil {
		return err
	}
	if len(r.slices) != levels {
		return fmt.Errorf("%w: RoundRobin has %d slices for %d levels, want one per level", ErrBadPolicy, len(r.slices), levels)
	}
	for i, s := range r.slices {
		if s <= 0 || s > MaxSlice {
			return fmt.Errorf("%w: RoundRobin slice %d is %v, want more than 0 and at most %v", ErrBadPolicy, i, s, MaxSlice)
		}
	}
	r.mask = levelMask(levels)
	r.clock.Store(nil)
	return nil
}

func (r *roundRobin) NewPicker() Picker { return r }

func (r *roundRobin) Pick(avail uint64, now func() time.Time) int {
	a := avail & r.mask
	if a == 0 {
		// Only levels the pool does not have are set (or Start was not
		// called): any set bit is as good as another.
		return bits.TrailingZeros64(avail)
	}
	t := now()
	c := r.clock.Load()
	if c == nil {
		c = r.begin(a, t)
	}
	n := t.Sub(c.epoch)
	for n < 0 || n >= rebaseAfter {
		c = r.rebase(c, t, n)
		n = t.Sub(c.epoch)
	}
	for {
		w := c.word.Load()
		l, d := unpack(w)
		// More than a full slice left means the clock stepped back (a
		// wall clock without monotonic reading, or a fake one): end the
		// turn rather than stretch it.
		if a&(1<<uint(l)) != 0 && n < d && d-n <= r.slices[l] {
			return l
		}
		next := nextLevel(a, l)
		s := r.slices[next]
		nd := n + s // a fresh slice: the turn was handed on, or overran by more than s
		if n >= d && d+s > n {
			nd = d + s // the turn ended on time: keep the rotation's rhythm
		}
		if c.word.CompareAndSwap(w, pack(next, nd)) {
			return next
		}
		// Another picker moved the clock first: judge its turn.
	}
}

// begin starts the first turn after Start, at t, for the highest level in a.
func (r *roundRobin) begin(a uint64, t time.Time) *rrClock {
	c := &rrClock{epoch: t}
	l := bits.TrailingZeros64(a)
	c.word.Store(pack(l, r.slices[l]))
	if r.clock.CompareAndSwap(nil, c) {
		return c
	}
	return r.clock.Load() // another picker began first
}

// rebase replaces clock c, whose epoch is n before t, by one whose epoch is
// t, keeping the current turn and its deadline. It runs when the deadlines
// would soon outgrow their bits, every few years, and when t is before the
// epoch: for a picker that read the time just before another began the
// clock, or after the clock stepped back (a wall clock without monotonic
// reading, or a fake one); the turn then keeps at most a full slice.
func (r *roundRobin) rebase(c *rrClock, t time.Time, n time.Duration) *rrClock {
	l, d := unpack(c.word.Load())
	rem := r.slices[l]
	if n > 0 {
		rem = min(max(d-n, 0), rem)
	}
	nc := &rrClock{epoch: t}
	nc.word.Store(pack(l, rem))
	if r.clock.CompareAndSwap(c, nc) {
		return nc
	}
	return r.clock.Load() // another picker moved it first
}

// nextLevel returns the first level after l, cyclically, whose bit is set in
// a; l itself if it is the only one. a must not be zero.
func nextLevel(a uint64, l int) int {
	k := uint(l+1) & 63
	return int((k + uint(bits.TrailingZeros64(bits.RotateLeft64(a, -int(k))))) & 63)
}

// levelMask returns the mask of levels 0 to levels-1.
func levelMask(levels int) uint64 {
	if levels >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(levels) - 1
}
