package scheduler

import (
	"fmt"
	"math/bits"
	"time"
)

// MaxWeight is the largest weight Weighted accepts. With at most MaxLevels
// levels, the weights sum to less than 2^27, so a picker's arithmetic cannot
// overflow.
const MaxWeight = 1 << 20

// Weighted returns the proportional-share policy: while several levels have
// work, they share the tasks a worker starts in proportion to their weights,
// so no level starves. weights[i] is level i's weight.
//
// Each worker runs its own smooth weighted round robin (the algorithm of
// nginx's upstream balancer) over the levels that have work in the snapshot it
// is given; workers share no state, so Pick costs no atomic operation, never
// blocks and does not allocate, and never reads the clock.
//
// Guarantees, per worker: from the worker's start, while every level has work,
// every run of sum(weights) consecutive picks gives level i exactly
// weights[i] of them, spread out rather than bunched (with weights 1, 2, 3:
// 2, 1, 0, 2, 1, 2, repeated). A level without work is skipped and its share
// goes to the busy levels in proportion to their weights: while the same
// levels have work, each busy level gets weights[i]/(sum of the busy levels'
// weights) of the picks, give or take a few picks that do not accumulate
// over time. The pool's shares are the sum of its workers'.
//
// Not guaranteed: shares of time. Weighted counts tasks started, so a level
// whose tasks run twice as long takes twice the time its weight suggests; use
// RoundRobin to share time. Nor is there any ordering between the picks of
// different workers.
//
// Start returns an error wrapping ErrBadPolicy unless there is exactly one
// weight per level and every weight is between 1 and MaxWeight. The returned
// Scheduler serves one pool.
func Weighted(weights ...int) Scheduler {
	return &weighted{weights: append([]int(nil), weights...)}
}

type weighted struct {
	weights []int   // as given; read-only
	w       []int64 // validated weights; set by Start, then read-only
	mask    uint64  // one bit per level; set by Start
}

func (s *weighted) Start(levels int) error {
	if err := checkLevels(levels); err != nil {
		return err
	}
	if len(s.weights) != levels {
		return fmt.Errorf("%w: Weighted has %d weights for %d levels, want one per level", ErrBadPolicy, len(s.weights), levels)
	}
	w := make([]int64, levels)
	for i, x := range s.weights {
		if x < 1 || x > MaxWeight {
			return fmt.Errorf("%w: Weighted weight %d is %d, want 1 to %d", ErrBadPolicy, i, x, MaxWeight)
		}
		w[i] = int64(x)
	}
	s.w, s.mask = w, levelMask(levels)
	return nil
}

// cacheLinePad is a cache line's worth of int64s, kept free on each side of
// a picker's current weights so that two workers never write one line.
const cacheLinePad = 8

func (s *weighted) NewPicker() Picker {
	cur := make([]int64, cacheLinePad+len(s.w)+cacheLinePad)
	return &weightedPicker{w: s.w, cur: cur[cacheLinePad : cacheLinePad+len(s.w)], mask: s.mask}
}

// weightedPicker is one worker's smooth weighted round robin. Only its
// worker's goroutine touches it.
type weightedPicker struct {
	w    []int64 // shared with the other pickers; read-only
	cur  []int64 // current weight per level; sums to 0 over all levels
	mask uint64
}

// Pick adds each busy level's weight to its current weight, picks the level
// with the largest current weight (the highest level on a tie) and takes the
// busy levels' total weight off it. Idle levels keep their current weight, so
// the current weights always sum to 0. In development a brute-force adversary
// choosing the snapshots never pushed any current weight beyond
// sum(weights); int64 has room for far more.
func (p *weightedPicker) Pick(avail uint64, _ func() time.Time) int {
	a := avail & p.mask
	if a == 0 {
		return bits.TrailingZeros64(avail) // outside the pool's levels: see Picker
	}
	best, top, total := -1, int64(0), int64(0)
	for m := a; m != 0; m &= m - 1 {
		l := bits.TrailingZeros64(m)
		c := p.cur[l] + p.w[l]
		p.cur[l] = c
		total += p.w[l]
		if best < 0 || c > top {
			best, top = l, c
		}
	}
	p.cur[best] -= total
	return best
}
