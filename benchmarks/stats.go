package benchmarks

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Summary is a figure measured over several runs: the median and the range.
// Runs is 0 when the figure was never measured (Status then says why).
type Summary struct {
	Median, Min, Max float64
	Runs             int
	Status           string // "" when measured; otherwise e.g. "deadlock"
}

// Summarize returns the median and range of xs.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{Status: "not run"}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Summary{Median: m, Min: s[0], Max: s[len(s)-1], Runs: len(s)}
}

// Quantile returns the q-quantile (0 <= q <= 1) of xs by the nearest-rank
// method; xs must be sorted.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// alternate runs fn(i) for each of n subjects in turn (A B C A B C ...):
// one discarded warm-up round, then rounds measured ones, so that drift in
// the machine hits every subject alike. fn returns the nfig figures of one
// run, or an error (a deadlock, a wrong result) after which that subject is
// not run again and its summaries carry the error as Status. It returns the
// summaries by subject, then by figure.
func alternate(n, rounds, nfig int, fn func(i int) ([]float64, error)) [][]Summary {
	samples := make([][][]float64, n)
	failed := make([]string, n)
	for i := range samples {
		samples[i] = make([][]float64, nfig)
	}
	for r := -1; r < rounds; r++ {
		for i := range n {
			if failed[i] != "" {
				continue
			}
			figs, err := fn(i)
			if err != nil {
				failed[i] = err.Error()
				continue
			}
			for f := range figs {
				if r >= 0 {
					samples[i][f] = append(samples[i][f], figs[f])
				}
			}
		}
	}
	out := make([][]Summary, n)
	for i := range out {
		out[i] = make([]Summary, nfig)
		for f := range nfig {
			if failed[i] != "" {
				out[i][f] = Summary{Status: failed[i]}
			} else {
				out[i][f] = Summarize(samples[i][f])
			}
		}
	}
	return out
}

// FormatNs formats a figure in nanoseconds with a unit that keeps three
// significant digits readable: "71 ns", "46.9 µs", "389 ms".
func FormatNs(ns float64) string {
	switch a := math.Abs(ns); {
	case a < 1e3:
		return sig(ns) + " ns"
	case a < 1e6:
		return sig(ns/1e3) + " µs"
	case a < 1e9:
		return sig(ns/1e6) + " ms"
	}
	return sig(ns/1e9) + " s"
}

// sig prints v with about three significant digits.
func sig(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// Ns formats s as a duration in nanoseconds with its range, or its status.
func (s Summary) Ns() string {
	return s.format(FormatNs)
}

// Num formats s as a plain number with its range, or its status.
func (s Summary) Num() string { return s.format(sig) }

func (s Summary) format(f func(float64) string) string {
	if s.Status != "" {
		return "**" + s.Status + "**"
	}
	if s.Runs == 1 {
		return f(s.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.Median), f(s.Min), f(s.Max))
}

// since returns the nanoseconds elapsed since t, as a float.
func since(t time.Time) float64 { return float64(time.Since(t).Nanoseconds()) }
