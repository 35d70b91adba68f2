package scheduler_test

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// fakeClock is a clock the test moves by hand. Its time is atomic so that
// concurrent pickers may read it while another goroutine advances it.
type fakeClock struct{ ns atomic.Int64 }

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *fakeClock) Now() time.Time          { return epoch.Add(time.Duration(c.ns.Load())) }
func (c *fakeClock) Set(d time.Duration)     { c.ns.Store(int64(d)) }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }
func (c *fakeClock) Elapsed() time.Duration  { return time.Duration(c.ns.Load()) }

// lowestSetBit is the brute-force reference for the highest level with work.
func lowestSetBit(avail uint64) int {
	for l := range 64 {
		if avail>>uint(l)&1 == 1 {
			return l
		}
	}
	return -1
}

func isSet(avail uint64, l int) bool { return l >= 0 && l < 64 && avail>>uint(l)&1 == 1 }

func mask(levels int) uint64 {
	if levels == 64 {
		return ^uint64(0)
	}
	return 1<<uint(levels) - 1
}

// rrModel is a plain restatement of RoundRobin's rule, with time.Time
// arithmetic and a loop where the policy uses bit tricks and a packed word.
type rrModel struct {
	slices   []time.Duration
	started  bool
	level    int
	deadline time.Time
}

func (m *rrModel) pick(avail uint64, now time.Time) int {
	n := len(m.slices)
	a := avail & mask(n)
	if a == 0 {
		return bits.TrailingZeros64(avail)
	}
	if !m.started {
		m.started = true
		m.level = lowestSetBit(a)
		m.deadline = now.Add(m.slices[m.level])
	}
	if isSet(a, m.level) && now.Before(m.deadline) && m.deadline.Sub(now) <= m.slices[m.level] {
		return m.level
	}
	next := m.level
	for i := 1; i <= n; i++ {
		if l := (m.level + i) % n; isSet(a, l) {
			next = l
			break
		}
	}
	s := m.slices[next]
	if !now.Before(m.deadline) && m.deadline.Add(s).After(now) {
		m.deadline = m.deadline.Add(s)
	} else {
		m.deadline = now.Add(s)
	}
	m.level = next
	return next
}

// swrrModel is smooth weighted round robin as nginx writes it, over every
// level in order, skipping the levels without work.
type swrrModel struct{ w, cur []int }

func (m *swrrModel) pick(avail uint64) int {
	best, total := -1, 0
	for l := range m.w {
		if !isSet(avail, l) {
			continue
		}
		m.cur[l] += m.w[l]
		total += m.w[l]
		if best == -1 || m.cur[l] > m.cur[best] {
			best = l
		}
	}
	if best == -1 {
		return lowestSetBit(avail)
	}
	m.cur[best] -= total
	return best
}
