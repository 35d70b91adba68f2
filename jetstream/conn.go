package jetstream

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// connState counts the connection's losses and returns; the NATS client
// calls disconnected and reconnected on its own goroutine.
type connState struct {
	disconnects, reconnects atomic.Uint64
	elections, fetchOutages atomic.Uint64
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
	// LeaderElections counts the leaders a cluster elected for the streams
	// and consumers of this client's channels after they were opened (a
	// node stopped, a network split): meanwhile fetches and publishes wait.
	// Each is logged at Warn. Always 0 on a single server.
	LeaderElections uint64
	// FetchOutages counts the times a channel's fetches began to fail (a
	// leader election, a lost connection); each is logged at Warn when it
	// begins and at Info when fetches succeed again.
	FetchOutages uint64
}

// ConnStats returns a snapshot of the connection's counters.
func (c *Client) ConnStats() ConnStats {
	s := &c.conn
	down := time.Duration(s.downTotal.Load())
	if since := s.downSince.Load(); since != 0 {
		down += time.Since(time.Unix(0, since))
	}
	return ConnStats{Connected: c.connected(), Disconnects: s.disconnects.Load(), Reconnects: s.reconnects.Load(),
		Disconnected: down, PublishRetries: c.publishRetries.Load(), LeaderElections: s.elections.Load(),
		FetchOutages: s.fetchOutages.Load()}
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
	for _, ch := range c.openChannels() {
		ch.recoverLost() // deliveries the lost connection cut off (failover.go)
	}
}

// openChannels returns the channels made by c.
func (c *Client) openChannels() []*Channel {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Channel(nil), c.channels...)
}

// firstElection is how soon after its creation a stream's or consumer's
// leader election is its first, not a failover.
const firstElection = 3 * time.Second

// watchElections logs and counts the leader elections of the client's
// channels' streams and consumers, announced by the server's advisories. A
// client whose permissions forbid the advisory subjects sees none.
func (c *Client) watchElections() {
	for _, subj := range []string{"$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.>", "$JS.EVENT.ADVISORY.CONSUMER.LEADER_ELECTED.>"} {
		_, _ = c.nc.Subscribe(subj, c.elected)
	}
}

// elected handles one leader-elected advisory. The first election of a
// stream or consumer (the first this client sees, while it opens the
// channel or within firstElection of the asset's creation) is no failover
// and goes unreported.
func (c *Client) elected(m *nats.Msg) {
	var a struct {
		Stream, Consumer, Leader string
		Timestamp                time.Time
	}
	if json.Unmarshal(m.Data, &a) != nil {
		return
	}
	var channel string
	for _, prefix := range []string{"SMARTPOOL_DLQ_", "SMARTPOOL_PASS_", "SMARTPOOL_"} {
		if rest, ok := strings.CutPrefix(a.Stream, prefix); ok {
			channel = rest
			break
		}
	}
	if channel == "" {
		return // another application's
	}
	asset := a.Stream + "/" + a.Consumer
	c.mu.Lock()
	_, ok := c.streams[channel]
	created, known := c.created[asset]
	seen := c.leadersSeen[asset]
	c.leadersSeen[asset] = true
	c.mu.Unlock()
	if !ok || !seen && (!known || a.Timestamp.Sub(created) < firstElection) {
		return // a channel this client did not open, or the first election of a stream or consumer just made
	}
	c.conn.elections.Add(1)
	c.log.Warn("jetstream: the cluster elected a new leader; fetches and publishes of the channel waited meanwhile",
		"channel", channel, "stream", a.Stream, "consumer", a.Consumer, "leader", a.Leader)
	if a.Consumer != consumerName {
		return
	}
	for _, ch := range c.openChannels() {
		if ch.name == channel {
			ch.recoverLost() // deliveries the old leader made that reached no process (failover.go)
		}
	}
}
