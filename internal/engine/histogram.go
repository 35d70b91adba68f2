package engine

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// # Duration histograms
//
// A histogram counts durations in fixed logarithmic buckets, as HDR
// histograms do: four buckets per power of two of nanoseconds, so a bucket
// is at most 25% wide and a quantile read from it is within that of the
// truth. Recording is a few atomic adds on the histogram's own counters: no
// lock, no allocation, any goroutine. Quantiles are computed when Stats
// reads the counts, which are each exact at some instant, not all at one.

const (
	subBits     = 2 // 4 buckets per power of two
	subBuckets  = 1 << subBits
	maxExponent = 46 // durations of 2^46 ns (about 19.5 hours) or more share the last bucket
	nBuckets    = (maxExponent-subBits)*subBuckets + subBuckets
)

// histogram counts durations. Any goroutine may record; Stats reads.
type histogram struct {
	counts [nBuckets]atomic.Uint64
	sum    atomic.Uint64 // nanoseconds
	max    atomic.Int64  // nanoseconds
}

// bucketOf returns the bucket of a duration of ns nanoseconds: values below
// 4 have a bucket each; above, the top three bits (the leading one and two
// below it) pick it.
func bucketOf(ns uint64) int {
	if ns < subBuckets {
		return int(ns)
	}
	l := bits.Len64(ns) // >= subBits+1
	i := (l-subBits)*subBuckets + int(ns>>(l-subBits-1))&(subBuckets-1)
	return min(i, nBuckets-1)
}

// bucketBounds returns the smallest value of bucket i and the smallest of
// the next one.
func bucketBounds(i int) (lo, hi uint64) {
	if i < subBuckets {
		return uint64(i), uint64(i + 1)
	}
	l := i/subBuckets + subBits
	m := uint64(i % subBuckets)
	shift := l - subBits - 1
	return (subBuckets + m) << shift, (subBuckets + m + 1) << shift
}

// record adds one duration of d nanoseconds; a negative one (a clock that
// stepped back) counts as zero.
func (h *histogram) record(d int64) {
	d = max(d, 0)
	h.counts[bucketOf(uint64(d))].Add(1)
	h.sum.Add(uint64(d))
	for m := h.max.Load(); d > m && !h.max.CompareAndSwap(m, d); m = h.max.Load() {
	}
}

// Timing is smartpool.Timing, field for field: the summary of one
// histogram.
type Timing struct {
	Count         uint64
	Sum           time.Duration
	P50, P90, P99 time.Duration
	Max           time.Duration
	Buckets       []TimingBucket
}

// TimingBucket is smartpool.TimingBucket.
type TimingBucket struct {
	Le    time.Duration
	Count uint64
}

// Exported bucket bounds: 2^firstBound .. 2^lastBound nanoseconds.
const firstBound, lastBound = 10, 36

// snapshot reads h into a Timing.
func (h *histogram) snapshot() Timing {
	var counts [nBuckets]uint64
	var t Timing
	for i := range counts {
		counts[i] = h.counts[i].Load()
		t.Count += counts[i]
	}
	t.Sum, t.Max = time.Duration(h.sum.Load()), time.Duration(h.max.Load())
	if t.Count == 0 {
		return Timing{}
	}
	t.P50 = quantile(&counts, t.Count, 0.50, t.Max)
	t.P90 = quantile(&counts, t.Count, 0.90, t.Max)
	t.P99 = quantile(&counts, t.Count, 0.99, t.Max)
	t.Buckets = make([]TimingBucket, 0, lastBound-firstBound+1)
	var cum uint64
	i := 0
	for e := firstBound; e <= lastBound; e++ {
		le := uint64(1) << e
		for ; i < nBuckets; i++ {
			if _, hi := bucketBounds(i); hi > le { // bucket i holds values of le or more
				break
			}
			cum += counts[i]
		}
		t.Buckets = append(t.Buckets, TimingBucket{Le: time.Duration(le), Count: cum})
	}
	return t
}

// quantile returns the q-quantile of the counts, interpolating linearly
// inside the bucket that holds it, and never above the recorded maximum.
func quantile(counts *[nBuckets]uint64, total uint64, q float64, maxSeen time.Duration) time.Duration {
	rank := q * float64(total)
	var cum float64
	for i, c := range counts {
		if c == 0 {
			continue
		}
		if cum+float64(c) >= rank {
			lo, hi := bucketBounds(i)
			v := float64(lo) + (rank-cum)/float64(c)*float64(hi-lo)
			return min(time.Duration(v), maxSeen)
		}
		cum += float64(c)
	}
	return maxSeen
}
