package smartpool_test

import (
	"context"
	"fmt"
	"runtime"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// prioritized is a one-worker pool of one Priority channel that is its own
// followup.
type prioritized struct{ p *channels.Priority }

func (b prioritized) Config() smartpool.Config[string] {
	return smartpool.Config[string]{Workers: 1, Levels: [][]smartpool.ChannelParams[string]{{{Key: "p", CompleteOnClose: true}}}}
}
func (b prioritized) Channel(string) smartpool.Channel { return b.p }
func (b prioritized) Followup(k string) string         { return k }

// A task that yields comes back with the priority it was submitted with:
// channels.Priority implements OrderedPoller, so the urgent task re-enters
// ahead of the routine one queued while it waited.
func ExampleOrderedPoller() {
	p := channels.NewPriority()
	o, err := smartpool.New[string](prioritized{p})
	if err != nil {
		panic(err)
	}
	waiting, wake := make(chan struct{}), make(chan struct{})
	release, busy := make(chan struct{}), make(chan struct{})
	out := make(chan string, 2)
	_ = p.Submit(100, func(ctx context.Context) {
		smartpool.Yield(ctx, func() { close(waiting); <-wake })
		out <- "urgent (100), after its wait"
	})
	<-waiting
	_ = p.Submit(1000, func(context.Context) { close(busy); <-release }) // holds the only worker
	<-busy
	_ = p.Submit(10, func(context.Context) { out <- "routine (10)" })
	close(wake)
	for p.Len() < 2 { // the urgent task's re-entry is queued
		runtime.Gosched()
	}
	close(release)
	fmt.Println(<-out)
	fmt.Println(<-out)
	_, _ = o.Close(context.Background())
	// Output:
	// urgent (100), after its wait
	// routine (10)
}
