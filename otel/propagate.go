package otel

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// HeaderPropagator carries OpenTelemetry context in message headers: it is
// a jetstream.Propagator (Options.Propagator of the jetstream module) made
// of a TextMapPropagator. A NATS header and an http.Header share their
// underlying type, map[string][]string, so the headers are read and written
// as propagation.HeaderCarrier does (canonical keys: "Traceparent").
// Safe for concurrent use.
type HeaderPropagator struct {
	p propagation.TextMapPropagator
}

// JetStreamPropagator returns a HeaderPropagator of p; nil means W3C trace
// context and baggage (propagation.TraceContext and propagation.Baggage).
// Pass it as jetstream.Options.Propagator, on the publishing and on the
// running side, so that a task published in one process and run in
// another is one trace.
func JetStreamPropagator(p propagation.TextMapPropagator) HeaderPropagator {
	if p == nil {
		p = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	return HeaderPropagator{p: p}
}

// GlobalJetStreamPropagator returns a HeaderPropagator of the global
// TextMapPropagator (otel.GetTextMapPropagator), read on every call.
func GlobalJetStreamPropagator() HeaderPropagator { return HeaderPropagator{} }

func (h HeaderPropagator) prop() propagation.TextMapPropagator {
	if h.p == nil {
		return otel.GetTextMapPropagator()
	}
	return h.p
}

// Inject writes ctx's trace context into header.
func (h HeaderPropagator) Inject(ctx context.Context, header map[string][]string) {
	h.prop().Inject(ctx, propagation.HeaderCarrier(http.Header(header)))
}

// Extract returns ctx with the trace context header carries: the spans a
// handler starts from it are children of the publisher's span.
func (h HeaderPropagator) Extract(ctx context.Context, header map[string][]string) context.Context {
	return h.prop().Extract(ctx, propagation.HeaderCarrier(http.Header(header)))
}
