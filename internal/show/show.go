// Package show formats figures for people: the Stats table and the live
// page print durations the same way.
package show

import "time"

// Duration prints d with three significant digits, or "-" when n, the
// number of durations behind it, is zero: nothing was timed.
func Duration(d time.Duration, n uint64) string {
	if n == 0 {
		return "-"
	}
	for r := time.Duration(1); r < time.Hour; r *= 10 {
		if d < 1000*r {
			return d.Round(r).String()
		}
	}
	return d.Round(time.Second).String()
}
