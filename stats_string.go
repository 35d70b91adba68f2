package smartpool

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/smartpool-go/smartpool/internal/show"
)

// String prints the stats as a small table: a line of pool figures (stalls
// only if there were any), then one row per channel, levels top to bottom.
// Keys print with %v.
func (s *Stats[K]) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workers %d (live %d, busy %d)  rate %.1f/s  wakeups %d  suspended %d", s.Workers, s.Live, s.Busy, s.Rate, s.Wakeups, s.Suspended)
	if s.Limit > 0 {
		fmt.Fprintf(&b, "  limit %d (admitted %d, waiting %d)", s.Limit, s.Admitted, s.Waiting)
	}
	if s.Stalls > 0 {
		fmt.Fprintf(&b, "  stalls %d", s.Stalls)
		if s.Stalled {
			b.WriteString(" (stalled now)")
		}
	}
	b.WriteByte('\n')
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "level\tchannel\ton close\tpaused\tqueued\trunning\tcap\tran\tpanicked\tgoexited\tdropped\tcancelled\tyielded\twait p50\tp99\trun p50\tp99\t")
	for _, c := range s.Channels {
		policy, limit, paused := "drop", "-", "-"
		if c.Paused {
			paused = "yes"
		}
		if c.CompleteOnClose {
			policy = "complete"
		}
		if c.Cap > 0 {
			limit = fmt.Sprintf("%d/%d", c.Held, c.Cap)
		}
		fmt.Fprintf(tw, "%d\t%v\t%s\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t\n",
			c.Level, c.Key, policy, paused, c.Queued, c.Running, limit, c.Ran, c.Panicked, c.Goexited,
			c.Dropped, c.Cancelled, c.Yielded, show.Duration(c.Wait.P50, c.Wait.Count), show.Duration(c.Wait.P99, c.Wait.Count),
			show.Duration(c.Run.P50, c.Run.Count), show.Duration(c.Run.P99, c.Run.Count))
	}
	tw.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}
