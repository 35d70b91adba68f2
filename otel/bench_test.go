package otel_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	spotel "github.com/smartpool-go/smartpool/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// The cost of the instrumentation on the benchmark suite's two cheapest
// workloads (benchmarks/): spawn-spam (empty tasks submitted from one
// goroutine) and cpu-light (tasks of about a microsecond of arithmetic),
// every task submitted WithContext(a request's context), with
//
//	plain      no Config.Observe
//	unsampled  Observe, the request's span not sampled: no task span
//	traced     Observe, every task a span, batched to a discarding exporter
//
// tasks/s is spans per second for traced. See README.md for the figures.

//go:noinline
func spin(n int) uint64 {
	x := uint64(n)
	for range n {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

var sink atomic.Uint64 // keeps spin from being optimised away

func benchPool(b *testing.B, mode string, work func()) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	cfg := smartpool.Config[string]{Workers: 2}
	if mode != "plain" {
		cfg.Observe = spotel.Observe[string](spotel.WithTracerProvider(tp))
	}
	jobs := channels.NewFIFO()
	owned, err := smartpool.New(smartpool.Levels[string]{{{Key: "jobs", Channel: jobs, CompleteOnClose: true}}}.With(cfg))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _, _ = owned.Close(context.Background()) }()
	ctx, span := tp.Tracer("bench").Start(context.Background(), "request")
	defer span.End()
	if mode == "unsampled" {
		ctx = trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}}))
	}
	var wg sync.WaitGroup
	task := func(context.Context) { work(); wg.Done() }
	opt := smartpool.WithContext(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	wg.Add(b.N)
	for range b.N {
		if err := jobs.Submit(task, opt); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
}

func BenchmarkSpawnSpam(b *testing.B) {
	for _, mode := range []string{"plain", "unsampled", "traced"} {
		b.Run(mode, func(b *testing.B) { benchPool(b, mode, func() {}) })
	}
}

func BenchmarkCPULight(b *testing.B) {
	// about a microsecond on the machine this was written on; the figure
	// that matters is the difference between the modes
	const iters = 1000
	for _, mode := range []string{"plain", "unsampled", "traced"} {
		b.Run(mode, func(b *testing.B) {
			benchPool(b, mode, func() {
				if spin(iters) == 0 {
					sink.Add(1)
				}
			})
		})
	}
}
