package smartpool

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// String prints the stats as a small table: a line of pool figures, then
// one row per channel, levels top to bottom. Keys print with %v.
func (s *Stats[K]) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workers %d (busy %d)  rate %.1f/s  wakeups %d  suspended %d", s.Workers, s.Busy, s.Rate, s.Wakeups, s.Suspended)
	if s.Limit > 0 {
		fmt.Fprintf(&b, "  limit %d (admitted %d, waiting %d)", s.Limit, s.Admitted, s.Waiting)
	}
	b.WriteByte('\n')
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "level\tchannel\ton close\tqueued\trunning\tcap\tran\tpanicked\tgoexited\tdropped\tcancelled\tyielded\twait p50\tp99\trun p50\tp99\t")
	for _, c := range s.Channels {
		policy, limit := "drop", "-"
		if c.CompleteOnClose {
			policy = "complete"
		}
		if c.Cap > 0 {
			limit = fmt.Sprintf("%d/%d", c.Held, c.Cap)
		}
		fmt.Fprintf(tw, "%d\t%v\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t\n",
			c.Level, c.Key, policy, c.Queued, c.Running, limit, c.Ran, c.Panicked, c.Goexited,
			c.Dropped, c.Cancelled, c.Yielded, short(c.Wait.P50, c.Wait.Count), short(c.Wait.P99, c.Wait.Count),
			short(c.Run.P50, c.Run.Count), short(c.Run.P99, c.Run.Count))
	}
	tw.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

// short prints a duration with three significant digits, or "-" when
// nothing was timed.
func short(d time.Duration, n uint64) string {
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
