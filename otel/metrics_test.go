package otel_test

import (
	"context"
	"testing"

	"github.com/smartpool-go/smartpool"
	spotel "github.com/smartpool-go/smartpool/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// point returns the int value of metric name at the data point whose
// attributes include want, and whether there is one.
func point(rm metricdata.ResourceMetrics, name string, want ...attribute.KeyValue) (float64, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			match := func(set attribute.Set) bool {
				for _, kv := range want {
					if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
						return false
					}
				}
				return true
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						return float64(p.Value), true
					}
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						return float64(p.Value), true
					}
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes) {
						return p.Value, true
					}
				}
			}
		}
	}
	return 0, false
}

// The metrics a manual reader collects are the pool's own Stats.
func TestMetricsMatchStats(t *testing.T) {
	r := newRig(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	reg, err := spotel.RegisterMetrics("api", r.p, mp)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Unregister() }()
	for range 20 {
		if err := r.jobs.Submit(func(context.Context) {}); err != nil {
			t.Fatal(err)
		}
	}
	_ = r.jobs.Submit(func(context.Context) { panic("boom") })
	ctx, cancel := context.WithCancel(context.Background())
	release := r.gate()
	_ = r.jobs.Submit(func(context.Context) {}, smartpool.WithContext(ctx))
	cancel()
	release()
	r.close()
	s := r.p.Stats()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	jobs, _ := s.Channel("jobs")
	pool := spotel.PoolKey.String("api")
	ch := spotel.ChannelKey.String("jobs")
	for _, c := range []struct {
		name  string
		attrs []attribute.KeyValue
		want  float64
	}{
		{"smartpool.task.count", []attribute.KeyValue{pool, ch, spotel.OutcomeKey.String("ran")}, float64(jobs.Ran)},
		{"smartpool.task.count", []attribute.KeyValue{pool, ch, spotel.OutcomeKey.String("panicked")}, float64(jobs.Panicked)},
		{"smartpool.task.count", []attribute.KeyValue{pool, ch, spotel.OutcomeKey.String("cancelled")}, float64(jobs.Cancelled)},
		{"smartpool.task.queued", []attribute.KeyValue{pool, ch}, float64(jobs.Queued)},
		{"smartpool.task.wait.timed", []attribute.KeyValue{pool, ch}, float64(jobs.Wait.Count)},
		{"smartpool.task.run.time", []attribute.KeyValue{pool, ch}, jobs.Run.Sum.Seconds()},
		{"smartpool.worker.count", []attribute.KeyValue{pool}, float64(s.Workers)},
		{"smartpool.worker.wakeups", []attribute.KeyValue{pool}, float64(s.Wakeups)},
		{"smartpool.limit.units", []attribute.KeyValue{pool}, float64(s.Limit)},
		{"smartpool.stall.count", []attribute.KeyValue{pool}, float64(s.Stalls)},
	} {
		got, ok := point(rm, c.name, c.attrs...)
		if !ok || got != c.want {
			t.Errorf("%s %v = %v (found %v), Stats say %v", c.name, c.attrs, got, ok, c.want)
		}
	}
	if jobs.Ran < 21 || jobs.Panicked != 1 || jobs.Cancelled != 1 {
		t.Errorf("the run itself: %+v", jobs)
	}
	if _, err := spotel.RegisterMetrics[string]("nil", nil, mp); err == nil {
		t.Errorf("RegisterMetrics of a nil pool: no error")
	}
}
