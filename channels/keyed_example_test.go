package channels_test

import (
	"context"
	"fmt"
	"net/url"
	"sync"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// crawler is a pool of one Keyed fetch channel served by four workers.
type crawler struct{ fetch *channels.Keyed[string] }

func (c crawler) Config() smartpool.Config[string] {
	return smartpool.Config[string]{
		Workers: 4,
		Levels:  [][]smartpool.ChannelParams[string]{{{Key: "fetch", CompleteOnClose: true}}},
	}
}

func (c crawler) Channel(string) smartpool.Channel { return c.fetch }
func (c crawler) Followup(k string) string         { return k }

func ExampleNewKeyed() {
	// At most two requests per host in progress, however many workers.
	fetch, err := channels.NewKeyed[string](2)
	if err != nil {
		fmt.Println(err)
		return
	}
	o, err := smartpool.New[string](crawler{fetch})
	if err != nil {
		fmt.Println(err)
		return
	}
	var mu sync.Mutex
	inFlight, peak, fetched := map[string]int{}, map[string]int{}, 0
	pages := []string{
		"https://a.example/1", "https://a.example/2", "https://a.example/3",
		"https://a.example/4", "https://a.example/5", "https://b.example/1",
		"https://b.example/2", "https://c.example/1",
	}
	for _, page := range pages {
		u, err := url.Parse(page)
		if err != nil {
			fmt.Println(err)
			return
		}
		host := u.Host
		_ = fetch.Submit(host, func(ctx context.Context) {
			mu.Lock()
			inFlight[host]++
			peak[host] = max(peak[host], inFlight[host])
			mu.Unlock()
			// The request: Yield gives the worker back while it waits, and
			// the request keeps its place in the host's limit.
			smartpool.Yield(ctx, func() { /* http.Get(page) */ })
			mu.Lock()
			inFlight[host]--
			fetched++
			mu.Unlock()
		})
	}
	if _, err := o.Close(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println("fetched", fetched, "pages")
	for _, host := range []string{"a.example", "b.example", "c.example"} {
		fmt.Println(host, "never had more than 2 requests in flight:", peak[host] <= 2)
	}
	// Output:
	// fetched 8 pages
	// a.example never had more than 2 requests in flight: true
	// b.example never had more than 2 requests in flight: true
	// c.example never had more than 2 requests in flight: true
}
