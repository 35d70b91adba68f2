package channels_test

import (
	"context"
	"fmt"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// oneChannel is the smallest PoolBehavior: one channel, one worker, and a
// Close that runs every queued task, so the examples' output is in the
// channel's order.
type oneChannel struct{ ch smartpool.Channel }

func (b oneChannel) Config() smartpool.Config[string] {
	return smartpool.Config[string]{
		Workers: 1,
		Levels:  [][]smartpool.ChannelParams[string]{{{Key: "jobs", CompleteOnClose: true}}},
	}
}

func (b oneChannel) Channel(string) smartpool.Channel { return b.ch }
func (b oneChannel) Followup(k string) string         { return k }

// run starts a pool on ch, which runs the queued tasks, and closes it.
func run(ch smartpool.Channel) {
	o, err := smartpool.New[string](oneChannel{ch})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := o.Close(context.Background()); err != nil {
		fmt.Println(err)
	}
}

func say(s string) func(context.Context) {
	return func(context.Context) { fmt.Println(s) }
}

func ExampleNewFIFO() {
	jobs := channels.NewFIFO()
	// Tasks queued before the pool starts wait for it.
	_ = jobs.Submit(say("first"))
	_ = jobs.Submit(say("second"))
	_ = jobs.SubmitBatch(say("third"), say("fourth"))
	run(jobs)
	// Output:
	// first
	// second
	// third
	// fourth
}

func ExampleNewDeadline() {
	var dropped int
	jobs := channels.NewDeadline(channels.DropLate(func(smartpool.Task) { dropped++ }))
	now := time.Now()
	_ = jobs.Submit(now.Add(3*time.Hour), say("due in 3h"))
	_ = jobs.Submit(now.Add(time.Hour), say("due in 1h"))
	_ = jobs.Submit(now.Add(-time.Minute), say("a minute late: never runs"))
	_ = jobs.Submit(now.Add(2*time.Hour), say("due in 2h"))
	run(jobs)
	fmt.Println("dropped late:", dropped, jobs.Stats().DroppedLate)
	// Output:
	// due in 1h
	// due in 2h
	// due in 3h
	// dropped late: 1 1
}

func ExampleNewPriority() {
	jobs := channels.NewPriority()
	_ = jobs.Submit(1, say("normal"))
	_ = jobs.Submit(10, say("urgent"))
	_ = jobs.Submit(-5, say("background"))
	_ = jobs.Submit(10, say("urgent too, submitted later"))
	_ = jobs.Push(smartpool.Func(say("pushed: priority 0")))
	run(jobs)
	// Output:
	// urgent
	// urgent too, submitted later
	// normal
	// pushed: priority 0
	// background
}

func ExampleNewMulti() {
	// Four Deadline shards: submitters spread over four locks. NewDeadline
	// takes options, so wrap it to make a newShard function.
	jobs := channels.NewMulti(4, func() *channels.Deadline { return channels.NewDeadline() })
	now := time.Now()
	ran := 0
	for i := range 8 {
		// Next picks the shard in rotation; its typed Submit takes a deadline.
		_ = jobs.Next().Submit(now.Add(time.Duration(8-i)*time.Hour), func(context.Context) { ran++ })
	}
	for i, s := range jobs.Shards() {
		fmt.Printf("shard %d holds %d\n", i, s.Len())
	}
	// Each shard runs its own tasks in deadline order; across shards the
	// order is only rough.
	run(jobs)
	fmt.Println("ran:", ran, "left:", jobs.Len())
	// Output:
	// shard 0 holds 2
	// shard 1 holds 2
	// shard 2 holds 2
	// shard 3 holds 2
	// ran: 8 left: 0
}
