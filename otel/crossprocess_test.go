package otel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/jetstream"
	spotel "github.com/smartpool-go/smartpool/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// jsPool is a pool with one JetStream channel, "work".
type jsPool struct{ ch *jetstream.Channel }

func (s jsPool) Config() smartpool.Config[string] {
	return smartpool.Config[string]{Workers: 2, Levels: [][]smartpool.ChannelParams[string]{{{Key: "work", CompleteOnClose: true}}}}
}
func (s jsPool) Channel(string) smartpool.Channel { return s.ch }
func (s jsPool) Followup(k string) string         { return k }

// A task published by one client (process A) and run by another (process
// B, on the same embedded server) is one trace: the handler's span is a
// child of the publisher's, also when it runs from the dead-letter copy
// Replay publishes.
func TestAcrossProcesses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prop := spotel.JetStreamPropagator(nil)
	a, err := jetstream.Embedded(ctx, jetstream.EmbeddedOptions{Dir: t.TempDir(), Listen: "127.0.0.1:0",
		Client: jetstream.Options{Propagator: prop}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := jetstream.Connect(ctx, a.URL(), jetstream.Options{Propagator: prop})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ran := make(chan trace.SpanContext, 4)
	reg := jetstream.NewRegistry()
	if err := reg.Handle("step", func(ctx context.Context, payload []byte) error {
		_, span := tp.Tracer("b").Start(ctx, "handle "+string(payload))
		span.End()
		ran <- span.SpanContext()
		if string(payload) == "fail" {
			return jetstream.Permanent(errors.New("refused for the test"))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ch, err := b.Channel(ctx, "work", reg, jetstream.ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned, err := smartpool.New[string](jsPool{ch})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = owned.Close(ctx) }()

	reqCtx, req := tp.Tracer("a").Start(ctx, "request")
	defer req.End()
	wait := func(what string) trace.SpanContext {
		t.Helper()
		select {
		case sc := <-ran:
			return sc
		case <-ctx.Done():
			t.Fatalf("%s: the handler never ran", what)
		}
		return trace.SpanContext{}
	}
	same := func(what string, sc trace.SpanContext) {
		t.Helper()
		if sc.TraceID() != req.SpanContext().TraceID() {
			t.Errorf("%s: the handler's span is in trace %v, the publisher's in %v", what, sc.TraceID(), req.SpanContext().TraceID())
		}
		for _, s := range rec.Ended() {
			if s.SpanContext().SpanID() == sc.SpanID() && s.Parent().SpanID() != req.SpanContext().SpanID() {
				t.Errorf("%s: the handler's span's parent is %v, want the publisher's span %v", what, s.Parent().SpanID(), req.SpanContext().SpanID())
			}
		}
	}
	if _, err := a.Publish(reqCtx, "work", "step", []byte("ok")); err != nil {
		t.Fatal(err)
	}
	same("a published task", wait("a published task"))

	if _, err := a.Publish(reqCtx, "work", "step", []byte("fail")); err != nil {
		t.Fatal(err)
	}
	same("a task dead-lettered", wait("a task dead-lettered"))
	var dead []jetstream.DeadLetter
	for ctx.Err() == nil && len(dead) == 0 { // the dead letter is stored after the handler returned: look until it is
		dead, _ = a.DeadLetters(ctx, "work", 0, 1)
		if len(dead) == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	if len(dead) != 1 {
		t.Fatalf("no dead letter")
	}
	if _, err := a.Replay(context.Background(), "work", dead[0].Sequence); err != nil { // a context without a span: the copy's headers carry it
		t.Fatal(err)
	}
	same("its replayed dead letter", wait("its replayed dead letter"))
}
