package jetstream

import (
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// connState counts the connection's losses and returns; the NATS client
// calls disconnected and reconnected on its own goroutine.
type connState struct {
	disconnects, reconnects atomic.Uint64
	downSince               atomic.Int64 // Unix nanoseconds of the current outage; 0 while connected
	downTotal               atomic.Int64 // nanoseconds without a connection, outages that ended
}

// ConnStats describes the client's connection.
type ConnStats struct {
	Connected      bool          // connected now
	Disconnects    uint64        // connections lost
	Reconnects     uint64        // connections regained
	Disconnected   time.Duration // time spent without a connection, the current outage included
	PublishRetries uint64        // publish attempts that failed and were tried again
}

// ConnStats returns a snapshot of the connection's counters.
func (c *Client) ConnStats() ConnStats {
	s := &c.conn
	down := time.Duration(s.downTotal.Load())
	if since := s.downSince.Load(); since != 0 {
		down += time.Since(time.Unix(0, since))
	}
	return ConnStats{Connected: c.connected(), Disconnects: s.disconnects.Load(), Reconnects: s.reconnects.Load(),
		Disconnected: down, PublishRetries: c.publishRetries.Load()}
}

// connected reports whether the connection is up.
func (c *Client) connected() bool { return c.nc.Status() == nats.CONNECTED }

func (c *Client) disconnected(_ *nats.Conn, err error) {
	c.mu.Lock()
	closing := c.closed
	c.mu.Unlock()
	if closing {
		return // our own Close
	}
	c.conn.disconnects.Add(1)
	c.conn.downSince.CompareAndSwap(0, time.Now().UnixNano())
	c.log.Warn("jetstream: connection lost; fetches stop and acknowledgements are buffered until it returns", "err", err)
}

func (c *Client) reconnected(nc *nats.Conn) {
	c.conn.reconnects.Add(1)
	var down time.Duration
	if since := c.conn.downSince.Swap(0); since != 0 {
		down = time.Since(time.Unix(0, since))
		c.conn.downTotal.Add(int64(down))
	}
	c.log.Info("jetstream: connection back", "url", nc.ConnectedUrlRedacted(), "down", down.Round(time.Millisecond))
}
