package smartpool_test

import (
	"context"
	"expvar"
	"fmt"
	"log/slog"
	"os"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// Timed is the observing examples' behavior: one FIFO, every task timed,
// lifecycle logs as text on standard output without times, unless Quiet.
type Timed struct {
	Jobs  *channels.FIFO
	Quiet bool
}

func (t *Timed) Config() smartpool.Config[string] {
	quiet := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}
	logger := slog.New(slog.NewTextHandler(os.Stdout, quiet))
	if t.Quiet {
		logger = slog.New(slog.DiscardHandler)
	}
	return smartpool.Config[string]{
		Workers:     1,
		TimingEvery: 1,
		Logger:      logger,
		Levels:      [][]smartpool.ChannelParams[string]{{{Key: "jobs", CompleteOnClose: true}}},
	}
}

func (t *Timed) Channel(string) smartpool.Channel { return t.Jobs }
func (t *Timed) Followup(k string) string         { return k }

// Every task is timed here (TimingEvery 1): the report has one queue wait
// and one run time per task, with their quantiles.
func ExampleChannelStats_timing() {
	owned, err := smartpool.New[string](&Timed{Jobs: channels.NewFIFO(), Quiet: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 3 {
		_ = owned.Pool().Submit("jobs", func(context.Context) {})
	}
	report, _ := owned.Close(context.Background())
	jobs, _ := report.Channel("jobs")
	fmt.Println("waits timed:", jobs.Wait.Count, "runs timed:", jobs.Run.Count, "p99 <= max:", jobs.Run.P99 <= jobs.Run.Max)
	// Output:
	// waits timed: 3 runs timed: 3 p99 <= max: true
}

// Publish serves the live stats under /debug/vars; a name is taken once.
func ExamplePool_Publish() {
	owned, err := smartpool.New[string](&Timed{Jobs: channels.NewFIFO()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer owned.Close(context.Background())
	fmt.Println(owned.Pool().Publish("example_jobs"))
	fmt.Println(expvar.Get("example_jobs") != nil)
	fmt.Println(owned.Pool().Publish("example_jobs"))
	// Output:
	// level=INFO msg="smartpool: pool started" workers=1 levels=1 channels=1
	// <nil>
	// true
	// smartpool: Publish: expvar name "example_jobs" is already published
	// level=INFO msg="smartpool: close begun" workers=1 queued=0 suspended=0
	// level=INFO msg="smartpool: pool closed" workers=1 ran=0 panicked=0 goexited=0 dropped=0 cancelled=0
}
