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
// onEnd, if set, is the channel's OnEnd.
type oneChannel struct {
	ch    smartpool.Channel
	onEnd func(smartpool.Task, smartpool.Outcome)
}

func (b oneChannel) Config() smartpool.Config[string] {
	return smartpool.Config[string]{
		Workers: 1,
		Levels:  [][]smartpool.ChannelParams[string]{{{Key: "jobs", CompleteOnClose: true, OnEnd: b.onEnd}}},
	}
}

func (b oneChannel) Channel(string) smartpool.Channel { return b.ch }
func (b oneChannel) Followup(k string) string         { return k }

// held starts a pool on ch and keeps its one worker busy with a task that
// occupy submits, until free is called: the example's tasks queue up behind
// it, and then run in the channel's order. A channel takes tasks only once a
// pool serves it.
func held(ch smartpool.Channel, occupy func(func(context.Context)) error) (o *smartpool.OwnedPool[string], free func()) {
	return heldEnds(ch, nil, occupy)
}

// heldEnds is held with onEnd as the channel's OnEnd.
func heldEnds(ch smartpool.Channel, onEnd func(smartpool.Task, smartpool.Outcome), occupy func(func(context.Context)) error) (o *smartpool.OwnedPool[string], free func()) {
	o, err := smartpool.New[string](oneChannel{ch, onEnd})
	if err != nil {
		panic(err)
	}
	busy, release := make(chan struct{}), make(chan struct{})
	if err := occupy(func(context.Context) { close(busy); <-release }); err != nil {
		panic(err)
	}
	<-busy
	return o, func() { close(release) }
}

// run lets the held worker go and closes the pool, which runs every queued
// task first.
func run(o *smartpool.OwnedPool[string], free func()) {
	free()
	if _, err := o.Close(context.Background()); err != nil {
		fmt.Println(err)
	}
}

func say(s string) func(context.Context) {
	return func(context.Context) { fmt.Println(s) }
}

func ExampleNewFIFO() {
	jobs := channels.NewFIFO()
	o, free := held(jobs, func(fn func(context.Context)) error { return jobs.Submit(fn) })
	_ = jobs.Submit(say("first"))
	_ = jobs.Submit(say("second"))
	_ = jobs.SubmitBatch(say("third"), say("fourth"))
	run(o, free)
	// Output:
	// first
	// second
	// third
	// fourth
}

func ExampleNewDeadline() {
	jobs := channels.NewDeadline(channels.DropLate())
	now := time.Now()
	o, free := held(jobs, func(fn func(context.Context)) error { return jobs.Submit(now.Add(time.Hour), fn) })
	_ = jobs.Submit(now.Add(3*time.Hour), say("due in 3h"))
	_ = jobs.Submit(now.Add(time.Hour), say("due in 1h"))
	_ = jobs.Submit(now.Add(-time.Minute), say("a minute late: never runs"))
	_ = jobs.Submit(now.Add(2*time.Hour), say("due in 2h"))
	run(o, free)
	fmt.Println("dropped late:", jobs.Stats().DroppedLate)
	// Output:
	// due in 1h
	// due in 2h
	// due in 3h
	// dropped late: 1
}

func ExampleNewPriority() {
	jobs := channels.NewPriority()
	o, free := held(jobs, func(fn func(context.Context)) error { return jobs.Submit(0, fn) })
	_ = jobs.Submit(1, say("normal"))
	_ = jobs.Submit(10, say("urgent"))
	_ = jobs.Submit(-5, say("background"))
	_ = jobs.Submit(10, say("urgent too, submitted later"))
	_ = o.Pool().Submit("jobs", say("by key: priority 0"))
	run(o, free)
	// Output:
	// urgent
	// urgent too, submitted later
	// normal
	// by key: priority 0
	// background
}

func ExampleNewMulti() {
	// Four Deadline shards: submitters spread over four locks. NewDeadline
	// takes options, so wrap it to make a newShard function.
	jobs := channels.NewMulti(4, func() *channels.Deadline { return channels.NewDeadline() })
	now := time.Now()
	// The task that holds the worker went to shard 0 and left it.
	o, free := held(jobs, func(fn func(context.Context)) error { return jobs.Next().Submit(now, fn) })
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
	run(o, free)
	fmt.Println("ran:", ran, "left:", jobs.Len())
	// Output:
	// shard 0 holds 2
	// shard 1 holds 2
	// shard 2 holds 2
	// shard 3 holds 2
	// ran: 8 left: 0
}
