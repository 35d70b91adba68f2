package scheduler_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/smartpool-go/smartpool/scheduler"
)

func newWeighted(t *testing.T, weights ...int) scheduler.Scheduler {
	s := scheduler.Weighted(weights...)
	require.NoError(t, s.Start(len(weights)))
	return s
}

func picks(p scheduler.Picker, avail uint64, n int) []int {
	seq := make([]int, n)
	for i := range seq {
		seq[i] = p.Pick(avail, nil) // Weighted never reads the clock
	}
	return seq
}

// TestWeightedExact: with every level busy, smooth weighted round robin is
// periodic with period sum(weights): every window of 6 consecutive picks
// holds exactly 1, 2 and 3 picks of levels 0, 1 and 2, so 6,000 picks are
// exactly 1,000, 2,000 and 3,000.
func TestWeightedExact(t *testing.T) {
	seq := picks(newWeighted(t, 1, 2, 3).NewPicker(), 0b111, 6000)
	require.Equal(t, []int{2, 1, 0, 2, 1, 2}, seq[:6], "the smooth order")
	var count [3]int
	for _, l := range seq {
		count[l]++
	}
	require.Equal(t, [3]int{1000, 2000, 3000}, count)
	for i := 0; i+6 <= len(seq); i++ {
		var window [3]int
		for _, l := range seq[i : i+6] {
			window[l]++
		}
		require.Equal(t, [3]int{1, 2, 3}, window, "picks %d to %d", i, i+5)
	}
}

// TestWeightedSmooth checks the smoothness SWRR gives for weights 1, 2, 3:
// no level is picked more than its weight times in a row (level 2 at most
// twice, level 0 never twice), and after every prefix of k picks each
// level's count is within one pick of its exact share k*w/6.
func TestWeightedSmooth(t *testing.T) {
	weights := []int{1, 2, 3}
	seq := picks(newWeighted(t, weights...).NewPicker(), 0b111, 600)
	run, longest := 0, [3]int{}
	var count [3]int
	for k, l := range seq {
		if k > 0 && seq[k-1] == l {
			run++
		} else {
			run = 1
		}
		longest[l] = max(longest[l], run)
		count[l]++
		for i, w := range weights {
			exact := float64((k+1)*w) / 6
			require.Less(t, math.Abs(float64(count[i])-exact), 1.0, "level %d after %d picks: %d, exact share %.2f", i, k+1, count[i], exact)
		}
	}
	require.Equal(t, [3]int{1, 1, 2}, longest, "longest runs")
	for l, w := range weights {
		require.LessOrEqual(t, longest[l], w, "level %d", l)
	}
}

// TestWeightedIdleLevel: a level without work is skipped and its share goes
// to the busy levels in proportion to their weights; when it has work again
// it gets its share back. From the initial state the shares are exact over
// full periods; after phases that end mid-period they are within a bounded
// number of picks (current weights stay within ±sum(weights) = 6, so a busy
// level's count is off by less than 2*6/(busy levels' weight sum)).
func TestWeightedIdleLevel(t *testing.T) {
	p := newWeighted(t, 1, 2, 3).NewPicker()
	count := func(avail uint64, n int) [3]int {
		var c [3]int
		for _, l := range picks(p, avail, n) {
			c[l]++
		}
		return c
	}
	require.Equal(t, [3]int{1000, 0, 3000}, count(0b101, 4000), "level 1 idle: 1:3, from the initial state")
	tests := []struct {
		avail uint64
		n     int
		share [3]float64
	}{
		{0b110, 5003, [3]float64{0, 2.0 / 5, 3.0 / 5}},
		{0b101, 4001, [3]float64{1.0 / 4, 0, 3.0 / 4}},
		{0b011, 3001, [3]float64{1.0 / 3, 2.0 / 3, 0}},
		{0b100, 101, [3]float64{0, 0, 1}},
		{0b111, 6001, [3]float64{1.0 / 6, 2.0 / 6, 3.0 / 6}},
	}
	for _, tt := range tests {
		got := count(tt.avail, tt.n)
		busy := 0
		for l, w := range []int{1, 2, 3} {
			if isSet(tt.avail, l) {
				busy += w
			}
		}
		for l := range 3 {
			require.InDelta(t, tt.share[l]*float64(tt.n), got[l], 12/float64(busy), "avail %#b, level %d: %v", tt.avail, l, got)
		}
	}
}

// TestWeightedPickersIndependent: each worker's picker has its own state;
// picks on one do not move another.
func TestWeightedPickersIndependent(t *testing.T) {
	s := newWeighted(t, 1, 2, 3)
	a, b := s.NewPicker(), s.NewPicker()
	picks(a, 0b011, 7)
	require.Equal(t, picks(s.NewPicker(), 0b111, 12), picks(b, 0b111, 12))
}
