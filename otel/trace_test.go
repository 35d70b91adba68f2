package otel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	spotel "github.com/smartpool-go/smartpool/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is a pool of one worker with three channels, instrumented with a
// span recorder: "jobs" (FIFO, completes on close), "late" (Deadline with
// DropLate), "drop" (FIFO, dropped on close); gate holds the worker.
type rig struct {
	t      *testing.T
	rec    *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	owned  *smartpool.OwnedPool[string]
	p      *smartpool.Pool[string]
	jobs   *channels.FIFO
	late   *channels.Deadline
	drop   *channels.FIFO
	parent trace.Span
	ctx    context.Context        // carries parent
	ends   chan smartpool.Outcome // the endings of "drop" (its OnEnd)
}

func newRig(t *testing.T, opts ...spotel.Option) *rig {
	t.Helper()
	r := &rig{t: t, rec: tracetest.NewSpanRecorder(), jobs: channels.NewFIFO(), late: channels.NewDeadline(channels.DropLate()), drop: channels.NewFIFO(),
		ends: make(chan smartpool.Outcome, 8)}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.rec))
	t.Cleanup(func() { _ = r.tp.Shutdown(context.Background()) })
	owned, err := smartpool.New(smartpool.Levels[string]{{
		{Key: "jobs", Channel: r.jobs, CompleteOnClose: true},
		{Key: "late", Channel: r.late, CompleteOnClose: true},
		{Key: "drop", Channel: r.drop, OnEnd: func(_ smartpool.Task, o smartpool.Outcome) { r.ends <- o }},
	}}.With(smartpool.Config[string]{Workers: 1,
		PanicHandler: func(string, *smartpool.PanicError) {},
		Observe:      spotel.Observe[string](append([]spotel.Option{spotel.WithTracerProvider(r.tp)}, opts...)...)}))
	if err != nil {
		t.Fatal(err)
	}
	r.owned, r.p = owned, owned.Pool()
	r.ctx, r.parent = r.tp.Tracer("test").Start(context.Background(), "request")
	return r
}

// gate occupies the only worker until the returned func is called.
func (r *rig) gate() (release func()) {
	up, hold := make(chan struct{}), make(chan struct{})
	if err := r.jobs.Submit(func(context.Context) { close(up); <-hold }); err != nil {
		r.t.Fatal(err)
	}
	select {
	case <-up:
	case <-time.After(10 * time.Second):
		r.t.Fatal("the gate task never started")
	}
	return func() { close(hold) }
}

func (r *rig) close() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.owned.Close(ctx); err != nil {
		r.t.Fatal(err)
	}
	r.parent.End()
}

// spans returns the ended spans named name.
func (r *rig) spans(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// one returns the only ended span named name, a child of the request.
func (r *rig) one(name string) sdktrace.ReadOnlySpan {
	r.t.Helper()
	ss := r.spans(name)
	if len(ss) != 1 {
		r.t.Fatalf("%d spans named %q, want 1 (all: %v)", len(ss), name, names(r.rec.Ended()))
	}
	s := ss[0]
	if s.Parent().SpanID() != r.parent.SpanContext().SpanID() || s.SpanContext().TraceID() != r.parent.SpanContext().TraceID() {
		r.t.Errorf("span %q: parent %v in trace %v, want the request's span %v", name, s.Parent().SpanID(), s.SpanContext().TraceID(), r.parent.SpanContext().SpanID())
	}
	return s
}

func names(ss []sdktrace.ReadOnlySpan) []string {
	var n []string
	for _, s := range ss {
		n = append(n, s.Name())
	}
	return n
}

func attr(s sdktrace.ReadOnlySpan, k attribute.Key) attribute.Value {
	for _, a := range s.Attributes() {
		if a.Key == k {
			return a.Value
		}
	}
	return attribute.Value{}
}

func events(s sdktrace.ReadOnlySpan) []string {
	var n []string
	for _, e := range s.Events() {
		n = append(n, e.Name)
	}
	return n
}

// check checks a task's span: outcome, status, events.
func check(t *testing.T, s sdktrace.ReadOnlySpan, outcome string, status codes.Code, wantEvents ...string) {
	t.Helper()
	if got := attr(s, spotel.OutcomeKey).AsString(); got != outcome {
		t.Errorf("outcome %q, want %q", got, outcome)
	}
	if s.Status().Code != status {
		t.Errorf("status %v, want %v", s.Status().Code, status)
	}
	if got := events(s); len(got) != len(wantEvents) || len(got) > 0 && !equal(got, wantEvents) {
		t.Errorf("events %v, want %v", got, wantEvents)
	}
	if attr(s, spotel.ChannelKey).AsString() != s.Name() || attr(s, spotel.LevelKey).Type() != attribute.INT64 {
		t.Errorf("attributes %v: want smartpool.channel = the name, and smartpool.level", s.Attributes())
	}
}

func equal(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestSpanEndings(t *testing.T) {
	t.Run("ran", func(t *testing.T) {
		r := newRig(t)
		var child trace.SpanContext
		if err := r.jobs.Submit(func(ctx context.Context) {
			_, s := r.tp.Tracer("test").Start(ctx, "inner")
			child = s.SpanContext()
			s.End()
		}, smartpool.WithContext(r.ctx)); err != nil {
			t.Fatal(err)
		}
		r.close()
		s := r.one("jobs")
		check(t, s, "ran", codes.Unset, "start")
		inner := r.spans("inner")
		if len(inner) != 1 || inner[0].Parent().SpanID() != s.SpanContext().SpanID() || !child.IsValid() {
			t.Errorf("the span the task started is not the task span's child")
		}
		if attr(s, spotel.WaitKey).Type() != attribute.FLOAT64 || attr(s, spotel.YieldsKey).AsInt64() != 0 {
			t.Errorf("attributes %v", s.Attributes())
		}
	})
	t.Run("panicked", func(t *testing.T) {
		r := newRig(t)
		if err := r.jobs.Submit(func(context.Context) { panic("boom") }, smartpool.WithContext(r.ctx)); err != nil {
			t.Fatal(err)
		}
		r.close()
		s := r.one("jobs")
		check(t, s, "panicked", codes.Error, "start", "exception")
		var stack bool
		for _, a := range s.Events()[1].Attributes {
			stack = stack || a.Key == "exception.stacktrace" && a.Value.AsString() != ""
		}
		if !stack {
			t.Errorf("the exception event has no stack: %v", s.Events()[1].Attributes)
		}
	})
	t.Run("cancelled while queued", func(t *testing.T) {
		r := newRig(t)
		release := r.gate()
		ctx, cancel := context.WithCancel(r.ctx)
		if err := r.jobs.Submit(func(context.Context) { t.Error("a cancelled task ran") }, smartpool.WithContext(ctx)); err != nil {
			t.Fatal(err)
		}
		cancel()
		release()
		r.close()
		check(t, r.one("jobs"), "cancelled", codes.Unset, "cancelled")
	})
	t.Run("dropped late", func(t *testing.T) {
		r := newRig(t)
		if err := r.late.Submit(time.Now().Add(-time.Hour), func(context.Context) { t.Error("a late task ran") }, smartpool.WithContext(r.ctx)); err != nil {
			t.Fatal(err)
		}
		r.close()
		check(t, r.one("late"), "dropped late", codes.Error)
	})
	t.Run("dropped on close", func(t *testing.T) {
		r := newRig(t)
		release := r.gate()
		if err := r.drop.Submit(func(context.Context) { t.Error("a dropped task ran") }, smartpool.WithContext(r.ctx)); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); r.close() }()
		select { // Close drops the queued task, then waits for the gate
		case o := <-r.ends:
			if o != smartpool.DroppedOnClose {
				t.Errorf("OnEnd: %v", o)
			}
		case <-time.After(10 * time.Second):
			t.Error("Close dropped nothing")
		}
		release()
		<-done
		check(t, r.one("drop"), "dropped on close", codes.Error)
	})
	t.Run("yielded and resumed", func(t *testing.T) {
		r := newRig(t)
		if err := r.jobs.Submit(func(ctx context.Context) {
			smartpool.Yield(ctx, func() {})
		}, smartpool.WithContext(r.ctx)); err != nil {
			t.Fatal(err)
		}
		r.close()
		s := r.one("jobs")
		check(t, s, "ran", codes.Unset, "start", "yield", "resume")
		if n := attr(s, spotel.YieldsKey).AsInt64(); n != 1 {
			t.Errorf("smartpool.yields %d, want 1", n)
		}
	})
	t.Run("refused", func(t *testing.T) {
		r := newRig(t)
		ctx, cancel := context.WithCancel(r.ctx)
		cancel()
		if err := r.jobs.Submit(func(context.Context) {}, smartpool.WithContext(ctx)); !errors.Is(err, context.Canceled) {
			t.Fatalf("submit with an ended context: %v", err)
		}
		r.close()
		s := r.one("jobs")
		check(t, s, "refused", codes.Error, "exception")
	})
}

// Go and Group.Go: the submitter's span is the parent; a task without a
// span gets a root span only with WithRootSpans.
func TestSpanParents(t *testing.T) {
	r := newRig(t)
	f, err := smartpool.Go(r.p, "jobs", func(ctx context.Context) (int, error) { return 1, nil }, smartpool.WithContext(r.ctx))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Wait(r.ctx); err != nil {
		t.Fatal(err)
	}
	g := smartpool.NewGroup(r.ctx, r.p)
	var inGroup trace.SpanContext
	g.Go("drop", func(ctx context.Context) error {
		inGroup = trace.SpanContextFromContext(ctx)
		return nil
	})
	if err := g.Wait(r.ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.jobs.Submit(func(context.Context) {}); err != nil { // no context: no span
		t.Fatal(err)
	}
	r.close()
	r.one("jobs") // Go's; the plain submit has none
	gs := r.one("drop")
	if !inGroup.Equal(gs.SpanContext()) {
		t.Errorf("a group task's context carries %v, want its own span %v", inGroup.SpanID(), gs.SpanContext().SpanID())
	}

	roots := newRig(t, spotel.WithRootSpans())
	if err := roots.jobs.Submit(func(context.Context) {}); err != nil {
		t.Fatal(err)
	}
	roots.close()
	ss := roots.spans("jobs")
	if len(ss) != 1 || ss[0].Parent().IsValid() {
		t.Errorf("WithRootSpans: %d spans, want one root span", len(ss))
	}
}

// A parent that is not sampled keeps its task untraced; WithFilter skips.
func TestSampling(t *testing.T) {
	r := newRig(t, spotel.WithFilter(func(_ context.Context, key any, _ int) bool { return key != "drop" }))
	unsampled := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}}))
	if err := r.jobs.Submit(func(context.Context) {}, smartpool.WithContext(unsampled)); err != nil {
		t.Fatal(err)
	}
	if err := r.drop.Submit(func(context.Context) {}, smartpool.WithContext(r.ctx)); err != nil {
		t.Fatal(err)
	}
	if err := r.jobs.Submit(func(context.Context) {}, smartpool.WithContext(r.ctx)); err != nil {
		t.Fatal(err)
	}
	r.close()
	r.one("jobs") // the sampled one only
	if n := len(r.spans("drop")); n != 0 {
		t.Errorf("WithFilter: %d spans of a filtered channel", n)
	}
}
