package jetstream

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The collector's metrics. Every metric is labelled client (the name given
// to NewCollector); a channel's are also labelled channel:
//
//	smartpool_jetstream_<event>_total{client,channel}                 counters, one per Stats counter
//	smartpool_jetstream_queued_messages, _held_messages, _parked_messages  gauges
//	smartpool_jetstream_dead_letters{client,channel}                  gauge: kept in the dead-letter stream now
//	smartpool_jetstream_connected{client}                             gauge: 1 while connected
//	smartpool_jetstream_disconnects_total, _reconnects_total          counters
//	smartpool_jetstream_disconnected_seconds_total                    counter
//	smartpool_jetstream_publish_retries_total                         counter
const collectorNS = "smartpool_jetstream"

var (
	jsChanLabels   = []string{"client", "channel"}
	jsClientLabels = []string{"client"}
)

func jsDesc(name, help string, labels []string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(collectorNS, "", name), help, labels, nil)
}

// chanCounters are a channel's counters, in the order of their Stats fields.
var chanCounters = []struct {
	desc *prometheus.Desc
	get  func(*Stats) uint64
}{
	{jsDesc("fetched_total", "Messages fetched from the stream.", jsChanLabels), func(s *Stats) uint64 { return s.Fetched }},
	{jsDesc("redelivered_total", "Fetched messages that had been delivered before, to any process.", jsChanLabels), func(s *Stats) uint64 { return s.Redelivered }},
	{jsDesc("acked_total", "Messages whose handler returned nil: acknowledged.", jsChanLabels), func(s *Stats) uint64 { return s.Acked }},
	{jsDesc("retried_total", "Runs that failed or timed out: the message is delivered again after a backoff.", jsChanLabels), func(s *Stats) uint64 { return s.Retried }},
	{jsDesc("timed_out_total", "Runs past their timeout (also counted as retried or dead-lettered).", jsChanLabels), func(s *Stats) uint64 { return s.TimedOut }},
	{jsDesc("dead_lettered_total", "Messages moved to the dead-letter stream by this process.", jsChanLabels), func(s *Stats) uint64 { return s.DeadLettered }},
	{jsDesc("passed_on_total", "Messages whose handler this process lacks, passed on to other processes.", jsChanLabels), func(s *Stats) uint64 { return s.PassedOn }},
	{jsDesc("queue_timed_out_total", "Messages that waited QueueTimeout in the local queue with no worker free: passed on to other processes.", jsChanLabels), func(s *Stats) uint64 { return s.QueueTimedOut }},
	{jsDesc("handed_back_total", "Messages returned to the stream unrun because the pool or the channel closed.", jsChanLabels), func(s *Stats) uint64 { return s.HandedBack }},
	{jsDesc("kept_alive_total", "In-progress signals sent for held messages.", jsChanLabels), func(s *Stats) uint64 { return s.KeptAlive }},
	{jsDesc("settle_errors_total", "Acknowledgements, retries or dead letters that failed to send: the server delivers the message again.", jsChanLabels), func(s *Stats) uint64 { return s.SettleErrors }},
	{jsDesc("acks_unconfirmed_total", "Acknowledgements not confirmed by the server: the message may run again.", jsChanLabels), func(s *Stats) uint64 { return s.AcksUnconfirmed }},
	{jsDesc("ack_retries_total", "With ConfirmAcks: acknowledgements sent again after an attempt went unanswered.", jsChanLabels), func(s *Stats) uint64 { return s.AckRetries }},
	{jsDesc("failover_checks_total", "Checks after a failover or a lost connection for deliveries that reached no process.", jsChanLabels), func(s *Stats) uint64 { return s.FailoverChecks }},
	{jsDesc("failover_naks_total", "Pending messages those checks asked to be delivered again unless kept alive.", jsChanLabels), func(s *Stats) uint64 { return s.FailoverNaks }},
	{jsDesc("fetch_errors_total", "Fetches that failed or went unanswered (lost connection, leader election).", jsChanLabels), func(s *Stats) uint64 { return s.FetchErrors }},
}

var (
	queuedMsgsDesc  = jsDesc("queued_messages", "Fetched messages in the channel's local queue.", jsChanLabels)
	heldMsgsDesc    = jsDesc("held_messages", "Messages fetched and not settled: queued, running, yielded or parked.", jsChanLabels)
	parkedMsgsDesc  = jsDesc("parked_messages", "Held messages whose handler this process lacks, waiting to be passed on.", jsChanLabels)
	deadLettersDesc = jsDesc("dead_letters", "Messages kept in the channel's dead-letter stream now, by every process (absent while the server does not answer).", jsChanLabels)
	connectedDesc   = jsDesc("connected", "1 while the client is connected to the server.", jsClientLabels)
	disconnectsDesc = jsDesc("disconnects_total", "Connections lost.", jsClientLabels)
	reconnectsDesc  = jsDesc("reconnects_total", "Connections regained.", jsClientLabels)
	downDesc        = jsDesc("disconnected_seconds_total", "Time spent without a connection, the current outage included.", jsClientLabels)
	retriesDesc     = jsDesc("publish_retries_total", "Publish attempts that failed and were tried again.", jsClientLabels)
	electionsDesc   = jsDesc("leader_elections_total", "Leaders the cluster elected for the client's channels' streams and consumers after they opened.", jsClientLabels)
	outagesDesc     = jsDesc("fetch_outages_total", "Times a channel's fetches began to fail (a leader election, a lost connection).", jsClientLabels)
)

// deadLetterScrape bounds the one server request a scrape makes per channel
// (the dead-letter stream's count).
const deadLetterScrape = time.Second

// Collector is a prometheus.Collector of a Client's connection and of the
// Stats of every Channel made from it, read when it is scraped: nothing is
// added to the message path. Besides the counters, a scrape asks the
// server for each channel's dead-letter count (at most a second each; the
// gauge is left out while the connection is down or the server does not
// answer). Register it with a prometheus.Registerer next to the pool's
// collector.
type Collector struct {
	name   string
	client *Client
}

// NewCollector returns a collector of c's connection and channels,
// labelled client=name; several clients need distinct names.
func NewCollector(name string, c *Client) *Collector {
	return &Collector{name: name, client: c}
}

// Describe sends the descriptors of every metric the collector exports.
func (col *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range chanCounters {
		ch <- c.desc
	}
	for _, d := range []*prometheus.Desc{queuedMsgsDesc, heldMsgsDesc, parkedMsgsDesc, deadLettersDesc,
		connectedDesc, disconnectsDesc, reconnectsDesc, downDesc, retriesDesc, electionsDesc, outagesDesc} {
		ch <- d
	}
}

// Collect sends the current value of every metric.
func (col *Collector) Collect(ch chan<- prometheus.Metric) {
	c := col.client
	cs := c.ConnStats()
	connected := 0.0
	if cs.Connected {
		connected = 1
	}
	ch <- prometheus.MustNewConstMetric(connectedDesc, prometheus.GaugeValue, connected, col.name)
	ch <- prometheus.MustNewConstMetric(disconnectsDesc, prometheus.CounterValue, float64(cs.Disconnects), col.name)
	ch <- prometheus.MustNewConstMetric(reconnectsDesc, prometheus.CounterValue, float64(cs.Reconnects), col.name)
	ch <- prometheus.MustNewConstMetric(downDesc, prometheus.CounterValue, cs.Disconnected.Seconds(), col.name)
	ch <- prometheus.MustNewConstMetric(retriesDesc, prometheus.CounterValue, float64(cs.PublishRetries), col.name)
	ch <- prometheus.MustNewConstMetric(electionsDesc, prometheus.CounterValue, float64(cs.LeaderElections), col.name)
	ch <- prometheus.MustNewConstMetric(outagesDesc, prometheus.CounterValue, float64(cs.FetchOutages), col.name)

	for _, cn := range col.channels() {
		name, s := cn.name, cn.stats
		for _, cc := range chanCounters {
			ch <- prometheus.MustNewConstMetric(cc.desc, prometheus.CounterValue, float64(cc.get(&s)), col.name, name)
		}
		ch <- prometheus.MustNewConstMetric(queuedMsgsDesc, prometheus.GaugeValue, float64(s.Queued), col.name, name)
		ch <- prometheus.MustNewConstMetric(heldMsgsDesc, prometheus.GaugeValue, float64(s.Held), col.name, name)
		ch <- prometheus.MustNewConstMetric(parkedMsgsDesc, prometheus.GaugeValue, float64(s.Parked), col.name, name)
		if !cs.Connected {
			continue // the request would only wait out its bound
		}
		ctx, cancel := context.WithTimeout(c.ctx, deadLetterScrape)
		n, err := c.DeadLetterCount(ctx, name)
		cancel()
		if err == nil {
			ch <- prometheus.MustNewConstMetric(deadLettersDesc, prometheus.GaugeValue, float64(n), col.name, name)
		}
	}
}

type namedStats struct {
	name  string
	stats Stats
}

// channels returns the Stats of the client's channels by name, in the
// order they were made; channels of one name (one process consuming a
// channel through two pools) are added up.
func (col *Collector) channels() []namedStats {
	c := col.client
	c.mu.Lock()
	chans := append([]*Channel(nil), c.channels...)
	c.mu.Unlock()
	var out []namedStats
	at := map[string]int{}
	for _, chn := range chans {
		s := chn.Stats()
		i, ok := at[chn.name]
		if !ok {
			at[chn.name] = len(out)
			out = append(out, namedStats{chn.name, s})
			continue
		}
		t := &out[i].stats
		t.Queued += s.Queued
		t.Held += s.Held
		t.Parked += s.Parked
		t.Fetched += s.Fetched
		t.Redelivered += s.Redelivered
		t.Acked += s.Acked
		t.Retried += s.Retried
		t.TimedOut += s.TimedOut
		t.DeadLettered += s.DeadLettered
		t.PassedOn += s.PassedOn
		t.QueueTimedOut += s.QueueTimedOut
		t.AckRetries += s.AckRetries
		t.FailoverChecks += s.FailoverChecks
		t.FailoverNaks += s.FailoverNaks
		t.HandedBack += s.HandedBack
		t.KeptAlive += s.KeptAlive
		t.SettleErrors += s.SettleErrors
		t.AcksUnconfirmed += s.AcksUnconfirmed
		t.FetchErrors += s.FetchErrors
	}
	return out
}
