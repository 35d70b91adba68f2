package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Every value falls inside the bounds of its bucket, buckets are contiguous
// and no wider than a quarter of their lower bound.
func TestHistogram_Buckets(t *testing.T) {
	for i := range nBuckets - 1 {
		lo, hi := bucketBounds(i)
		nlo, _ := bucketBounds(i + 1)
		if hi != nlo {
			t.Fatalf("bucket %d ends at %d, bucket %d starts at %d", i, hi, i+1, nlo)
		}
		if lo >= subBuckets && float64(hi-lo) > 0.25*float64(lo) {
			t.Fatalf("bucket %d [%d, %d) wider than 25%%", i, lo, hi)
		}
		for _, v := range []uint64{lo, (lo + hi) / 2, hi - 1} {
			if got := bucketOf(v); got != i {
				t.Fatalf("bucketOf(%d) = %d, want %d", v, got, i)
			}
		}
	}
	if got := bucketOf(math.MaxUint64); got != nBuckets-1 {
		t.Fatalf("bucketOf(max) = %d, want the last bucket %d", got, nBuckets-1)
	}
}

// Quantiles read from the buckets are within a bucket's width of the exact
// ones, Max is exact and the exported buckets are cumulative.
func TestHistogram_Quantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h histogram
	var vals []int64
	for range 20000 {
		v := int64(rng.ExpFloat64() * float64(time.Millisecond))
		vals = append(vals, v)
		h.record(v)
	}
	h.record(-5) // a clock step back counts as zero
	vals = append(vals, 0)
	slices.Sort(vals)
	s := h.snapshot()
	if s.Count != uint64(len(vals)) || s.Max != time.Duration(vals[len(vals)-1]) {
		t.Fatalf("count %d max %v, want %d %v", s.Count, s.Max, len(vals), time.Duration(vals[len(vals)-1]))
	}
	for _, c := range []struct {
		q   float64
		got time.Duration
	}{{0.5, s.P50}, {0.9, s.P90}, {0.99, s.P99}} {
		exact := float64(vals[int(c.q*float64(len(vals)))])
		if math.Abs(float64(c.got)-exact) > 0.25*exact {
			t.Errorf("p%v = %v, exact %v", c.q*100, c.got, time.Duration(exact))
		}
	}
	last := uint64(0)
	for _, b := range s.Buckets {
		want := uint64(0)
		for _, v := range vals {
			if v < int64(b.Le) {
				want++
			}
		}
		if b.Count != want || b.Count < last {
			t.Fatalf("bucket le=%v: %d, want %d (previous %d)", b.Le, b.Count, want, last)
		}
		last = b.Count
	}
	if (&histogram{}).snapshot().Count != 0 {
		t.Fatal("empty histogram has a count")
	}
}

// Recording allocates nothing.
func TestHistogram_RecordAllocs(t *testing.T) {
	var h histogram
	if n := testing.AllocsPerRun(100, func() { h.record(12345) }); n != 0 {
		t.Fatalf("record allocates %v times", n)
	}
}
