// Command distributed shows a JetStream channel shared by a fleet: it starts
// an embedded NATS server, three worker processes (this binary again, with
// -worker) and a producer that publishes tasks over two levels. Midway it
// kills one worker; the messages that worker held are delivered again to
// the others after AckWait. At the end it prints what each worker ran and
// "published N, ran N, lost 0".
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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/jetstream"
)

var (
	worker   = flag.Int("worker", 0, "run as worker number `n` (set by the coordinator)")
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

func main() {
	flag.Parse()
	var err error
	if *worker > 0 {
		err = runWorker(*worker, *url, *logDir)
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
		if procs[i], err = startWorker(exe, i+1, srv.URL(), dir); err != nil {
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
				ch := bulk
				if i%5 == 0 {
					ch = urgent
				}
				id := fmt.Sprintf("task-%d", i)
				if _, err := srv.Publish(ctx, ch, "work", []byte(id)); err != nil {
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
	killed := false
	tick := time.NewTicker(20 * time.Millisecond) // polling the streams' backlog for progress
	defer tick.Stop()
	for {
		left := backlog(ctx, srv)
		done := published.Load() - int64(left)
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
	for _, p := range procs[1:] {
		p.stdin.Close() // the worker closes its pool and exits
		p.cmd.Wait()
	}
	fmt.Printf("all tasks done in %v\n", time.Since(start).Round(time.Millisecond))

	// Every run was logged by the worker that ran it, before its ack.
	runs := map[string]int{}
	for i := range procs {
		n := 0
		if err := readLog(filepath.Join(dir, fmt.Sprintf("worker-%d.log", i+1)), func(id string) { runs[id]++; n++ }); err != nil {
			return err
		}
		note := ""
		if i == 0 {
			note = " (killed midway)"
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
	fmt.Printf("duplicate runs: %d (tasks the killed worker ran but had not acknowledged)\n", extra)
	fmt.Printf("published %d, ran %d, lost %d\n", n, ran, n-ran)
	if ran != n {
		return errors.New("tasks lost")
	}
	return nil
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

func startWorker(exe string, id int, url, dir string) (*proc, error) {
	cmd := exec.Command(exe, "-worker", fmt.Sprint(id), "-url", url, "-log", dir)
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

func readLog(path string, f func(id string)) error {
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
		if id := strings.TrimSpace(s.Text()); id != "" {
			f(id)
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

// runWorker consumes both channels until its stdin closes.
func runWorker(id int, url, dir string) error {
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
	reg := jetstream.NewRegistry()
	err = reg.Handle("work", func(ctx context.Context, payload []byte) error {
		time.Sleep(200 * time.Microsecond) // the work itself
		_, err := logf.Write(append(payload, '\n'))
		return err
	})
	if err != nil {
		return err
	}
	opts := jetstream.ChannelOptions{Prefetch: 8, AckWait: ackWait}
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
	fmt.Printf("worker %d: pool ran %d; fetched %d (of which not a first delivery %d), handed back %d\n",
		id, t.Ran, u.Fetched+b.Fetched, u.Redelivered+b.Redelivered, u.HandedBack+b.HandedBack)
	return nil
}
