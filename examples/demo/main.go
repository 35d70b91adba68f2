// Command demo shows what a smartpool is for: a game server whose workers
// are buried under seconds of background work, yet start game ticks and
// player requests within about a millisecond.
//
// The pool has three levels, highest first: Realtime (game ticks), Responsive
// (player requests) and, in the lowest level, Backlog (a FIFO sharded four
// ways) next to BacklogDeadline (earliest deadline first). Workers always
// serve the highest level with work (scheduler.HighestFirst).
//
// The program floods the backlog with small CPU tasks, more than the workers
// can finish, then submits ticks and requests at a steady rate for two
// seconds, one request of which panics. It then closes the pool: queued ticks
// and requests complete, queued backlog work is dropped, and the report
// accounts for every task. Finally it prints each level's submit-to-start
// latency, and the pool's own report (Report.String). Run it with
//
//	go run ./examples/demo
//
// With -http, it also serves the pool's live page (package statuspage) and
// its expvar stats while it runs, for a minute unless -for says otherwise,
// keeping the backlog topped up meanwhile:
//
//	go run ./examples/demo -http localhost:8080
package main

import (
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/scheduler"
	"github.com/smartpool-go/smartpool/statuspage"
)

type lane int // the pool's channel key

const (
	Realtime lane = iota
	Responsive
	Backlog
	BacklogDeadline
)

func (l lane) String() string {
	return [...]string{"Realtime", "Responsive", "Backlog", "BacklogDeadline"}[l]
}

// gameServer is the pool's behavior.
type gameServer struct {
	realtime, responsive *channels.FIFO
	backlog              *channels.Multi[*channels.FIFO]
	backlogDeadline      *channels.Deadline
	backlogDrops         atomic.Int64 // counted by Backlog's OnEnd
}

func (g *gameServer) Config() smartpool.Config[lane] {
	return smartpool.Config[lane]{
		Workers:  runtime.GOMAXPROCS(0), // the default, spelled out
		Schedule: scheduler.HighestFirst(),
		Levels: [][]smartpool.ChannelParams[lane]{
			{{Key: Realtime, CompleteOnClose: true}},
			{{Key: Responsive, CompleteOnClose: true}},
			{
				{Key: Backlog, OnEnd: func(_ smartpool.Task, o smartpool.Outcome) {
					if o.Dropped() {
						g.backlogDrops.Add(1)
					}
				}},
				{Key: BacklogDeadline},
			},
		},
		PanicHandler: func(k lane, p *smartpool.PanicError) {
			fmt.Fprintf(out, "recovered a panic in a %v task: %v\n", k, p.Value)
		},
	}
}

func (g *gameServer) Channel(k lane) smartpool.Channel {
	switch k {
	case Realtime:
		return g.realtime
	case Responsive:
		return g.responsive
	case Backlog:
		return g.backlog
	case BacklogDeadline:
		return g.backlogDeadline
	}
	return nil
}

// Followup sends background work that yielded (smartpool.Yield) to
// Responsive, so that the pool finishes what it started before new work.
func (g *gameServer) Followup(from lane) lane {
	if from == Backlog || from == BacklogDeadline {
		return Responsive
	}
	return from
}

var (
	out      io.Writer = os.Stdout // where the demo prints (its test reads it)
	httpAddr           = flag.String("http", "", "serve the live page at this address (e.g. localhost:8080)")
	runFor             = flag.Duration("for", 0, "how long ticks and requests arrive (default 2s, or 1m with -http)")
)

const (
	tickEvery        = time.Millisecond      // Realtime
	requestEvery     = 2 * time.Millisecond  // Responsive
	backlogCost      = 40 * time.Microsecond // one backlog task
	backlogPerWorker = 60_000                // 2.4 s of work per worker: outlasts runFor
)

// spin burns the CPU for d: it stands for real work.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

type latencies struct { // submit-to-start delays
	mu sync.Mutex
	d  []time.Duration // guarded by mu
}

// task returns a task that records its delay, then works for cost.
func (l *latencies) task(cost time.Duration) func(context.Context) {
	submitted := time.Now()
	return func(context.Context) {
		d := time.Since(submitted)
		l.mu.Lock()
		l.d = append(l.d, d)
		l.mu.Unlock()
		spin(cost)
	}
}

func main() {
	flag.Parse()
	if *runFor == 0 {
		*runFor = 2 * time.Second
		if *httpAddr != "" {
			*runFor = time.Minute
		}
	}
	g := &gameServer{
		realtime:        channels.NewFIFO(),
		responsive:      channels.NewFIFO(),
		backlog:         channels.NewMulti(4, channels.NewFIFO),
		backlogDeadline: channels.NewDeadline(),
	}
	var level [3]latencies // by level: Realtime, Responsive, both backlogs
	submitted := map[lane]uint64{}
	must := func(k lane, err error) {
		if err != nil {
			fmt.Fprintln(out, "submit:", err)
			os.Exit(1)
		}
		submitted[k]++
	}

	// The flood, queued as the pool starts (a channel takes tasks once New
	// attached it): three quarters plain backlog, a quarter with deadlines.
	owned, err := smartpool.New[lane](g)
	if err != nil {
		fmt.Fprintln(out, err)
		os.Exit(1)
	}
	workers := runtime.GOMAXPROCS(0)
	flood := backlogPerWorker * workers
	began := time.Now()
	fill := func(n int) {
		for i := range n {
			if i%4 == 3 {
				due := time.Now().Add(time.Duration(i) * time.Microsecond)
				must(BacklogDeadline, g.backlogDeadline.Submit(due, level[2].task(backlogCost)))
			} else {
				must(Backlog, g.backlog.Submit(level[2].task(backlogCost)))
			}
		}
	}
	fill(flood)
	pool := owned.Pool()
	fmt.Fprintf(out, "%d workers; %d backlog tasks of %v queued; ticks every %v, requests every %v for %v\n",
		workers, flood, backlogCost, tickEvery, requestEvery, *runFor)
	if *httpAddr != "" {
		stop := serve(pool, *httpAddr)
		defer stop()
	}

	// The steady load, on one schedule so that late ticks catch up. With
	// as many busy workers as Ps, this goroutine itself waits for a P until
	// Go preempts a worker (after 10 ms), so ticks may arrive in bursts.
	start, last := time.Now(), time.Now()
	var gap time.Duration // the longest between two ticks
	for i := 0; time.Since(start) < *runFor; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * tickEvery)))
		gap, last = max(gap, time.Since(last)), time.Now()
		must(Realtime, pool.Submit(Realtime, level[0].task(20*time.Microsecond)))
		if i%int(requestEvery/tickEvery) == 0 {
			must(Responsive, pool.Submit(Responsive, level[1].task(50*time.Microsecond)))
		}
		if i == 500 {
			must(Responsive, pool.Submit(Responsive, func(context.Context) { panic("malformed request") }))
		}
		if *httpAddr != "" && i%100 == 0 && g.backlog.Len()+g.backlogDeadline.Len() < flood/2 {
			fill(flood / 4) // a long run: keep the backlog from draining
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	report, err := owned.Close(ctx)
	if err != nil {
		fmt.Fprintln(out, "close:", err)
		os.Exit(1)
	}
	fmt.Fprintf(out, "longest gap between two ticks: %v%s; pool closed %v after the flood began\n",
		gap.Round(100*time.Microsecond), loadNote(), time.Since(began).Round(time.Millisecond))

	accounted := true
	for _, c := range report.Channels {
		accounted = accounted && c.Finished() == submitted[c.Key]
	}
	bl, _ := report.Channel(Backlog)
	fmt.Fprintf(out, "every task accounted for (submitted = ran + panicked + dropped, per channel): %v; Backlog's OnEnd counted %d drops, the report %d\n\n",
		accounted, g.backlogDrops.Load(), bl.Dropped)

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "submit to start\tstarted\tp50\tp99\tmax\t")
	for l, name := range []string{"Realtime", "Responsive", "both backlogs"} {
		d := level[l].d // the pool closed: no task writes any more
		slices.Sort(d)
		fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t%v\t\n", name, len(d), round(d[len(d)/2]), round(d[len(d)*99/100]), round(d[len(d)-1]))
	}
	tw.Flush()
	fmt.Fprintf(out, "\nthe pool's own report (waits and runs of one task in %d):\n%v\n", smartpool.DefaultTimingEvery, report)
}

// loadNote says how busy the machine was, where Linux tells: the gap
// between ticks measures the pool and the cores it gets, and other
// programs on the machine take cores from it (a quiet 2-core machine
// shows a few milliseconds; a loaded one, hundreds).
func loadNote() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return fmt.Sprintf(" (machine load average %s on %d cores: it grows with the load)", f[0], runtime.NumCPU())
}

// serve serves the pool's live page and its expvar stats at addr, prints
// the page's URL, and returns a function that stops the server.
func serve(pool *smartpool.Pool[lane], addr string) (stop func()) {
	if err := pool.Publish("smartpool_demo"); err != nil {
		fmt.Fprintln(out, err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.Handle("/debug/smartpool/", statuspage.Handler(pool, statuspage.Options{Title: "smartpool demo: a game server"}))
	mux.Handle("/debug/vars", expvar.Handler())
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(out, err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(out, "http:", err)
		}
	}()
	fmt.Fprintf(out, "live page: http://%s/debug/smartpool (expvar: /debug/vars)\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
}

// round keeps three significant digits.
func round(d time.Duration) time.Duration {
	unit := time.Duration(1)
	for d/unit >= 1000 {
		unit *= 10
	}
	return d.Round(unit)
}
