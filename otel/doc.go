// Package otel instruments a smartpool pool with OpenTelemetry: a span per
// task, the pool's metrics through a meter, and the W3C trace context
// across processes through a JetStream channel's message headers. It is a
// module of its own, so that the core module does not depend on
// OpenTelemetry.
//
// Three lines instrument a pool:
//
//	cfg.Observe = otel.Observe[string]()                                   // a span per task
//	reg, err := otel.RegisterMetrics("api", owned.Pool(), nil)            // metrics from Pool.Stats
//	jetstream.ClientOptions{Propagator: otel.JetStreamPropagator(nil)}    // trace context in message headers
//
// # Spans
//
// Observe returns a smartpool.Config.Observe hook. Each task submitted with
// a context that carries a span (WithContext(ctx) from a request handler;
// Go and Group.Go with their contexts) gets a span, a child of that span,
// from its submit to its end, named by its channel's key, of kind
// internal, with the attributes
//
//	smartpool.channel   the key, printed with %v
//	smartpool.level     the channel's level (0 is the highest)
//	smartpool.wait      seconds from the submit to the start (0 if it never started)
//	smartpool.yields    how many times it gave its worker up to wait
//	smartpool.outcome   how it ended: ran, panicked, goexited, cancelled, dropped ... (smartpool.Outcome), or refused
//
// an event "start" as it starts, "yield" and "resume" for each wait, and
// for a panic the exception event (RecordError, with the stack) and status
// Error. A task that goexited, was dropped or was refused by its submit
// also ends with status Error; a cancelled one does not (its submitter
// chose to). The task runs with a context carrying its span, so that the
// spans it starts are its children. A task submitted without a span in its
// context gets no span, unless WithRootSpans; a task whose parent span is
// not sampled gets none either (the parent's decision is kept), and new
// root spans follow the TracerProvider's sampler: that, and WithFilter, is
// the sampling choice.
//
// # Metrics
//
// RegisterMetrics reads Pool.Stats once per collection through observable
// instruments, the same set the prometheus module exports (see
// RegisterMetrics for the names).
//
// # Across processes
//
// JetStreamPropagator adapts an OpenTelemetry TextMapPropagator (W3C trace
// context by default) to the jetstream module's ClientOptions.Propagator:
// a publish injects the publisher's span context into the message headers,
// and a task run from the message starts with a context extracted from
// them. The jetstream module depends on no OpenTelemetry package.
package otel
