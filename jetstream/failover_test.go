package jetstream

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// A fresh three-node cluster, Replicas 3: three worker processes and a
// producer open the channel at once with context.Background(), then the
// stream's leader is stopped while tasks flow. Every channel opens, no
// acknowledged publish is lost, and every task starts within 15 s of its
// publish with AckWait 30 s: a delivery the old leader made that reached
// no process comes back within the recovery's delay (failover.go), not
// after AckWait. The slowest tasks' timelines are logged. Measured: 3.6 to
// 6.1 s at most on a quiet 2-core machine; 11.8 s on one loaded with other
// jobs, where the stop caused five elections and a delivery was cut off
// twice (each costs the recovery's delay).
func TestClusterOpenAtOnceAndFailover(t *testing.T) {
	const (
		n             = 600
		ackWait       = 30 * time.Second
		failoverBound = 15 * time.Second
	)
	servers, urls := startCluster(t)
	var logs logBuffer
	opts := Options{Replicas: 3, ReconnectWait: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	clients := make([]*Client, 4) // three workers and the producer
	for i := range clients {
		until(t, "the cluster answers", func() bool { // a meta leader is elected first
			var err error
			clients[i], err = Connect(testCtx(t), urls, opts)
			return err == nil
		})
		defer clients[i].Close()
	}
	ty := newTally()
	tl := newTimelines()
	reg := NewRegistry()
	if err := reg.Handle("work", func(ctx context.Context, p []byte) error {
		tl.add(string(p), "started", "")
		time.Sleep(2 * time.Millisecond) // the task's work
		return ty.handler(ctx, p)
	}); err != nil {
		t.Fatal(err)
	}
	chans := make([]*Channel, 3)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			if i == 3 {
				_, errs[i] = clients[i].Backlog(context.Background(), "ha") // creates the streams, as a first Publish does
				return
			}
			chans[i], errs[i] = clients[i].Channel(context.Background(), "ha", reg, ChannelOptions{Prefetch: 4, AckWait: ackWait})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("process %d of 4 opening the channel at once: %v", i+1, err)
		}
	}
	for i, ch := range chans {
		who := fmt.Sprintf("w%d", i+1)
		ch.onEvent = func(what string, m *message) {
			tl.add(string(m.msg.Data()), what, fmt.Sprintf("%s@%s seq %d delivered %d", who, clients[i].nc.ConnectedServerName(), m.seq, m.delivered))
		}
		onePool(t, ch, 2)
	}
	prod := clients[3]

	var mu sync.Mutex
	var acked []string
	published := make(chan int, n)
	go func() {
		defer close(published)
		for i := range n {
			id := fmt.Sprintf("f-%d", i)
			tl.add(id, "publish", "")
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			_, err := prod.Publish(ctx, "ha", "work", []byte(id), WithMsgID(id))
			cancel()
			if err == nil {
				tl.add(id, "published", "")
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
			published <- i + 1
		}
	}()
	for k := range published {
		if k == n/3 {
			break
		}
	}
	var leader *server.Server
	for _, s := range servers {
		if s.JetStreamIsStreamLeader("$G", streamName("ha")) {
			leader = s
		}
	}
	if leader == nil {
		t.Fatal("no stream leader")
	}
	// The stream's leader leads the consumer too, so that its stop cuts
	// deliveries off in flight (as it does in a real fleet whenever one
	// node leads both).
	until(t, "the stream's leader leads its consumer", func() bool {
		if leader.JetStreamIsConsumerLeader("$G", streamName("ha"), consumerName) {
			return true
		}
		req := fmt.Sprintf(`{"placement":{"preferred":%q}}`, leader.Name())
		_, _ = prod.nc.Request(fmt.Sprintf("$JS.API.CONSUMER.LEADER.STEPDOWN.%s.%s", streamName("ha"), consumerName), []byte(req), time.Second)
		return leader.JetStreamIsConsumerLeader("$G", streamName("ha"), consumerName)
	})
	stopped := time.Now()
	tl.add("", "leader stopped", leader.Name())
	leader.Shutdown()
	leader.WaitForShutdown()
	for range published {
	}
	mu.Lock()
	ids := append([]string(nil), acked...)
	mu.Unlock()
	ty.waitAll(t, ids)
	took := time.Since(stopped)
	ran, twice, lost := ty.summary(ids)
	for i, ch := range chans {
		t.Logf("worker %d: %+v", i+1, ch.Stats())
	}
	t.Logf("stopped leader %s; acknowledged %d of %d; all ran %v after the stop; ran %d (twice %d), lost %d; producer %+v",
		leader.Name(), len(ids), n, took.Round(time.Millisecond), ran, twice, lost, prod.ConnStats())
	var elections, outages uint64
	for _, c := range clients {
		elections += c.ConnStats().LeaderElections
		outages += c.ConnStats().FetchOutages
	}
	log := logs.String()
	t.Logf("the last tasks to run, relative to the stop:\n%s", tl.last(ids, stopped, 5))
	var dups []string
	ty.mu.Lock()
	for _, id := range ids {
		if ty.runs[id] > 1 {
			dups = append(dups, id)
		}
	}
	ty.mu.Unlock()
	t.Logf("the tasks that ran twice:\n%s", tl.last(dups, stopped, len(dups)))
	t.Logf("leader elections counted %d, fetch outages %d; log:\n%s", elections, outages, log)
	if elections == 0 || !strings.Contains(log, "elected a new leader") {
		t.Errorf("the election is neither counted (%d) nor logged", elections)
	}
	if lost != 0 || len(ids) != n {
		t.Fatalf("acknowledged %d of %d, lost %d", len(ids), n, lost)
	}
	if wait, id := tl.longestWait(ids); wait > failoverBound {
		t.Errorf("%s waited %v from its publish to its start, want within %v (AckWait %v)", id, wait, failoverBound, ackWait)
	} else {
		t.Logf("longest wait from publish to start: %v (%s)", wait.Round(time.Millisecond), id)
	}
}

// logBuffer is a log destination safe for concurrent writers.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// timelines records what happened to each task, by payload, for a test to
// print the slowest ones.
type timelines struct {
	mu  sync.Mutex
	evs map[string][]tlEvent
}

type tlEvent struct {
	at         time.Time
	what, info string
}

func newTimelines() *timelines { return &timelines{evs: map[string][]tlEvent{}} }

func (tl *timelines) add(id, what, info string) {
	tl.mu.Lock()
	tl.evs[id] = append(tl.evs[id], tlEvent{time.Now(), what, info})
	tl.mu.Unlock()
}

// longestWait returns the longest time from a publish's confirmation to
// its task's first start among ids, and which.
func (tl *timelines) longestWait(ids []string) (time.Duration, string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var longest time.Duration
	var which string
	for _, id := range ids {
		var published time.Time
		for _, e := range tl.evs[id] {
			if e.what == "published" {
				published = e.at
				break
			}
		}
		if d := tl.firstStart(id).Sub(published); d > longest {
			longest, which = d, id
		}
	}
	return longest, which
}

// firstStart returns when id's handler first started.
func (tl *timelines) firstStart(id string) time.Time {
	for _, e := range tl.evs[id] {
		if e.what == "started" {
			return e.at
		}
	}
	return time.Time{}
}

// last formats the timelines of the k tasks of ids that started last,
// times relative to t0.
func (tl *timelines) last(ids []string, t0 time.Time, k int) string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	sorted := slices.Clone(ids)
	slices.SortFunc(sorted, func(a, b string) int { return tl.firstStart(b).Compare(tl.firstStart(a)) })
	var b strings.Builder
	for _, id := range sorted[:min(k, len(sorted))] {
		fmt.Fprintf(&b, "%s:", id)
		for _, e := range tl.evs[id] {
			fmt.Fprintf(&b, " [%+.3fs %s %s]", e.at.Sub(t0).Seconds(), e.what, e.info)
		}
		b.WriteString("\n")
	}
	return b.String()
}
