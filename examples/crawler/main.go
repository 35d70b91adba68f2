// Command crawler crawls a small fake web (an httptest server, no outside
// network) with one channel per processing state, as Paul Khuong's critique
// of generic pools ("The unscalable, deadlock-prone, thread pool", 2019)
// asks of a pool: fetch, parse and store are separate queues, each aware of
// the resource it needs before a worker is committed to it.
//
//   - fetch/<host>: one Bounded channel per host (capacity 16: backpressure
//     on the crawler's own frontier) with MaxInFlight 2, a per-host
//     politeness cap that a fetch keeps while its request is out. The HTTP
//     request is made through smartpool.Yield, so no worker is held while the
//     network answers; the fetch re-enters through "resume".
//   - parse and resume: FIFOs on the highest level, so pages already
//     fetched are finished before new fetches start.
//   - store: a FIFO with MaxInFlight 1, standing for a single database
//     connection held across the write.
//
// An in-flight limit (Config.Limit) caps the pages in progress, pool-wide:
// a page takes one unit when its fetch is queued and keeps it through parse
// and store, because each state hands its unit to the next (Pool.Handoff)
// instead of asking for a new one. Links a parse discovers go to a frontier
// outside the pool, fed back by one goroutine per host that waits for room
// (Bounded.Submit). No task ever waits for a unit, so a full pool always
// finishes what it holds: the deadlock of a pool whose tasks wait for a unit
// held by tasks waiting for them (Paul Khuong's critique of generic pools)
// cannot happen.
//
// Two workers do all the CPU work. Every 25 ms the program prints each
// state's queue depth, how many of its tasks are in progress, and the units
// held.
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
	inFlight     = 12 // pages in progress at once, all states together
)

// Crawl is the pool behavior: keys are channel names.
type Crawl struct {
	fetch                map[string]*channels.Bounded // by host
	resume, parse, store *channels.FIFO
}

// Config: parse and store above the fetches; everything completes on close.
func (c *Crawl) Config() smartpool.Config[string] {
	var fetches []smartpool.ChannelParams[string]
	for _, h := range hostNames() {
		fetches = append(fetches, smartpool.ChannelParams[string]{Key: "fetch/" + h, CompleteOnClose: true, MaxInFlight: 2})
	}
	return smartpool.Config[string]{
		Workers: 2,
		Limit:   inFlight,
		Levels: [][]smartpool.ChannelParams[string]{
			{{Key: "resume", CompleteOnClose: true}, {Key: "parse", CompleteOnClose: true}, {Key: "store", CompleteOnClose: true, MaxInFlight: 1}},
			fetches,
		},
	}
}

// Channel maps a key to its channel.
func (c *Crawl) Channel(k string) smartpool.Channel {
	switch k {
	case "resume":
		return c.resume
	case "parse":
		return c.parse
	case "store":
		return c.store
	}
	return c.fetch[strings.TrimPrefix(k, "fetch/")]
}

// Followup: every task that yielded comes back through "resume", on the
// highest level. A fetch keeps its host's MaxInFlight slot meanwhile (a
// MaxInFlight channel cannot be a followup itself).
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

	c := &Crawl{fetch: map[string]*channels.Bounded{}, resume: channels.NewFIFO(), parse: channels.NewFIFO(), store: channels.NewFIFO()}
	for _, h := range hostNames() {
		c.fetch[h] = channels.NewBounded(16)
	}
	owned, err := smartpool.New[string](c)
	if err != nil {
		log.Fatal(err)
	}
	pool := owned.Pool()

	var (
		mu      sync.Mutex
		seen    = map[string]bool{}
		stored  []string
		pending sync.WaitGroup // pages discovered and not yet stored
	)
	frontier := map[string]chan string{} // by host: links waiting for a fetch slot
	for _, h := range hostNames() {
		frontier[h] = make(chan string, hosts*pagesPerHost)
	}
	discover := func(path string) {
		mu.Lock()
		defer mu.Unlock()
		if !seen[path] {
			seen[path] = true
			pending.Add(1)
			frontier[strings.Split(path, "/")[1]] <- path // never full: one slot per page
		}
	}
	store := func(path string) smartpool.Func {
		return func(ctx context.Context) {
			_ = smartpool.Sleep(ctx, 200*time.Microsecond) // the database write
			mu.Lock()
			stored = append(stored, path)
			mu.Unlock()
			pending.Done()
		}
	}
	parse := func(path string, body []byte) smartpool.Func {
		return func(ctx context.Context) {
			for _, link := range linkRE.FindAllStringSubmatch(string(body), -1) {
				discover(link[1])
			}
			handoff(pool, ctx, "store", store(path))
		}
	}
	fetch := func(path string) func(ctx context.Context) {
		return func(ctx context.Context) {
			var body []byte
			var err error
			smartpool.Yield(ctx, func() { body, err = get(web.URL + path) })
			if err != nil {
				log.Printf("get %s: %v", path, err)
			}
			handoff(pool, ctx, "parse", parse(path, body))
		}
	}
	// One feeder per host: it waits for a unit of the in-flight limit and
	// for room in its host's queue, so a slow host holds back only itself.
	feeders, stop := sync.WaitGroup{}, make(chan struct{})
	for h, links := range frontier {
		feeders.Go(func() {
			for {
				select {
				case path := <-links:
					if err := c.fetch[h].Submit(context.Background(), fetch(path)); err != nil {
						log.Printf("fetch %s: %v", path, err)
						pending.Done()
					}
				case <-stop:
					return
				}
			}
		})
	}

	began := time.Now()
	discover("/h0/0")
	done := make(chan struct{})
	go func() { pending.Wait(); close(done) }()
	fmt.Println("  time   fetch queued/in flight per host        parse  store  units  stored")
	for tick := time.NewTicker(25 * time.Millisecond); ; {
		select {
		case <-done:
		case <-tick.C:
			printDepths(pool, began, len(storedCopy(&mu, &stored)))
			continue
		}
		tick.Stop()
		break
	}
	close(stop)
	feeders.Wait()
	report, err := owned.Close(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("crawled %d pages in %v; tasks run: %d, dropped: %d\n",
		len(stored), time.Since(began).Round(time.Millisecond), report.Total().Ran, report.Total().Dropped)
}

func storedCopy(mu *sync.Mutex, s *[]string) []string {
	mu.Lock()
	defer mu.Unlock()
	return *s
}

func printDepths(pool *smartpool.Pool[string], began time.Time, stored int) {
	st := pool.Stats()
	var fetch []string
	for _, h := range hostNames() {
		c, _ := st.Channel("fetch/" + h)
		fetch = append(fetch, fmt.Sprintf("%s %2d/%d", h, c.Queued, c.Held))
	}
	sort.Strings(fetch)
	p, _ := st.Channel("parse")
	s, _ := st.Channel("store")
	fmt.Printf("%6v   %s   %4d  %5d  %2d/%2d  %6d\n", time.Since(began).Round(time.Millisecond),
		strings.Join(fetch, "  "), p.Queued, s.Queued, st.Admitted, st.Limit, stored)
}

// handoff passes the calling task's unit of the in-flight limit to the next
// state. It cannot fail in this program: the keys exist, the FIFOs are
// unbounded, and Close starts only once every page is stored.
func handoff(pool *smartpool.Pool[string], ctx context.Context, key string, fn smartpool.Func) {
	if err := pool.Handoff(ctx, key, fn); err != nil {
		log.Fatalf("%s: %v", key, err)
	}
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

func get(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
