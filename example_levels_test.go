package smartpool_test

import (
	"context"
	"fmt"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// A one-level pool without a type of its own.
func ExampleLevels() {
	jobs := channels.NewFIFO()
	owned, err := smartpool.New(smartpool.Levels[string]{{{Key: "jobs", Channel: jobs}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan struct{})
	_ = jobs.Submit(func(ctx context.Context) { fmt.Println("hello from a worker"); close(done) })
	<-done
	report, _ := owned.Close(context.Background())
	fmt.Println("ran:", report.Total().Ran)
	// Output:
	// hello from a worker
	// ran: 1
}

// Two levels: urgent work runs first and completes at Close, batch work
// (earliest deadline first) is dropped at Close if it is still queued, and
// a batch task that yields comes back through the urgent channel.
func ExampleLevels_levels() {
	urgent, batch := channels.NewFIFO(), channels.NewDeadline()
	owned, err := smartpool.New(smartpool.Levels[string]{
		{{Key: "urgent", Channel: urgent, CompleteOnClose: true}},
		{{Key: "batch", Channel: batch, Followup: new("urgent")}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = owned.Pool().SetWorkers(1) // one worker, so that the order shows

	// Pin the worker, queue batch work then urgent work, and let go.
	started, release := make(chan struct{}), make(chan struct{})
	_ = urgent.Submit(func(context.Context) { close(started); <-release })
	<-started
	done := make(chan struct{})
	_ = batch.Submit(time.Now().Add(time.Minute), func(ctx context.Context) {
		fmt.Println("batch: fetch")
		smartpool.Yield(ctx, func() { /* I/O, without holding the worker */ })
		fmt.Println("batch: store")
		close(done)
	})
	_ = urgent.Submit(func(context.Context) { fmt.Println("urgent") })
	close(release)
	<-done

	report, _ := owned.Close(context.Background())
	u, _ := report.Channel("urgent")
	b, _ := report.Channel("batch")
	fmt.Println("ran: urgent", u.Ran, "batch", b.Ran)
	// Output:
	// urgent
	// batch: fetch
	// batch: store
	// ran: urgent 2 batch 1
}

// The four-line pool grown a line at a time: a cap on the channel, then
// pool-wide settings through With, without a PoolBehavior type.
func ExampleLevels_With() {
	jobs := channels.NewFIFO()
	owned, err := smartpool.New(smartpool.Levels[string]{
		{{Key: "jobs", Channel: jobs, CompleteOnClose: true, MaxRunning: 2}},
	}.With(smartpool.Config[string]{
		Workers: 4,
		Limit:   100,
		PanicHandler: func(key string, p *smartpool.PanicError) {
			fmt.Println("panic in", key+":", p.Value)
		},
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = jobs.Submit(func(context.Context) { panic("boom") })
	report, _ := owned.Close(context.Background())
	st, _ := report.Channel("jobs")
	fmt.Println("workers:", report.Workers, "limit:", report.Limit, "cap:", st.Cap, "panicked:", st.Panicked)
	// Output:
	// panic in jobs: boom
	// workers: 4 limit: 100 cap: 2 panicked: 1
}
