package otel_test

import (
	"context"
	"fmt"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	spotel "github.com/smartpool-go/smartpool/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// A task submitted from a request's span gets a span of its own, a child
// of the request's, with its channel, wait, yields and outcome.
func ExampleObserve() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	jobs := channels.NewFIFO()
	owned, _ := smartpool.New(smartpool.Levels[string]{{{Key: "jobs", Channel: jobs, CompleteOnClose: true}}}.
		With(smartpool.Config[string]{Observe: spotel.Observe[string](spotel.WithTracerProvider(tp))}))

	ctx, req := tp.Tracer("example").Start(context.Background(), "request")
	_ = jobs.Submit(func(ctx context.Context) {
		_ = smartpool.Sleep(ctx, 0) // yields, and re-enters
	}, smartpool.WithContext(ctx))
	_, _ = owned.Close(context.Background())
	req.End()

	for _, s := range rec.Ended() {
		if s.Name() != "jobs" {
			continue
		}
		fmt.Println("span:", s.Name(), "child of the request:", s.Parent().SpanID() == req.SpanContext().SpanID())
		for _, a := range s.Attributes() {
			if a.Key == spotel.OutcomeKey || a.Key == spotel.YieldsKey {
				fmt.Println(a.Key, "=", a.Value.String())
			}
		}
		for _, e := range s.Events() {
			fmt.Println("event:", e.Name)
		}
	}
	// Output:
	// span: jobs child of the request: true
	// smartpool.yields = 1
	// smartpool.outcome = ran
	// event: start
	// event: yield
	// event: resume
}

// The pool's Stats through an OpenTelemetry meter.
func ExampleRegisterMetrics() {
	jobs := channels.NewFIFO()
	owned, _ := smartpool.New(smartpool.Levels[string]{{{Key: "jobs", Channel: jobs, CompleteOnClose: true}}})
	reader := sdkmetric.NewManualReader()
	reg, err := spotel.RegisterMetrics("api", owned.Pool(), sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = reg.Unregister() }()
	_ = jobs.Submit(func(context.Context) {})
	_, _ = owned.Close(context.Background())

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != "smartpool.task.count" {
			continue
		}
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			if o, _ := p.Attributes.Value(spotel.OutcomeKey); o.AsString() == "ran" {
				fmt.Println(m.Name, "ran:", p.Value)
			}
		}
	}
	// Output:
	// smartpool.task.count ran: 1
}

// The W3C trace context in a message's headers: jetstream.Options'
// Propagator injects it at Publish and extracts it before the handler.
func ExampleJetStreamPropagator() {
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("example").Start(context.Background(), "publish")
	defer span.End()
	prop := spotel.JetStreamPropagator(nil)

	header := map[string][]string{} // a nats.Header on the wire
	prop.Inject(ctx, header)
	fmt.Println("headers:", len(header["Traceparent"]))

	got := prop.Extract(context.Background(), header) // in the other process
	fmt.Println("same trace:", spanContext(got).TraceID() == span.SpanContext().TraceID())
	// Output:
	// headers: 1
	// same trace: true
}

func spanContext(ctx context.Context) trace.SpanContext { return trace.SpanContextFromContext(ctx) }
