package otel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/smartpool-go/smartpool"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/smartpool-go/smartpool/otel"

// The attribute keys of a task's span.
const (
	ChannelKey = attribute.Key("smartpool.channel")
	LevelKey   = attribute.Key("smartpool.level")
	WaitKey    = attribute.Key("smartpool.wait")
	YieldsKey  = attribute.Key("smartpool.yields")
	OutcomeKey = attribute.Key("smartpool.outcome")
)

// Option configures Observe.
type Option func(*config)

type config struct {
	tp     trace.TracerProvider
	roots  bool
	filter func(ctx context.Context, key any, level int) bool
}

// WithTracerProvider sets the TracerProvider the spans come from; the
// default is the global one (go.opentelemetry.io/otel.GetTracerProvider),
// read once, when Observe is called.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithRootSpans gives a task submitted without a span in its context (no
// WithContext, or a context without a span) a root span of its own; the
// default gives it none, and it costs nothing then.
func WithRootSpans() Option {
	return func(c *config) { c.roots = true }
}

// WithFilter traces only the tasks for which keep returns true, called on
// the submitting goroutine with the submit's context (nil without one),
// the channel's key and level. A task it skips costs one call and nothing
// more. It must not block.
func WithFilter(keep func(ctx context.Context, key any, level int) bool) Option {
	return func(c *config) { c.filter = keep }
}

// Observe returns a hook for smartpool.Config.Observe that makes each task
// of the pool a span (see the package documentation). The hook may serve
// several pools; it is safe for concurrent use.
func Observe[K comparable](opts ...Option) func(ctx context.Context, key K, level int) smartpool.TaskObserver {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	tracer := c.tp.Tracer(ScopeName)
	return func(ctx context.Context, key K, level int) smartpool.TaskObserver {
		if c.filter != nil && !c.filter(ctx, key, level) {
			return nil
		}
		parent := trace.SpanContextFromContext(ctx) // a nil ctx has none
		switch {
		case parent.IsValid() && !parent.IsSampled():
			return nil // the parent's decision: not traced
		case !parent.IsValid() && !c.roots:
			return nil
		case ctx == nil:
			ctx = context.Background()
		}
		now := time.Now()
		name := fmt.Sprint(key)
		_, span := tracer.Start(ctx, name, trace.WithTimestamp(now), trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(ChannelKey.String(name), LevelKey.Int(level)))
		if !span.IsRecording() {
			span.End()
			return nil // sampled out: the task runs untraced
		}
		return &taskSpan{span: span, submitted: now}
	}
}

// taskSpan is one task's TaskObserver. The pool calls its methods one at
// a time (smartpool.TaskObserver), so its fields need no lock.
type taskSpan struct {
	span      trace.Span
	submitted time.Time
	started   time.Time
	yields    int
}

// ErrRefused is the error a task's span records when its submit failed
// (the zero Outcome): wrapped around the submit's error.
var ErrRefused = errors.New("smartpool: submit refused")

func (s *taskSpan) Start(ctx context.Context) context.Context {
	s.started = time.Now()
	s.span.AddEvent("start", trace.WithTimestamp(s.started))
	return trace.ContextWithSpan(ctx, s.span)
}

func (s *taskSpan) Yield() {
	s.yields++
	s.span.AddEvent("yield")
}

func (s *taskSpan) Resume() { s.span.AddEvent("resume") }

func (s *taskSpan) End(o smartpool.Outcome, err error) {
	wait := 0.0
	if !s.started.IsZero() {
		wait = s.started.Sub(s.submitted).Seconds()
	}
	outcome := o.String()
	if o == 0 {
		outcome = "refused"
	}
	s.span.SetAttributes(WaitKey.Float64(wait), YieldsKey.Int(s.yields), OutcomeKey.String(outcome))
	var pe *smartpool.PanicError
	switch {
	case o == smartpool.Panicked && errors.As(err, &pe):
		s.span.RecordError(err, trace.WithAttributes(attribute.String("exception.stacktrace", string(pe.Stack))))
		s.span.SetStatus(codes.Error, "panicked")
	case o == 0:
		s.span.RecordError(fmt.Errorf("%w: %w", ErrRefused, err))
		s.span.SetStatus(codes.Error, outcome)
	case o == smartpool.Cancelled:
		if err != nil {
			s.span.AddEvent("cancelled", trace.WithAttributes(attribute.String("error", err.Error())))
		}
	case o != smartpool.Ran:
		s.span.SetStatus(codes.Error, outcome)
	}
	s.span.End()
}
