package jetstream

import (
	"context"
	"fmt"
	"strconv"

	"github.com/smartpool-go/smartpool/statuspage"
)

// StatusSection returns the figures of c for the pool's live page
// (statuspage.Options.Sections): the connection, and per channel the
// messages held, acked, retried, timed out and dead-lettered by this
// process, and the dead letters kept on the server. An outage and dead
// letters waiting are highlighted. It asks the server for each channel's
// dead-letter count, at most a second each, and skips that while
// disconnected.
//
//	statuspage.Handler(pool, statuspage.Options{Sections: func() []statuspage.Section {
//		return []statuspage.Section{client.StatusSection()}
//	}})
func (c *Client) StatusSection() statuspage.Section {
	cs := c.ConnStats()
	conn := "connected"
	if !cs.Connected {
		conn = "disconnected"
	}
	sec := statuspage.Section{Title: "JetStream", Rows: []statuspage.Row{
		{Name: "connection", Value: fmt.Sprintf("%s (disconnects %d, reconnects %d, down %v)", conn, cs.Disconnects, cs.Reconnects, cs.Disconnected.Round(1e6)), Alert: !cs.Connected},
	}}
	col := Collector{client: c}
	for _, cn := range col.channels() {
		s := cn.stats
		sec.Rows = append(sec.Rows, statuspage.Row{Name: cn.name,
			Value: fmt.Sprintf("held %d, acked %d, retried %d, timed out %d, dead-lettered %d", s.Held, s.Acked, s.Retried, s.TimedOut, s.DeadLettered)})
		if !cs.Connected {
			continue
		}
		ctx, cancel := context.WithTimeout(c.ctx, deadLetterScrape)
		n, err := c.DeadLetterCount(ctx, cn.name)
		cancel()
		row := statuspage.Row{Name: cn.name + " dead letters", Value: strconv.FormatUint(n, 10), Alert: n > 0}
		if err != nil {
			row.Value, row.Alert = "unknown: "+err.Error(), true
		}
		sec.Rows = append(sec.Rows, row)
	}
	return sec
}
