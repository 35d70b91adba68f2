// Command tenants shows a multi-tenant server sharing one pool fairly.
//
// Each tenant gets a FIFO channel of its own on its first request, added at
// run time (Pool.AddChannel) into the pool's only level, which the pool
// reserved room in (Config.Spare). Within a level the workers serve the
// non-empty queues in rotation, so busy tenants share the workers equally
// however deep their backlogs. Three tenants run, "hog" with a backlog of
// 100,000 tasks: the example prints each one's share of the workers, pauses
// hog (Pool.Pause) so that the others take its share until Resume, then
// times newcomer tenants' first tasks, which start within a few task
// durations despite hog's backlog (it exits with status 1 if one does not),
// and removes the tenants gone idle (Pool.RemoveChannel with Drain).
package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

const (
	workers   = 4
	work      = 2 * time.Millisecond // each task's simulated work
	backlog   = 100_000              // hog's
	window    = 400 * time.Millisecond
	newcomers = 5
)

type tenant struct {
	ch  *channels.FIFO
	ran atomic.Int64 // tasks run
}

// server keeps a channel per tenant in level 0 of pool.
type server struct {
	pool    *smartpool.Pool[string]
	mu      sync.Mutex // held over a tenant's addition, submits and removal
	tenants map[string]*tenant
}

// submit queues fn for tenant name, adding its channel on its first request.
func (s *server) submit(name string, fn func()) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tenants[name]
	if t == nil {
		t = &tenant{ch: channels.NewFIFO()}
		if err := s.pool.AddChannel(0, smartpool.ChannelParams[string]{Key: name}, t.ch, name); err != nil {
			return err
		}
		s.tenants[name] = t
	}
	return t.ch.Submit(func(context.Context) { fn(); t.ran.Add(1) })
}

// reap removes the tenants with nothing queued, once their running tasks
// ended (Drain), and returns their names. A server would call it on a
// ticker, for tenants quiet for a while.
func (s *server) reap(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []string
	for name, t := range s.tenants {
		if t.ch.Len() == 0 {
			if _, err := s.pool.RemoveChannel(ctx, name, smartpool.Drain); err != nil {
				return gone, err
			}
			delete(s.tenants, name)
			gone = append(gone, name)
		}
	}
	slices.Sort(gone)
	return gone, nil
}

// share prints how many tasks each tenant ran over d, and returns the total.
func (s *server) share(d time.Duration) int64 {
	count := func() map[string]int64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		m := map[string]int64{}
		for name, t := range s.tenants {
			m[name] = t.ran.Load()
		}
		return m
	}
	before := count()
	time.Sleep(d) // the measurement window
	after, total := count(), int64(0)
	for name := range after {
		after[name] -= before[name]
		total += after[name]
	}
	for _, name := range slices.Sorted(maps.Keys(after)) {
		f := float64(after[name]) / float64(max(total, 1))
		fmt.Printf("  %-7s %4d tasks %3.0f%% (%.1f of %d workers)\n", name, after[name], 100*f, f*workers, workers)
	}
	return total
}

func main() {
	owned, err := smartpool.New(smartpool.Levels[string]{nil}.With(smartpool.Config[string]{
		Workers: workers, Spare: []int{16}, Logger: slog.New(slog.DiscardHandler),
	}))
	if err != nil {
		log.Fatal(err)
	}
	s := &server{pool: owned.Pool(), tenants: map[string]*tenant{}}
	task := func() { time.Sleep(work) }
	loads := map[string]int{"hog": backlog, "acme": 2000, "globex": 2000}
	for name, n := range loads {
		for range n {
			if err := s.submit(name, task); err != nil {
				log.Fatal(err)
			}
		}
	}
	fmt.Printf("%d workers, tasks of %v, queued %v\nshares over %v:\n", workers, work, loads, window)
	// The tasks' real duration, sleeps overshooting included.
	d := max(work, workers*window/time.Duration(max(s.share(window), 1)))

	if err := s.pool.Pause("hog"); err != nil { // it floods: over its quota
		log.Fatal(err)
	}
	fmt.Printf("hog paused; shares over %v (hog runs at most what workers took in a batch before):\n", window/2)
	s.share(window / 2)
	if err := s.pool.Resume("hog"); err != nil {
		log.Fatal(err)
	}

	// A worker serves the level's non-empty queues in rotation from a cursor
	// of its own: it reaches a newcomer's queue after its current task and
	// at most one task of each of the 3 busy tenants, 4 task durations at
	// worst, and the first of the 4 workers to get there starts it (so
	// about one duration is usual). We allow workers+2 = 6 durations, slack
	// for timer and scheduler noise. Behind one shared FIFO queue it would
	// wait for hog's whole backlog: 100,000 × 2 ms / 4 workers = 50 s.
	bound := (workers + 2) * d
	fmt.Printf("newcomers' first task, submit to start (task %v, %d workers, bound %v):\n",
		d.Round(10*time.Microsecond), workers, bound.Round(10*time.Microsecond))
	ok := true
	for i := range newcomers {
		name := fmt.Sprintf("new-%d", i+1)
		started := make(chan time.Time, 1)
		t0 := time.Now()
		if err := s.submit(name, func() { started <- time.Now(); task() }); err != nil {
			log.Fatal(err)
		}
		wait := (<-started).Sub(t0)
		fmt.Printf("  %s  %v = %.2f tasks\n", name, wait.Round(time.Microsecond), float64(wait)/float64(d))
		ok = ok && wait < bound
	}

	gone, err := s.reap(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("removed idle tenants: %v\n", gone)
	report, err := owned.Close(context.Background()) // drops what hog, acme and globex still hold
	if err != nil {
		log.Fatal(err)
	}
	tot := report.Total()
	fmt.Printf("closed: %d tasks ran, %d dropped\n", tot.Ran, tot.Dropped)
	if !ok {
		log.Fatalf("a newcomer waited %v or more behind hog's backlog", bound)
	}
}
