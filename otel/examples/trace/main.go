// Command trace runs a request that submits three tasks to an instrumented
// pool, one of which yields, exports the spans to standard output with the
// OpenTelemetry SDK's stdout exporter, and then prints the trace tree.
//
//	go run ./examples/trace           (from the otel module)
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	spotel "github.com/smartpool-go/smartpool/otel"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func main() {
	if err := run(os.Stdout, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run writes the exported spans (JSON) to export and the tree to tree.
func run(export, tree io.Writer) error {
	exp, err := stdouttrace.New(stdouttrace.WithWriter(export), stdouttrace.WithPrettyPrint())
	if err != nil {
		return err
	}
	rec := tracetest.NewSpanRecorder() // for the tree printed at the end
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	fast, slow := channels.NewFIFO(), channels.NewFIFO()
	owned, err := smartpool.New(smartpool.Levels[string]{
		{{Key: "fast", Channel: fast, CompleteOnClose: true}},
		{{Key: "slow", Channel: slow, CompleteOnClose: true}},
	}.With(smartpool.Config[string]{Workers: 2,
		Observe: spotel.Observe[string](spotel.WithTracerProvider(tp))})) // the one line that traces the pool
	if err != nil {
		return err
	}
	pool := owned.Pool()

	// The request: its span is the parent of the three tasks' spans.
	ctx, req := tp.Tracer("example").Start(context.Background(), "GET /report")
	price, err := smartpool.Go(pool, "fast", func(ctx context.Context) (int, error) { return 42, nil }, smartpool.WithContext(ctx))
	if err != nil {
		return err
	}
	stock, err := smartpool.Go(pool, "fast", func(ctx context.Context) (int, error) {
		_, s := tp.Tracer("example").Start(ctx, "query stock") // a child of the task's span
		defer s.End()
		return 7, nil
	}, smartpool.WithContext(ctx))
	if err != nil {
		return err
	}
	report, err := smartpool.Go(pool, "slow", func(ctx context.Context) (string, error) {
		if err := smartpool.Sleep(ctx, time.Millisecond); err != nil { // gives its worker up while it sleeps
			return "", err
		}
		return "report", nil
	}, smartpool.WithContext(ctx))
	if err != nil {
		return err
	}
	for _, wait := range []func(context.Context) error{
		func(ctx context.Context) error { _, err := price.Wait(ctx); return err },
		func(ctx context.Context) error { _, err := stock.Wait(ctx); return err },
		func(ctx context.Context) error { _, err := report.Wait(ctx); return err },
	} {
		if err := wait(ctx); err != nil {
			return err
		}
	}
	req.End()
	if _, err := owned.Close(context.Background()); err != nil {
		return err
	}
	printTree(tree, rec.Ended())
	return nil
}

// printTree prints spans as a tree, children in start order, with each
// task span's outcome and events.
func printTree(w io.Writer, spans []sdktrace.ReadOnlySpan) {
	children := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		p := ""
		if s.Parent().IsValid() {
			p = s.Parent().SpanID().String()
		}
		children[p] = append(children[p], s)
	}
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		kids := children[parent]
		slices.SortStableFunc(kids, func(a, b sdktrace.ReadOnlySpan) int {
			if c := strings.Compare(a.Name(), b.Name()); c != 0 {
				return c
			}
			return a.StartTime().Compare(b.StartTime())
		})
		for _, s := range kids {
			line := strings.Repeat("  ", depth) + s.Name()
			for _, a := range s.Attributes() {
				if a.Key == spotel.OutcomeKey {
					line += " [" + a.Value.AsString() + "]"
				}
			}
			var ev []string
			for _, e := range s.Events() {
				ev = append(ev, e.Name)
			}
			if len(ev) > 0 {
				line += " " + strings.Join(ev, ",")
			}
			fmt.Fprintln(w, line)
			walk(s.SpanContext().SpanID().String(), depth+1)
		}
	}
	fmt.Fprintln(w, "trace tree:")
	walk("", 1)
}
