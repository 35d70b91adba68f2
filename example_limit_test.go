package smartpool_test

import (
	"context"
	"fmt"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// pages is a two-state pipeline, fetch then store, under an in-flight limit
// of 3 work units, on one worker so the output order is fixed.
type pages struct{ fetch, store *channels.FIFO }

func (p *pages) Config() smartpool.Config[string] {
	return smartpool.Config[string]{
		Workers: 1,
		Limit:   3,
		Levels: [][]smartpool.ChannelParams[string]{
			{{Key: "store", CompleteOnClose: true}},
			{{Key: "fetch", CompleteOnClose: true}},
		},
	}
}

func (p *pages) Channel(k string) smartpool.Channel {
	if k == "store" {
		return p.store
	}
	return p.fetch
}

func (p *pages) Followup(k string) string { return k }

// A page holds one unit of the limit from its fetch to its store: the fetch
// hands its unit to the store task instead of asking for a new one, so a
// full pool always finishes what it admitted. Submit refuses work at the
// limit; with WithContext it waits for a unit until its context ends.
func ExamplePool_Handoff() {
	owned, err := smartpool.New[string](&pages{fetch: channels.NewFIFO(), store: channels.NewFIFO()})
	if err != nil {
		fmt.Println(err)
		return
	}
	pool := owned.Pool()
	hold := make(chan struct{})
	_ = pool.Submit("fetch", func(context.Context) { <-hold }) // keeps the worker busy
	for i := range 3 {
		err := pool.Submit("fetch", func(ctx context.Context) {
			fmt.Println("fetch", i)
			_ = pool.Handoff(ctx, "store", func(context.Context) { fmt.Println("store", i) })
		})
		fmt.Printf("submit %d: %v\n", i, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	fmt.Println("wait for a unit:", pool.Submit("fetch", func(context.Context) {}, smartpool.WithContext(ctx)))
	st := pool.Stats()
	fmt.Printf("admitted %d of %d\n", st.Admitted, st.Limit)

	close(hold)
	report, _ := owned.Close(context.Background())
	fmt.Println("admitted after close:", report.Admitted, "ran:", report.Total().Ran)
	// Output:
	// submit 0: <nil>
	// submit 1: <nil>
	// submit 2: smartpool: full: the pool's in-flight limit (Config.Limit) is reached; submit WithContext(ctx) to wait for a unit
	// wait for a unit: context deadline exceeded
	// admitted 3 of 3
	// fetch 0
	// store 0
	// fetch 1
	// store 1
	// admitted after close: 0 ran: 5
}
