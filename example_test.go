package smartpool_test

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// Key names the channels of the example pool.
type Key int

const (
	Urgent Key = iota
	Background
)

// Game is the example behavior: an urgent FIFO above a background FIFO.
type Game struct{ Urgent, Background *channels.FIFO }

// Config puts Urgent above Background, on one worker so the examples'
// output order is fixed.
func (g *Game) Config() smartpool.Config[Key] {
	return smartpool.Config[Key]{
		Workers: 1,
		Levels: [][]smartpool.ChannelParams[Key]{
			{{Key: Urgent, CompleteOnClose: true}},
			{{Key: Background}},
		},
	}
}

// Channel maps a key to its channel.
func (g *Game) Channel(k Key) smartpool.Channel {
	if k == Urgent {
		return g.Urgent
	}
	return g.Background
}

// Followup sends yielded background tasks to the urgent level, so the pool
// finishes what it started before it takes new background work.
func (g *Game) Followup(Key) Key { return Urgent }

// Tasks queued while the only worker is busy show the priority order: the
// urgent task runs first although it was submitted last. A channel takes
// tasks once New has attached it.
func ExampleNew() {
	game := &Game{Urgent: channels.NewFIFO(), Background: channels.NewFIFO()}
	owned, err := smartpool.New[Key](game)
	if err != nil {
		fmt.Println(err)
		return
	}
	busy, release := make(chan struct{}), make(chan struct{})
	_ = game.Urgent.Submit(func(context.Context) { close(busy); <-release })
	<-busy

	done := make(chan struct{})
	_ = game.Background.Submit(func(context.Context) { fmt.Println("background"); close(done) })
	_ = game.Urgent.Submit(func(context.Context) { fmt.Println("urgent") })
	close(release)
	<-done // Close would drop the background task if it were still queued
	report, _ := owned.Close(context.Background())
	fmt.Println("ran:", report.Total().Ran)
	// Output:
	// urgent
	// background
	// ran: 3
}

// Close drops what is queued in channels that do not complete on close and
// reports it.
func ExampleOwnedPool_Close() {
	game := &Game{Urgent: channels.NewFIFO(), Background: channels.NewFIFO()}
	owned, _ := smartpool.New[Key](game)
	release := make(chan struct{})
	started := make(chan struct{})
	_ = game.Urgent.Submit(func(context.Context) { close(started); <-release })
	<-started
	for range 3 {
		_ = game.Background.Submit(func(context.Context) {})
	}
	go func() {
		for owned.Pool().State() == smartpool.Running {
			runtime.Gosched() // wait for Close to start, then let the worker go
		}
		close(release)
	}()
	report, _ := owned.Close(context.Background())
	bg, _ := report.Channel(Background)
	fmt.Println("background dropped:", bg.Dropped)
	fmt.Println("submit after close:", game.Urgent.Submit(func(context.Context) {}))
	// Output:
	// background dropped: 3
	// submit after close: smartpool: closed
}

// A Close whose context ends first returns the context's error and the
// stats of that moment, which say what the close still waits for; a later
// Close waits for it again and returns the final report.
func ExampleOwnedPool_Close_deadline() {
	game := &Game{Urgent: channels.NewFIFO(), Background: channels.NewFIFO()}
	owned, _ := smartpool.New[Key](game)
	release := make(chan struct{})
	started := make(chan struct{})
	_ = game.Urgent.Submit(func(context.Context) { close(started); <-release })
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	report, err := owned.Close(ctx)
	urgent, _ := report.Channel(Urgent)
	fmt.Println("close:", err, "- still running:", urgent.Running)
	close(release)
	report, err = owned.Close(context.Background())
	fmt.Println("close:", err, "- ran:", report.Total().Ran)
	// Output:
	// close: context deadline exceeded - still running: 1
	// close: <nil> - ran: 1
}

// A task waits on another task of the same one-worker pool: the wait
// yields the worker, so there is no deadlock. Go's own error is a refusal
// (the pool closed, a full limit, an unknown key), known at the call.
func ExampleGo() {
	owned, _ := smartpool.New[Key](&Game{Urgent: channels.NewFIFO(), Background: channels.NewFIFO()})
	defer owned.Close(context.Background())
	p := owned.Pool()
	outer, err := smartpool.Go(p, Background, func(ctx context.Context) (int, error) {
		inner, err := smartpool.Go(p, Background, func(context.Context) (int, error) { return 20, nil })
		if err != nil {
			return 0, err
		}
		v, err := inner.Wait(ctx)
		return v + 1, err
	})
	if err != nil {
		fmt.Println("refused:", err) // a server answers 503 here
		return
	}
	fmt.Println(outer.Wait(context.Background()))
	// Output: 21 <nil>
}

// Yield gives the worker back while the task waits for its I/O.
func ExampleYield() {
	owned, _ := smartpool.New[Key](&Game{Urgent: channels.NewFIFO(), Background: channels.NewFIFO()})
	p := owned.Pool()
	reply := make(chan string)
	done := make(chan struct{})
	_ = p.Submit(Background, func(ctx context.Context) {
		var got string
		smartpool.Yield(ctx, func() {
			// The only worker is free while this waits: it runs the reply.
			_ = p.Submit(Urgent, func(context.Context) { reply <- "pong" })
			got = <-reply
		})
		fmt.Println("resumed with", got)
		close(done)
	})
	<-done
	_, _ = owned.Close(context.Background())
	// Output: resumed with pong
}

// Scope fans work out in the manner of errgroup.WithContext: the first
// error cancels the context of the other tasks, tasks still queued are
// skipped (and counted as cancelled), and Scope returns once every task has
// ended, with the first error.
func ExampleScope() {
	owned, _ := smartpool.New[Key](&Game{Urgent: channels.NewFIFO(), Background: channels.NewFIFO()})
	defer owned.Close(context.Background())
	pool := owned.Pool()
	pages := []string{"a", "b", "missing", "c", "d"}
	fetch := func(ctx context.Context, page string) error {
		if page == "missing" {
			return fmt.Errorf("fetch %s: not found", page)
		}
		fmt.Println("fetched", page)
		return ctx.Err()
	}
	// The one worker is held until every page is queued, so the output does
	// not depend on how fast the loop runs.
	hold := make(chan struct{})
	_ = pool.Submit(Urgent, func(context.Context) { <-hold })
	err := smartpool.Scope(context.Background(), pool, func(g *smartpool.Group[Key]) {
		for _, page := range pages {
			g.Go(Background, func(ctx context.Context) error { return fetch(ctx, page) })
		}
		close(hold)
	})
	fmt.Println("scope:", err)
	st, _ := pool.Stats().Channel(Background)
	fmt.Println("skipped:", st.Cancelled)
	// Output:
	// fetched a
	// fetched b
	// scope: fetch missing: not found
	// skipped: 2
}

// SetLimit bounds a group's tasks in flight, as errgroup's does: Go waits
// for room, TryGo reports a refusal at once.
func ExampleGroup_SetLimit() {
	owned, _ := smartpool.New[Key](&Game{Urgent: channels.NewFIFO(), Background: channels.NewFIFO()})
	defer owned.Close(context.Background())
	g := smartpool.NewGroup(context.Background(), owned.Pool())
	g.SetLimit(2)
	hold := make(chan struct{})
	for range 2 {
		g.Go(Background, func(context.Context) error { <-hold; return nil })
	}
	fmt.Println("TryGo at the limit:", g.TryGo(Background, func(context.Context) error { return nil }))
	close(hold)
	g.Go(Background, func(context.Context) error { return nil }) // waits for one of the two
	fmt.Println("Wait:", g.Wait(context.Background()))
	// Output:
	// TryGo at the limit: false
	// Wait: <nil>
}

// The values of the context given with WithContext reach the task (its
// cancellation stops the task only while it is queued).
func ExampleWithContext() {
	type traceID struct{}
	owned, _ := smartpool.New[Key](&Game{Urgent: channels.NewFIFO(), Background: channels.NewFIFO()})
	ctx := context.WithValue(context.Background(), traceID{}, "req-42")
	done := make(chan struct{})
	_ = owned.Pool().Submit(Urgent, func(ctx context.Context) {
		fmt.Println("trace:", ctx.Value(traceID{}))
		close(done)
	}, smartpool.WithContext(ctx))
	<-done
	_, _ = owned.Close(context.Background())
	// Output: trace: req-42
}

// After submits a task later; Every would repeat it.
func ExamplePool_After() {
	owned, _ := smartpool.New[Key](&Game{Urgent: channels.NewFIFO(), Background: channels.NewFIFO()})
	done := make(chan struct{})
	_, _ = owned.Pool().After(10*time.Millisecond, Urgent, func(context.Context) {
		fmt.Println("fired")
		close(done)
	})
	<-done
	_, _ = owned.Close(context.Background())
	// Output: fired
}

// A Handle cancels a task that has not started, or moves it in its queue:
// here the only worker is busy while the handles act.
func ExampleHandle() {
	p := channels.NewPriority()
	owned, _ := smartpool.New[string](prioritized{p})
	busy, release := make(chan struct{}), make(chan struct{})
	_ = p.Submit(1000, func(context.Context) { close(busy); <-release })
	<-busy
	out := make(chan string, 3)
	var late, unwanted smartpool.Handle
	_ = p.Submit(10, func(context.Context) { out <- "routine (10)" })
	_ = p.Submit(1, func(context.Context) { out <- "late (1, moved to 100)" }, smartpool.WithHandle(&late))
	_ = p.Submit(5, func(context.Context) { out <- "unwanted (5)" }, smartpool.WithHandle(&unwanted))
	fmt.Println("reprioritize:", late.Reprioritize(100))
	fmt.Println("cancel:", unwanted.Cancel(), "then", unwanted.Cancel())
	close(release)
	fmt.Println(<-out)
	fmt.Println(<-out)
	report, _ := owned.Close(context.Background())
	st, _ := report.Channel("p")
	fmt.Println("ran:", st.Ran, "cancelled:", st.Cancelled)
	fmt.Println("once run:", late.Reprioritize(0))
	// Output:
	// reprioritize: <nil>
	// cancel: true then false
	// late (1, moved to 100)
	// routine (10)
	// ran: 3 cancelled: 1
	// once run: smartpool: task not queued (started, cancelled or dropped)
}
