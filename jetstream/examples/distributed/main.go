// Command distributed shows a JetStream channel shared by a fleet: it starts
// an embedded NATS server, three worker processes (this binary again, with
// -worker) and a producer that publishes tasks over two levels. Midway it
// kills one worker; the messages that worker held are delivered again to
// the others after AckWait. It also plays a rolling deploy: worker 3 starts
// as the old build, which lacks the handler "v2" that every tenth task
// needs, and is replaced by worker 4, the new build, while tasks flow; the
// old build passes the v2 tasks it fetched on to the others. At the end it
// prints what each worker ran, how long v2 tasks waited next to the others,
// the passes per v2 task, and "published N, ran N, lost 0".
//
// From the jetstream directory (its own module):
//
//	cd jetstream && go run ./examples/distributed
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/jetstream"
)

var (
	worker   = flag.Int("worker", 0, "run as worker number `n` (set by the coordinator)")
	oldBuild = flag.Bool("old", false, "run as the old build, without the handler \"v2\" (worker mode)")
	url      = flag.String("url", "", "NATS URL (worker mode)")
	logDir   = flag.String("log", "", "directory for the run logs (worker mode)")
	total    = flag.Int("n", 10000, "tasks to publish")
	nWorkers = flag.Int("workers", 3, "worker processes")
)

// The two levels: a few urgent tasks, many bulk ones.
const (
	urgent = "urgent"
	bulk   = "bulk"
)

const ackWait = 2 * time.Second // how soon a dead worker's messages go to the others

// oldLife is how long the old build runs before the rolling deploy replaces
// it (or until three quarters of the tasks are done).
const oldLife = 3 * time.Second

func main() {
	flag.Parse()
	var err error
	if *worker > 0 {
		err = runWorker(*worker, *url, *logDir, *oldBuild)
	} else {
		err = coordinate(*total, *nWorkers)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// coordinate runs the server, the workers and the producer, and checks that
// every task ran.
func coordinate(n, workers int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "smartpool-distributed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, err := jetstream.Embedded(ctx, jetstream.EmbeddedOptions{Dir: filepath.Join(dir, "store"), Listen: "127.0.0.1:0"})
	if err != nil {
		return err
	}
	defer srv.Close()

	exe, err := os.Executable()
	if err != nil {
		return err
	}
	procs := make([]*proc, workers)
	for i := range procs {
		// The last worker runs the old build until the rolling deploy
		// replaces it.
		if procs[i], err = startWorker(exe, i+1, srv.URL(), dir, i == workers-1); err != nil {
			return err
		}
	}

	// The producer: every fifth task is urgent. Publish makes a message ID
	// and retries with it across a lost connection, so each is stored once.
	start := time.Now()
	var next, published atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				ch, handler := bulk, "work"
				if i%5 == 0 {
					ch = urgent
				}
				if i%10 == 3 {
					handler = "v2" // the old build lacks it
				}
				payload := fmt.Sprintf("task-%d %d", i, time.Now().UnixNano())
				if _, err := srv.Publish(ctx, ch, handler, []byte(payload)); err != nil {
					errs <- err
					return
				}
				published.Add(1)
			}
		})
	}
	producing := make(chan struct{})
	go func() {
		wg.Wait()
		close(producing)
		fmt.Printf("published %d tasks in %v\n", n, time.Since(start).Round(time.Millisecond))
	}()

	// Midway (half the tasks done, while the producer may still run), kill
	// worker 1: no ack, no goodbye.
	killed, deployed := false, false
	tick := time.NewTicker(20 * time.Millisecond) // polling the streams' backlog for progress
	defer tick.Stop()
	for {
		left := backlog(ctx, srv)
		done := published.Load() - int64(left)
		if !deployed && left != ^uint64(0) && (time.Since(start) >= oldLife || done >= int64(3*n/4)) {
			// The rolling deploy: start the new build, then stop the old.
			p, err := startWorker(exe, workers+1, srv.URL(), dir, false)
			if err != nil {
				return err
			}
			old := procs[workers-1]
			old.stdin.Close() // it closes its pool and exits
			old.cmd.Wait()
			procs = append(procs, p)
			deployed = true
			fmt.Printf("rolling deploy: worker %d (old build) replaced by worker %d after %v, with %d of %d tasks done\n",
				workers, workers+1, time.Since(start).Round(time.Millisecond), done, n)
		}
		if !killed && left != ^uint64(0) && done >= int64(n/2) {
			procs[0].cmd.Process.Kill()
			procs[0].cmd.Wait()
			killed = true
			fmt.Printf("killed worker 1 with %d of %d tasks done (%d%%)\n", done, n, 100*done/int64(n))
		}
		select {
		case err := <-errs:
			return err
		default:
		}
		if left == 0 && killed && published.Load() == int64(n) {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("%d tasks still queued after 5 minutes", left)
		}
	}
	<-producing
	for i, p := range procs {
		if i == 0 || i == workers-1 {
			continue // killed, or replaced
		}
		p.stdin.Close() // the worker closes its pool and exits
		p.cmd.Wait()
	}
	fmt.Printf("all tasks done in %v\n", time.Since(start).Round(time.Millisecond))

	// Every run was logged by the worker that ran it, before its ack, with
	// its wait: from publish to start.
	runs := map[string]int{}
	var waitV2, waitOther []time.Duration
	passes := 0
	for i := range procs {
		n := 0
		err := readLog(filepath.Join(dir, fmt.Sprintf("worker-%d.log", i+1)), func(id, handler string, wait time.Duration) {
			if runs[id]++; runs[id] == 1 {
				if handler == "v2" {
					waitV2 = append(waitV2, wait)
				} else {
					waitOther = append(waitOther, wait)
				}
			}
			n++
		})
		if err != nil {
			return err
		}
		p, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("worker-%d.passed", i+1)))
		k, _ := strconv.Atoi(strings.TrimSpace(string(p)))
		passes += k
		note := ""
		switch i {
		case 0:
			note = " (killed midway)"
		case workers - 1:
			note = fmt.Sprintf(" (old build, replaced; passed on %d v2 tasks)", k)
		case workers:
			note = " (new build)"
		}
		fmt.Printf("worker %d%s: ran %d\n", i+1, note, n)
	}
	ran, extra := 0, 0
	for i := range n {
		if k := runs[fmt.Sprintf("task-%d", i)]; k > 0 {
			ran++
			extra += k - 1
		}
	}
	fmt.Printf("wait from publish to start: v2 tasks %s; other tasks %s\n", quantiles(waitV2), quantiles(waitOther))
	if len(waitV2) > 0 {
		fmt.Printf("passes per v2 task: %.3f (%d passes, %d v2 tasks)\n", float64(passes)/float64(len(waitV2)), passes, len(waitV2))
	}
	fmt.Printf("duplicate runs: %d (tasks the killed worker ran but had not acknowledged)\n", extra)
	fmt.Printf("published %d, ran %d, lost %d\n", n, ran, n-ran)
	if ran != n {
		return errors.New("tasks lost")
	}
	return nil
}

// quantiles formats the p50, p90 and max of ds.
func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	slices.Sort(ds)
	q := func(f float64) time.Duration { return ds[int(f*float64(len(ds)-1))].Round(time.Millisecond) }
	return fmt.Sprintf("p50 %v, p90 %v, max %v (%d)", q(0.5), q(0.9), q(1), len(ds))
}

func backlog(ctx context.Context, c *jetstream.Client) uint64 {
	var sum uint64
	for _, ch := range []string{urgent, bulk} {
		k, err := c.Backlog(ctx, ch)
		if err != nil {
			return ^uint64(0)
		}
		sum += k
	}
	return sum
}

type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func startWorker(exe string, id int, url, dir string, old bool) (*proc, error) {
	cmd := exec.Command(exe, "-worker", fmt.Sprint(id), "-url", url, "-log", dir, fmt.Sprintf("-old=%v", old))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &proc{cmd: cmd, stdin: stdin}, nil
}

// readLog reads a worker's run log: a line per run, "id handler wait"
// (nanoseconds from publish to start).
func readLog(path string, f func(id, handler string, wait time.Duration)) error {
	file, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer file.Close()
	s := bufio.NewScanner(file)
	for s.Scan() {
		var id, handler string
		var wait int64
		if _, err := fmt.Sscan(s.Text(), &id, &handler, &wait); err == nil {
			f(id, handler, time.Duration(wait))
		}
	}
	return s.Err()
}

// fleet is a worker's pool: the urgent channel above the bulk one.
type fleet struct{ urgent, bulk *jetstream.Channel }

func (f *fleet) Config() smartpool.Config[string] {
	return smartpool.Config[string]{Workers: 4, Levels: [][]smartpool.ChannelParams[string]{
		{{Key: urgent, CompleteOnClose: true}},
		{{Key: bulk}}, // dropping: on Close its prefetched tasks go back to the stream
	}}
}

func (f *fleet) Channel(k string) smartpool.Channel {
	if k == urgent {
		return f.urgent
	}
	return f.bulk
}

func (f *fleet) Followup(k string) string { return k }

// runWorker consumes both channels until its stdin closes. The old build
// lacks the handler "v2".
func runWorker(id int, url, dir string, old bool) error {
	ctx := context.Background()
	logf, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("worker-%d.log", id)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	c, err := jetstream.Connect(ctx, url, jetstream.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	var mu sync.Mutex
	run := func(handler string, payload []byte) error {
		start := time.Now()
		var id string
		var published int64
		fmt.Sscan(string(payload), &id, &published)
		time.Sleep(200 * time.Microsecond) // the work itself
		mu.Lock()
		defer mu.Unlock()
		_, err := fmt.Fprintf(logf, "%s %s %d\n", id, handler, start.Sub(time.Unix(0, published)).Nanoseconds())
		return err
	}
	reg := jetstream.NewRegistry()
	handlers := []string{"work", "v2"}
	if old {
		handlers = handlers[:1]
	}
	for _, h := range handlers {
		if err := reg.Handle(h, func(_ context.Context, p []byte) error { return run(h, p) }); err != nil {
			return err
		}
	}
	// UnknownDelay: how long the old build keeps a v2 task before passing
	// it on (default 5 s; shorter here for the demonstration).
	opts := jetstream.ChannelOptions{Prefetch: 8, AckWait: ackWait, UnknownDelay: time.Second}
	f := &fleet{}
	if f.urgent, err = c.Channel(ctx, urgent, reg, opts); err != nil {
		return err
	}
	if f.bulk, err = c.Channel(ctx, bulk, reg, opts); err != nil {
		return err
	}
	pool, err := smartpool.New[string](f)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, os.Stdin) // until the coordinator says stop
	report, err := pool.Close(ctx)
	if err != nil {
		return err
	}
	u, b := f.urgent.Stats(), f.bulk.Stats()
	t := report.Total()
	// A delivery that is not a message's first is mostly one that another
	// worker fetched and handed back at its Close, or that the killed
	// worker held: it ran once for all that (see "duplicate runs").
	fmt.Printf("worker %d: pool ran %d; fetched %d (of which not a first delivery %d), handed back %d, passed on %d\n",
		id, t.Ran, u.Fetched+b.Fetched, u.Redelivered+b.Redelivered, u.HandedBack+b.HandedBack, u.PassedOn+b.PassedOn)
	return os.WriteFile(filepath.Join(dir, fmt.Sprintf("worker-%d.passed", id)), fmt.Appendf(nil, "%d\n", u.PassedOn+b.PassedOn), 0o644)
}
