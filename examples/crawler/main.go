// Command crawler crawls a small fake web (an httptest server, no outside
// network) in the shape errgroup users write: one Group with SetLimit, and
// every page task spawns a task per new link with Go, from inside the group.
//
// With errgroup that shape deadlocks once the goroutines holding the
// group's places all wait in Go for a place. A smartpool Group does not: a
// task of the group that finds the group full runs the new page itself, in
// its own place, and goes on once it is done (the fork-join "help while you
// wait" rule). The same holds at the pool's in-flight limit (Config.Limit)
// and at a full channels.Bounded, so every limit holds and the crawl always
// finishes, even on one worker.
//
//   - fetch/<host>: one Bounded channel per host (capacity 4: a full one
//     pushes back). The HTTP request is made through smartpool.Yield, so no
//     worker is held while the network answers; the fetch re-enters through
//     "resume", on the highest level, so pages already fetched finish first.
//   - the group's limit (8) bounds the pages in progress; Config.Limit (6)
//     bounds the pool's tasks in flight, queued ones included.
//
// Two workers do the CPU work. Every 25 ms the program prints each host's
// queue depth, the units held and the pages stored.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

const (
	hosts        = 4
	pagesPerHost = 40
	groupLimit   = 8 // pages in progress (Group.SetLimit)
	inFlight     = 6 // the pool's tasks in flight (Config.Limit)
)

// Crawl is the pool behavior: keys are channel names.
type Crawl struct {
	fetch  map[string]*channels.Bounded // by host
	resume *channels.FIFO
}

// Config: resumptions above the fetches; everything completes on close.
func (c *Crawl) Config() smartpool.Config[string] {
	var fetches []smartpool.ChannelParams[string]
	for _, h := range hostNames() {
		fetches = append(fetches, smartpool.ChannelParams[string]{Key: "fetch/" + h, CompleteOnClose: true})
	}
	return smartpool.Config[string]{
		Workers: 2,
		Limit:   inFlight,
		Levels:  [][]smartpool.ChannelParams[string]{{{Key: "resume", CompleteOnClose: true}}, fetches},
	}
}

// Channel maps a key to its channel.
func (c *Crawl) Channel(k string) smartpool.Channel {
	if k == "resume" {
		return c.resume
	}
	return c.fetch[strings.TrimPrefix(k, "fetch/")]
}

// Followup: every task that yielded comes back through "resume".
func (c *Crawl) Followup(string) string { return "resume" }

func hostNames() []string {
	var hs []string
	for i := range hosts {
		hs = append(hs, fmt.Sprintf("h%d", i))
	}
	return hs
}

func main() {
	web := fakeWeb()
	defer web.Close()

	c := &Crawl{fetch: map[string]*channels.Bounded{}, resume: channels.NewFIFO()}
	for _, h := range hostNames() {
		c.fetch[h] = channels.NewBounded(4)
	}
	owned, err := smartpool.New[string](c)
	if err != nil {
		log.Fatal(err)
	}
	pool := owned.Pool()

	var (
		mu     sync.Mutex
		seen   = map[string]bool{}
		stored int
	)
	// first reports whether path is new, marking it seen.
	first := func(path string) bool {
		mu.Lock()
		defer mu.Unlock()
		if seen[path] {
			return false
		}
		seen[path] = true
		return true
	}
	key := func(path string) string { return "fetch/" + strings.Split(path, "/")[1] }

	began := time.Now()
	done := make(chan error, 1)
	go func() {
		done <- smartpool.Scope(context.Background(), pool, func(g *smartpool.Group[string]) {
			g.SetLimit(groupLimit)
			var page func(path string) func(ctx context.Context) error
			page = func(path string) func(ctx context.Context) error {
				return func(ctx context.Context) error {
					var body []byte
					var err error
					smartpool.Yield(ctx, func() { body, err = get(ctx, web.URL+path) })
					if err != nil {
						return fmt.Errorf("get %s: %w", path, err)
					}
					mu.Lock()
					stored++
					mu.Unlock()
					for _, link := range linkRE.FindAllStringSubmatch(string(body), -1) {
						if first(link[1]) {
							g.Go(key(link[1]), page(link[1])) // from inside the group, at its limit or not
						}
					}
					return nil
				}
			}
			first("/h0/0")
			g.Go(key("/h0/0"), page("/h0/0"))
		})
	}()

	fmt.Println("  time   fetch queued per host    units  stored")
	tick := time.NewTicker(25 * time.Millisecond)
	for err = nil; ; {
		select {
		case err = <-done:
		case <-tick.C:
			mu.Lock()
			n := stored
			mu.Unlock()
			printDepths(pool, began, n)
			continue
		}
		break
	}
	tick.Stop()
	if err != nil {
		log.Fatal(err)
	}
	report, err := owned.Close(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("crawled %d pages in %v; tasks run: %d, dropped: %d\n",
		stored, time.Since(began).Round(time.Millisecond), report.Total().Ran, report.Total().Dropped)
}

func printDepths(pool *smartpool.Pool[string], began time.Time, stored int) {
	st := pool.Stats()
	var fetch []string
	for _, h := range hostNames() {
		c, _ := st.Channel("fetch/" + h)
		fetch = append(fetch, fmt.Sprintf("%s %2d", h, c.Queued))
	}
	sort.Strings(fetch)
	fmt.Printf("%6v   %s   %2d/%2d  %6d\n", time.Since(began).Round(time.Millisecond),
		strings.Join(fetch, "  "), st.Admitted, st.Limit, stored)
}

var linkRE = regexp.MustCompile(`href="([^"]+)"`)

// fakeWeb serves pagesPerHost pages per host under /<host>/<n>; each links to
// a few pages on every host and answers after 2 ms.
func fakeWeb() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Millisecond) // the network and the remote server
		var n int
		var host string
		fmt.Sscanf(r.URL.Path, "/h%s", &host)
		parts := strings.Split(r.URL.Path, "/")
		fmt.Sscanf(parts[len(parts)-1], "%d", &n)
		for i, h := range hostNames() {
			for k := 1; k <= 3; k++ {
				fmt.Fprintf(w, `<a href="/%s/%d">x</a>`, h, (n*7+k*13+i)%pagesPerHost)
			}
		}
	}))
}

func get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
