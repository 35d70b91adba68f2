package smartpool_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// A channel that calls a rate-limited API starts at most 20 tasks a second,
// 5 at once from a full bucket, beside an unlimited channel of a higher
// level; SetRate changes the rate at run time, and a rate of 0 holds the
// channel's starts (its tasks queue) until raised. Close never waits for a
// token: it drains the complete-on-close channel at once.
func ExamplePool_SetRate() {
	owned, err := smartpool.New[string](smartpool.Levels[string]{
		{{Key: "urgent", Channel: channels.NewFIFO(), CompleteOnClose: true}},
		{{Key: "api", Channel: channels.NewFIFO(), CompleteOnClose: true, Rate: smartpool.Rate{PerSecond: 20, Burst: 5}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	pool := owned.Pool()
	var wg sync.WaitGroup
	began := time.Now()
	wg.Add(10)
	for range 10 {
		_ = pool.Submit("api", func(context.Context) { wg.Done() })
	}
	wg.Wait() // 5 at once, then one each 50 ms
	fmt.Println("10 api calls took at least 250 ms:", time.Since(began) >= 245*time.Millisecond)

	_ = pool.SetRate("api", smartpool.Rate{}) // a rate of 0: a pause by rate
	for range 3 {
		_ = pool.Submit("api", func(context.Context) {})
	}
	st, _ := pool.Stats().Channel("api")
	fmt.Printf("rate %v, queued %d\n", st.Rate, st.Queued)

	err = pool.SetRate("api", smartpool.Rate{PerSecond: -1})
	fmt.Println("bad rate refused:", errors.Is(err, smartpool.ErrBadLimit))

	report, err := owned.Close(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	api, _ := report.Channel("api")
	fmt.Println("ran by Close:", api.Ran-10)
	// Output:
	// 10 api calls took at least 250 ms: true
	// rate 0/s burst 1, queued 3
	// bad rate refused: true
	// ran by Close: 3
}
