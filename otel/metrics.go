package otel

import (
	"context"
	"errors"
	"fmt"

	"github.com/smartpool-go/smartpool"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// PoolKey is the attribute that names the pool on every metric.
const PoolKey = attribute.Key("smartpool.pool")

// RegisterMetrics registers observable instruments that read p.Stats once
// per collection, through mp's meter (nil: the global MeterProvider,
// go.opentelemetry.io/otel.GetMeterProvider), every one with the attribute
// smartpool.pool=name. Nothing is added to the pool's hot path. Unregister
// the returned Registration to stop; several pools need distinct names.
//
// The instruments are the prometheus module's metrics, named after
// OpenTelemetry's naming conventions (no semantic convention covers a
// worker pool; units are UCUM). Per channel, with smartpool.level and
// smartpool.channel (the key, printed with %v):
//
//	smartpool.task.count         counter, {task}, by smartpool.outcome: ran, panicked, goexited, cancelled, dropped_on_close, dropped_late, dropped_displaced, dropped_removed
//	smartpool.task.queued        updowncounter, {task}
//	smartpool.task.running       updowncounter, {task}
//	smartpool.task.yielded       updowncounter, {task}
//	smartpool.channel.cap        gauge, {slot}: MaxRunning or MaxInFlight, 0 if none
//	smartpool.channel.held       updowncounter, {slot}
//	smartpool.channel.paused     gauge, 1 while paused
//	smartpool.task.wait.time     counter, s: the summed queue waits of the timed tasks
//	smartpool.task.wait.timed    counter, {task}: how many were timed (Config.TimingEvery)
//	smartpool.task.run.time      counter, s: the summed run times of the timed tasks
//	smartpool.task.run.timed     counter, {task}
//
// Per pool:
//
//	smartpool.worker.count       updowncounter, {worker}: Workers
//	smartpool.worker.live        updowncounter, {worker}: with a goroutine now
//	smartpool.worker.busy        updowncounter, {worker}: running a task now
//	smartpool.worker.wakeups     counter, {wakeup}
//	smartpool.limit.units        gauge, {unit}: Config.Limit, 0 if none
//	smartpool.limit.admitted     updowncounter, {unit}
//	smartpool.stall.count        counter, {stall}
//	smartpool.stalled            gauge, 1 while a stall goes on
//
// An observable instrument cannot be a histogram: the wait and run
// distributions are exported as their sums and counts (a mean per
// interval); for the quantiles read Stats, the prometheus module, or the
// spans' smartpool.wait attribute.
func RegisterMetrics[K comparable](name string, p *smartpool.Pool[K], mp metric.MeterProvider) (metric.Registration, error) {
	if p == nil {
		return nil, fmt.Errorf("otel.RegisterMetrics(%q): a nil pool", name)
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(ScopeName)
	var err error
	counter := func(n, unit, desc string) metric.Int64ObservableCounter {
		c, e := m.Int64ObservableCounter(n, metric.WithUnit(unit), metric.WithDescription(desc))
		err = errors.Join(err, e)
		return c
	}
	fcounter := func(n, unit, desc string) metric.Float64ObservableCounter {
		c, e := m.Float64ObservableCounter(n, metric.WithUnit(unit), metric.WithDescription(desc))
		err = errors.Join(err, e)
		return c
	}
	updown := func(n, unit, desc string) metric.Int64ObservableUpDownCounter {
		c, e := m.Int64ObservableUpDownCounter(n, metric.WithUnit(unit), metric.WithDescription(desc))
		err = errors.Join(err, e)
		return c
	}
	gauge := func(n, unit, desc string) metric.Int64ObservableGauge {
		c, e := m.Int64ObservableGauge(n, metric.WithUnit(unit), metric.WithDescription(desc))
		err = errors.Join(err, e)
		return c
	}
	tasks := counter("smartpool.task.count", "{task}", "Tasks that left a channel, by outcome.")
	queued := updown("smartpool.task.queued", "{task}", "Tasks waiting in a channel.")
	running := updown("smartpool.task.running", "{task}", "Workers running one of a channel's tasks.")
	yielded := updown("smartpool.task.yielded", "{task}", "A channel's tasks that yielded and have not ended.")
	capSlots := gauge("smartpool.channel.cap", "{slot}", "A channel's MaxRunning or MaxInFlight cap, 0 if none.")
	held := updown("smartpool.channel.held", "{slot}", "Slots of a channel's cap held now.")
	paused := gauge("smartpool.channel.paused", "1", "1 while a channel is paused (Pool.Pause).")
	waitTime := fcounter("smartpool.task.wait.time", "s", "Summed queue waits of a channel's timed tasks: submit to start, re-entry to restart.")
	waitN := counter("smartpool.task.wait.timed", "{task}", "Queue waits timed (about one task in Config.TimingEvery).")
	runTime := fcounter("smartpool.task.run.time", "s", "Summed run times of a channel's timed tasks, start to end.")
	runN := counter("smartpool.task.run.timed", "{task}", "Run times timed (about one task in Config.TimingEvery).")
	workers := updown("smartpool.worker.count", "{worker}", "Workers the pool runs.")
	live := updown("smartpool.worker.live", "{worker}", "Workers with a goroutine now, running or parked.")
	busy := updown("smartpool.worker.busy", "{worker}", "Workers running a task now.")
	wakeups := counter("smartpool.worker.wakeups", "{wakeup}", "Parked workers woken for new work.")
	limit := gauge("smartpool.limit.units", "{unit}", "The pool's in-flight limit, 0 if none.")
	admitted := updown("smartpool.limit.admitted", "{unit}", "Units of the in-flight limit held now.")
	stalls := counter("smartpool.stall.count", "{stall}", "Stalls the watchdog noticed.")
	stalled := gauge("smartpool.stalled", "1", "1 while the last stall goes on.")
	if err != nil {
		return nil, fmt.Errorf("otel.RegisterMetrics(%q): %w", name, err)
	}
	pool := metric.WithAttributes(PoolKey.String(name))
	b2i := func(b bool) int64 {
		if b {
			return 1
		}
		return 0
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := p.Stats()
		o.ObserveInt64(workers, int64(s.Workers), pool)
		o.ObserveInt64(live, int64(s.Live), pool)
		o.ObserveInt64(busy, int64(s.Busy), pool)
		o.ObserveInt64(wakeups, int64(s.Wakeups), pool)
		o.ObserveInt64(limit, int64(s.Limit), pool)
		o.ObserveInt64(admitted, int64(s.Admitted), pool)
		o.ObserveInt64(stalls, int64(s.Stalls), pool)
		o.ObserveInt64(stalled, b2i(s.Stalled), pool)
		for _, cs := range s.Channels {
			attrs := []attribute.KeyValue{PoolKey.String(name), LevelKey.Int(cs.Level), ChannelKey.String(fmt.Sprint(cs.Key))}
			ch := metric.WithAttributes(attrs...)
			for _, oc := range []struct {
				name string
				n    uint64
			}{{"ran", cs.Ran}, {"panicked", cs.Panicked}, {"goexited", cs.Goexited}, {"cancelled", cs.Cancelled},
				{"dropped_on_close", cs.DroppedBy.OnClose}, {"dropped_late", cs.DroppedBy.Late},
				{"dropped_displaced", cs.DroppedBy.Displaced}, {"dropped_removed", cs.DroppedBy.Removed}} {
				o.ObserveInt64(tasks, int64(oc.n), metric.WithAttributes(append(attrs[:3:3], OutcomeKey.String(oc.name))...))
			}
			o.ObserveInt64(queued, int64(cs.Queued), ch)
			o.ObserveInt64(running, int64(cs.Running), ch)
			o.ObserveInt64(yielded, int64(cs.Yielded), ch)
			o.ObserveInt64(capSlots, int64(cs.Cap), ch)
			o.ObserveInt64(held, int64(cs.Held), ch)
			o.ObserveInt64(paused, b2i(cs.Paused), ch)
			o.ObserveFloat64(waitTime, cs.Wait.Sum.Seconds(), ch)
			o.ObserveInt64(waitN, int64(cs.Wait.Count), ch)
			o.ObserveFloat64(runTime, cs.Run.Sum.Seconds(), ch)
			o.ObserveInt64(runN, int64(cs.Run.Count), ch)
		}
		return nil
	}, tasks, queued, running, yielded, capSlots, held, paused, waitTime, waitN, runTime, runN,
		workers, live, busy, wakeups, limit, admitted, stalls, stalled)
	if err != nil {
		return nil, fmt.Errorf("otel.RegisterMetrics(%q): %w", name, err)
	}
	return reg, nil
}
