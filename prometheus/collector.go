// Package prometheus exports a smartpool pool's Stats as Prometheus metrics.
// It is a module of its own, so that the core module does not depend on
// prometheus/client_golang.
//
// The Collector reads Stats when it is scraped: nothing is added to the
// pool's hot path. Every metric is labelled pool (the name given to
// NewCollector); per-channel metrics also level ("0" is the highest) and
// channel (the key, printed with %v):
//
//	smartpool_tasks_total{outcome="ran|panicked|goexited|cancelled|dropped_*"}  counter
//	smartpool_queued_tasks, smartpool_running_tasks, smartpool_yielded_tasks  gauges
//	smartpool_cap_slots, smartpool_held_slots                                 gauges (MaxRunning/MaxInFlight)
//	smartpool_channel_paused                                                  gauge: 1 while Pool.Pause holds the channel
//	smartpool_start_rate_per_second, smartpool_start_rate_burst               gauges, only for a channel with a rate (smartpool.Rate)
//	smartpool_throttled_total                                                 counter: takes that found no token
//	smartpool_queue_wait_seconds, smartpool_run_seconds                       histograms
//	smartpool_workers, smartpool_live_workers, smartpool_busy_workers         gauges (pool)
//	smartpool_wakeups_total                                                   counter (pool)
//	smartpool_limit_units, smartpool_admitted_units                           gauges (pool, Config.Limit)
//	smartpool_stalls_total                                                    counter (pool, Config.StallAfter)
//	smartpool_stalled                                                         gauge (pool): 1 while a stall goes on
//
// A drop's outcome names its cause: dropped_on_close, dropped_late,
// dropped_displaced, dropped_removed (smartpool.Drops), so that a deadline
// service can chart the tasks it dropped because they were late; the drops
// of all causes sum as sum(smartpool_tasks_total{outcome=~"dropped_.*"}).
// That is 8 series of smartpool_tasks_total per channel.
//
// The histograms hold the tasks the pool timed: with sampling
// (smartpool.Config.TimingEvery) their _count is about one task in n, while
// their quantiles stay representative; use smartpool_tasks_total for rates.
package prometheus

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/smartpool-go/smartpool"
)

const ns = "smartpool"

var (
	chanLabels = []string{"pool", "level", "channel"}
	poolLabels = []string{"pool"}
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(ns, "", name), help, labels, nil)
}

var (
	tasksDesc    = desc("tasks_total", "Tasks that left a channel, by outcome.", append(chanLabels[:3:3], "outcome")...)
	queuedDesc   = desc("queued_tasks", "Tasks waiting in a channel.", chanLabels...)
	runningDesc  = desc("running_tasks", "Workers running one of a channel's tasks.", chanLabels...)
	yieldedDesc  = desc("yielded_tasks", "A channel's tasks that yielded and have not ended.", chanLabels...)
	capDesc      = desc("cap_slots", "A channel's MaxRunning or MaxInFlight cap, 0 if none.", chanLabels...)
	heldDesc     = desc("held_slots", "Slots of a channel's cap held now.", chanLabels...)
	pausedDesc   = desc("channel_paused", "1 while a channel is paused (Pool.Pause): it queues tasks and starts none.", chanLabels...)
	rateDesc     = desc("start_rate_per_second", "A channel's start rate (ChannelParams.Rate, Pool.SetRate); 0: it starts none; absent: no rate.", chanLabels...)
	burstDesc    = desc("start_rate_burst", "The burst of a channel's start rate; absent: no rate.", chanLabels...)
	throttleDesc = desc("throttled_total", "Times a worker found a channel without a start token and left it to the rate timer.", chanLabels...)
	waitDesc     = desc("queue_wait_seconds", "Queue wait of a channel's timed tasks: submit to start, re-entry to restart.", chanLabels...)
	runDesc      = desc("run_seconds", "Run time of a channel's timed tasks, start to end.", chanLabels...)
	workersDesc  = desc("workers", "Workers the pool runs.", poolLabels...)
	liveDesc     = desc("live_workers", "Workers with a goroutine now, running or parked: they start on need and end when idle.", poolLabels...)
	busyDesc     = desc("busy_workers", "Workers running a task now.", poolLabels...)
	wakeupsDesc  = desc("wakeups_total", "Parked workers woken for new work.", poolLabels...)
	limitDesc    = desc("limit_units", "The pool's in-flight limit, 0 if none.", poolLabels...)
	admittedDesc = desc("admitted_units", "Units of the in-flight limit held now.", poolLabels...)
	stallsDesc   = desc("stalls_total", "Stalls the watchdog noticed: every worker busy, work queued and no task ended for StallAfter.", poolLabels...)
	stalledDesc  = desc("stalled", "1 while the last stall goes on: the pool has not moved on since.", poolLabels...)
)

// Collector is a prometheus.Collector of one pool's Stats.
type Collector[K comparable] struct {
	name string
	pool *smartpool.Pool[K]
}

// NewCollector returns a collector of p's stats, labelled pool=name.
// Register it with a prometheus.Registerer; several pools need distinct
// names.
func NewCollector[K comparable](name string, p *smartpool.Pool[K]) *Collector[K] {
	return &Collector[K]{name: name, pool: p}
}

// Describe sends the descriptors of every metric the collector exports.
func (c *Collector[K]) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{tasksDesc, queuedDesc, runningDesc, yieldedDesc, capDesc, heldDesc, pausedDesc,
		rateDesc, burstDesc, throttleDesc, waitDesc, runDesc, workersDesc, liveDesc, busyDesc, wakeupsDesc, limitDesc, admittedDesc, stallsDesc, stalledDesc} {
		ch <- d
	}
}

// Collect reads the pool's Stats once and sends its metrics.
func (c *Collector[K]) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(workersDesc, float64(s.Workers), c.name)
	gauge(liveDesc, float64(s.Live), c.name)
	gauge(busyDesc, float64(s.Busy), c.name)
	gauge(limitDesc, float64(s.Limit), c.name)
	gauge(admittedDesc, float64(s.Admitted), c.name)
	ch <- prometheus.MustNewConstMetric(wakeupsDesc, prometheus.CounterValue, float64(s.Wakeups), c.name)
	ch <- prometheus.MustNewConstMetric(stallsDesc, prometheus.CounterValue, float64(s.Stalls), c.name)
	stalled := 0.0
	if s.Stalled {
		stalled = 1
	}
	gauge(stalledDesc, stalled, c.name)
	for _, cs := range s.Channels {
		l := []string{c.name, strconv.Itoa(cs.Level), fmt.Sprint(cs.Key)}
		for _, o := range []struct {
			name string
			n    uint64
		}{{"ran", cs.Ran}, {"panicked", cs.Panicked}, {"goexited", cs.Goexited}, {"cancelled", cs.Cancelled},
			{"dropped_on_close", cs.DroppedBy.OnClose}, {"dropped_late", cs.DroppedBy.Late},
			{"dropped_displaced", cs.DroppedBy.Displaced}, {"dropped_removed", cs.DroppedBy.Removed}} {
			ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.CounterValue, float64(o.n), append(l, o.name)...)
		}
		gauge(queuedDesc, float64(cs.Queued), l...)
		gauge(runningDesc, float64(cs.Running), l...)
		gauge(yieldedDesc, float64(cs.Yielded), l...)
		gauge(capDesc, float64(cs.Cap), l...)
		gauge(heldDesc, float64(cs.Held), l...)
		paused := 0.0
		if cs.Paused {
			paused = 1
		}
		gauge(pausedDesc, paused, l...)
		if cs.Rate != (smartpool.Rate{}) {
			gauge(rateDesc, cs.Rate.PerSecond, l...)
			gauge(burstDesc, float64(cs.Rate.Burst), l...)
		}
		ch <- prometheus.MustNewConstMetric(throttleDesc, prometheus.CounterValue, float64(cs.Throttled), l...)
		ch <- histogram(waitDesc, cs.Wait, l)
		ch <- histogram(runDesc, cs.Run, l)
	}
}

// bounds are the bucket bounds of every smartpool Timing, for a histogram
// with nothing recorded yet: powers of two of nanoseconds, 1.024µs to 68.7s.
var bounds = func() []time.Duration {
	var b []time.Duration
	for e := 10; e <= 36; e++ {
		b = append(b, time.Duration(1)<<e)
	}
	return b
}()

func histogram(d *prometheus.Desc, t smartpool.Timing, labels []string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(bounds))
	for _, le := range bounds {
		buckets[le.Seconds()] = 0
	}
	for _, b := range t.Buckets {
		buckets[b.Le.Seconds()] = b.Count
	}
	return prometheus.MustNewConstHistogram(d, t.Count, t.Sum.Seconds(), buckets, labels...)
}
