package channels_test

import (
	"context"
	"fmt"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

func ExampleNewBounded() {
	jobs := channels.NewBounded(2)
	o, free := held(jobs, func(fn func(context.Context)) error { return jobs.Submit(fn) }) // the pool's one worker is busy
	_ = jobs.Submit(say("first"))
	_ = jobs.Submit(say("second"))
	fmt.Println("Submit when full:", jobs.Submit(say("never runs")))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	fmt.Println("Submit with a cancelled context:", jobs.Submit(say("never runs either"), smartpool.WithContext(cancelled)))

	free()
	// Given a context, Submit waits while the channel is full: the pool's
	// worker makes room.
	for i := range 3 {
		if err := jobs.Submit(say(fmt.Sprint("waited for room ", i)), smartpool.WithContext(context.Background())); err != nil {
			fmt.Println(err)
		}
	}
	if _, err := o.Close(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println("Submit after Close:", jobs.Submit(say("refused"), smartpool.WithContext(context.Background())))
	// Output:
	// Submit when full: smartpool: full: the Bounded is at its capacity; submit WithContext(ctx) to wait for room
	// Submit with a cancelled context: context canceled
	// first
	// second
	// waited for room 0
	// waited for room 1
	// waited for room 2
	// Submit after Close: smartpool: closed
}

// reading is a task that names itself, so OnEnd can say which.
type reading string

func (r reading) Run(context.Context) { fmt.Println("processed", string(r)) }

func ExampleDropOldest() {
	// Keep only the two freshest readings.
	jobs := channels.NewBounded(2, channels.DropOldest())
	onEnd := func(t smartpool.Task, why smartpool.Outcome) { // the pool's ChannelParams.OnEnd
		if why == smartpool.DroppedDisplaced {
			fmt.Println("dropped", string(t.(reading)))
		}
	}
	o, free := heldEnds(jobs, onEnd, func(fn func(context.Context)) error { return jobs.Submit(fn) })
	for _, r := range []reading{"08:00", "08:01", "08:02", "08:03"} {
		_ = jobs.SubmitTask(r) // never fails for lack of room
	}
	run(o, free)
	fmt.Println("dropped in all:", jobs.Stats().Dropped)
	// Output:
	// dropped 08:00
	// dropped 08:01
	// processed 08:02
	// processed 08:03
	// dropped in all: 2
}

func ExampleCallerRuns() {
	jobs := channels.NewBounded(1, channels.CallerRuns())
	o, free := held(jobs, func(fn func(context.Context)) error { return jobs.Submit(fn) })
	_ = jobs.Submit(say("queued"))
	// The channel is full: this one runs here and now, in the caller.
	_ = jobs.Submit(say("run by the caller"))
	run(o, free)
	fmt.Println("run by callers:", jobs.Stats().CallerRan)
	// Output:
	// run by the caller
	// queued
	// run by callers: 1
}
