package statuspage

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/smartpool-go/smartpool"
)

// # History
//
// The handler samples the pool's Stats once a second (tick) into two rings:
// fine holds the samples of the last minute, one a second, and coarse every
// tenth sample of the span (15 minutes) before that minute. The charts draw the coarse
// samples older than the fine ring's first, then the fine ones: 10-second
// steps up to a minute ago, 1-second steps since. The highlights (dropping,
// slow) look at the last minute only: from the fine ring's first sample.
//
// Between two samples the handler also notices channels that went away
// (Pool.RemoveChannel) and lists them, with their final counts, for span.
// Stats.Removed sums the final counts of every removed channel, so when a
// single channel went away between two samples the growth of Removed is
// exactly its final counts; when several did, each is listed with the
// counts of its last sample (marked as a lower bound). A removal made from
// the page itself records the exact stats RemoveChannel returned.
const (
	window      = time.Minute // the fine ring's span, and the highlights'
	every       = time.Second // the sampling period
	keep        = int(window/every) + 1
	coarseEvery = 10 // every coarseEvery-th sample also goes to the coarse ring
	span        = 15 * time.Minute
	coarseKeep  = int((span+window)/(coarseEvery*every)) + 1 // the last minute's are drawn from fine
	removedKeep = 50                                         // removed channels listed at most, the newest
)

// ring keeps the last n samples of a series.
type ring[K comparable] struct {
	n    int
	s    []sample[K] // up to n samples; once full, the oldest at next
	next int
}

func (r *ring[K]) add(s sample[K]) {
	if len(r.s) < r.n {
		r.s = append(r.s, s)
		return
	}
	r.s[r.next] = s
	r.next = (r.next + 1) % r.n
}

// all returns the samples, oldest first.
func (r *ring[K]) all() []sample[K] {
	return append(slices.Clone(r.s[r.next:]), r.s[:r.next]...)
}

// sample is what the page remembers of one Stats reading, per channel, by
// key: channels come and go in a pool that reshapes (Pool.AddChannel).
type sample[K comparable] struct {
	at    time.Time
	chans map[K]chanSample
	total chanSample // every channel's, removed ones included (Stats.Total)
}

type chanSample struct {
	finished, dropped uint64
	queued            int
	wait              []smartpool.TimingBucket // in the fine ring only: the highlights need the window's first
}

// removed is a channel that went away, listed for span.
type removed[K comparable] struct {
	key      K
	at       time.Time
	exact    bool   // the counts are final; else those of its last sample
	by       string // who removed it: the page's action and its caller, or "" (the program)
	policy   string // the page's removal: drain or drop
	ran      uint64
	panicked uint64
	goexited uint64
	dropped  uint64
	canceled uint64
}

// tick records a sample and, unless the pool had closed before it, asks
// for the next one a second after due, when this one was due: the samples
// keep to a one-second grid however late the timer fires, unless it fires
// more than a second late, when the grid starts again from now.
func (h *handler[K]) tick(due time.Time) {
	closed := h.p.State() == smartpool.Closed // before the reading: a pool closed since gets one more
	now := time.Now()
	h.record(h.p.Stats(), now)
	if closed {
		return
	}
	next := due.Add(every)
	if next.Before(now) {
		next = now.Add(every)
	}
	time.AfterFunc(time.Until(next), func() { h.tick(next) })
}

// takeSample keeps what the page needs of s, read at now; with wait, the
// channels' wait buckets too.
func takeSample[K comparable](s *smartpool.Stats[K], now time.Time, wait bool) sample[K] {
	cur := sample[K]{at: now, chans: make(map[K]chanSample, len(s.Channels))}
	for _, c := range s.Channels {
		cs := chanSample{finished: c.Finished(), dropped: c.Dropped, queued: c.Queued}
		if wait {
			cs.wait = c.Wait.Buckets
		}
		cur.chans[c.Key] = cs
		cur.total.queued += c.Queued
	}
	t := s.Total()
	cur.total.finished, cur.total.dropped = t.Finished(), t.Dropped
	return cur
}

// record adds a sample of s, read at now, and notes the channels removed
// since the previous one.
func (h *handler[K]) record(s *smartpool.Stats[K], now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fine.add(takeSample(s, now, true))
	if h.ticks%coarseEvery == 0 {
		h.coarse.add(takeSample(s, now, false))
	}
	h.ticks++
	if prev := h.last; prev != nil {
		h.noteVanishedLocked(prev, s, now)
	}
	h.last, h.lastAt = s, now
	h.expireLocked(now)
}

// noteVanishedLocked lists the channels of prev that s lacks; h.mu held.
func (h *handler[K]) noteVanishedLocked(prev, s *smartpool.Stats[K], now time.Time) {
	var gone []smartpool.ChannelStats[K]
	for _, c := range prev.Channels {
		if _, ok := s.Channel(c.Key); !ok {
			gone = append(gone, c)
		}
	}
	for _, c := range gone {
		if h.findRemovedLocked(c.Key, h.lastAt) != nil {
			continue // the page's own removal recorded it
		}
		r := removed[K]{key: c.Key, at: now, ran: c.Ran, panicked: c.Panicked, goexited: c.Goexited, dropped: c.Dropped, canceled: c.Cancelled}
		if len(gone) == 1 { // Removed grew by its final counts exactly
			a, b := prev.Removed, s.Removed
			r.ran, r.panicked, r.goexited = since(a.Ran, b.Ran), since(a.Panicked, b.Panicked), since(a.Goexited, b.Goexited)
			r.dropped, r.canceled, r.exact = since(a.Dropped, b.Dropped), since(a.Cancelled, b.Cancelled), true
		}
		h.removed = append(h.removed, r)
	}
}

// findRemovedLocked returns the entry of key listed at or after t, if any;
// h.mu held.
func (h *handler[K]) findRemovedLocked(key K, t time.Time) *removed[K] {
	for i := range h.removed {
		if r := &h.removed[i]; r.key == key && !r.at.Before(t) {
			return r
		}
	}
	return nil
}

// noteRemoval records the final stats of a removal the page made, begun at
// start: in place of the entry a sample listed since, if any.
func (h *handler[K]) noteRemoval(c smartpool.ChannelStats[K], start time.Time, by, policy string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.findRemovedLocked(c.Key, start)
	if r == nil {
		h.removed = append(h.removed, removed[K]{key: c.Key, at: time.Now()})
		r = &h.removed[len(h.removed)-1]
	}
	r.exact, r.by, r.policy = true, by, policy
	r.ran, r.panicked, r.goexited, r.dropped, r.canceled = c.Ran, c.Panicked, c.Goexited, c.Dropped, c.Cancelled
	h.expireLocked(time.Now())
}

// expireLocked forgets the removed channels listed more than span ago, and
// the oldest beyond removedKeep; h.mu held.
func (h *handler[K]) expireLocked(now time.Time) {
	h.removed = slices.DeleteFunc(h.removed, func(r removed[K]) bool { return now.Sub(r.at) >= span })
	if n := len(h.removed) - removedKeep; n > 0 {
		h.removed = slices.Delete(h.removed, 0, n)
	}
}

// history returns the samples the charts span, oldest first: the coarse
// ones older than the last minute, then the fine ones; and the first of
// the last minute, where the highlights start.
func (h *handler[K]) history() (samples []sample[K], windowStart sample[K], gone []removed[K]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fine := h.fine.all()
	for _, c := range h.coarse.all() {
		if c.at.Before(fine[0].at) {
			samples = append(samples, c)
		}
	}
	return append(samples, fine...), fine[0], slices.Clone(h.removed)
}

// since returns how much a cumulative count grew from then to now, 0 if it
// went back (a channel removed and added again under the same key).
func since(then, now uint64) uint64 {
	if now < then {
		return 0
	}
	return now - then
}

// p99Since estimates the 99th percentile of the waits recorded between two
// readings of a channel's cumulative buckets (now: total waits recorded),
// as the lower bound of the bucket that holds it: within a factor of two.
func p99Since(then, now []smartpool.TimingBucket) time.Duration {
	if len(now) == 0 {
		return 0
	}
	base := func(i int) uint64 {
		if i < len(then) {
			return then[i].Count
		}
		return 0
	}
	var thenTotal uint64
	if len(then) > 0 {
		thenTotal = then[len(then)-1].Count // waits beyond the last bound are ignored: rare
	}
	n := since(thenTotal, now[len(now)-1].Count)
	if n == 0 {
		return 0
	}
	for i, b := range now {
		if float64(since(base(i), b.Count)) >= 0.99*float64(n) {
			if i == 0 {
				return 0
			}
			return now[i-1].Le // the bucket's lower bound: slow only if surely slow
		}
	}
	return now[len(now)-1].Le
}

// sparkBox is the side of the square sparkPoints draws in: the page's
// sparklines have viewBox="0 0 100 100" and are stretched to their size.
const sparkBox = 100.0

// sparkPoints draws values as an SVG polyline in a sparkBox square, each
// value at its time (seconds, ascending): the first at the left edge, the
// last at the right, from zero just above the bottom to top a fifth below
// the top (room to see a level, not the box's edge). top is the greatest
// value, at least 1: the scale the page prints beside the chart. A single
// value is a level line.
func sparkPoints(values, times []float64) (points string, top float64) {
	if len(values) == 0 {
		return "", 1
	}
	if len(values) == 1 {
		values, times = append(values, values[0]), []float64{0, 1}
	}
	top = 1.0
	for _, r := range values {
		top = max(top, r)
	}
	pts := make([]byte, 0, 12*len(values))
	for i, r := range values {
		x := (times[i] - times[0]) / (times[len(times)-1] - times[0]) * sparkBox
		pts = fmt.Appendf(pts, "%.1f,%.1f ", x, sparkBox*(0.98-0.78*r/top))
	}
	return strings.TrimSpace(string(pts)), top
}

// compact prints a chart's scale in three characters or so: 950, 1.2k,
// 35k, 4.1M.
func compact(v float64) string {
	switch {
	case v >= 1e6:
		return trimZero(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return trimZero(fmt.Sprintf("%.1f", v/1e3)) + "k"
	case v >= 10 || v == float64(int64(v)):
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }
