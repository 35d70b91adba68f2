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
	// submit after close: smartpool: pool closed
}

// A task waits on another task of the same one-worker pool: the wait
// yields the worker, so there is no deadlock.
func ExampleGo() {
	owned, _ := smartpool.New[Key](&Game{Urgent: channels.NewFIFO(), Background: channels.NewFIFO()})
	defer owned.Close(context.Background())
	p := owned.Pool()
	outer := smartpool.Go(p, Background, func(ctx context.Context) (int, error) {
		inner := smartpool.Go(p, Background, func(context.Context) (int, error) { return 20, nil })
		v, err := inner.Wait(ctx)
		return v + 1, err
	})
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

// Scope waits for every task it spawned and returns the first error.
func ExampleScope() {
	owned, _ := smartpool.New[Key](&Game{Urgent: channels.NewFIFO(), Background: channels.NewFIFO()})
	defer owned.Close(context.Background())
	squares := make([]int, 5)
	err := smartpool.Scope(context.Background(), owned.Pool(), func(g *smartpool.Group[Key]) {
		for i := range squares {
			g.Go(Background, func(context.Context) error { squares[i] = i * i; return nil })
		}
	})
	fmt.Println(squares, err)
	// Output: [0 1 4 9 16] <nil>
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
