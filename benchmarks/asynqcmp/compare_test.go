package asynqcmp

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/jetstream"
)

// A system under comparison: two queues, "high" and "low", that workers
// (GOMAXPROCS of them) take strictly by priority, and a handler per queue.
type system interface {
	publish(queue string, payload []byte) error
	close()
}

type handlers struct{ high, low func(payload []byte) }

// startSmartpool runs nats-server with JetStream as a process of its own
// on a loopback port (as redis-server is for asynq) and a pool over two
// JetStream channels, "high" above "low". The server is the version this
// module requires, built from the module cache (natsServer); the benchmark
// skips where it cannot be built.
func startSmartpool(b *testing.B, h handlers) system {
	url := runNatsServer(b)
	var c *jetstream.Client
	untilUp(b, "nats-server", func() (err error) {
		c, err = jetstream.Connect(context.Background(), url, jetstream.Options{Logger: quiet})
		return err
	})
	return newSpSystem(b, c, h)
}

// runNatsServer starts nats-server with JetStream as a process of its own
// on a loopback port, to be killed when b ends, and returns its URL. It
// skips b where no server can be built.
func runNatsServer(b *testing.B) string {
	bin, err := natsServer()
	if err != nil {
		b.Skipf("no nats-server to run as a process (%v): not compared", err)
	}
	port := freePort(b)
	cmd := exec.Command(bin, "-js", "-sd", b.TempDir(), "-a", "127.0.0.1", "-p", fmt.Sprint(port))
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return fmt.Sprintf("nats://127.0.0.1:%d", port)
}

// startEmbedded is startSmartpool with the server embedded in the
// benchmark's process (jetstream.Embedded): its goroutines share the Go
// scheduler, and its GOMAXPROCS Ps, with the pool's workers and the
// client's goroutines.
func startEmbedded(b *testing.B, h handlers) system {
	c, err := jetstream.Embedded(context.Background(), jetstream.EmbeddedOptions{Dir: b.TempDir(), Client: jetstream.Options{Logger: quiet}})
	if err != nil {
		b.Fatal(err)
	}
	return newSpSystem(b, c, h)
}

func newSpSystem(b *testing.B, c *jetstream.Client, h handlers) system {
	ctx := context.Background()
	s := &spSystem{c: c, chans: map[string]*jetstream.Channel{}}
	for q, f := range map[string]func([]byte){"high": h.high, "low": h.low} {
		reg := jetstream.NewRegistry()
		if err := reg.Handle("h", func(_ context.Context, p []byte) error { f(p); return nil }); err != nil {
			b.Fatal(err)
		}
		var err error
		if s.chans[q], err = c.Channel(ctx, q, reg, jetstream.ChannelOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	var err error
	if s.pool, err = smartpool.New[string](s); err != nil {
		b.Fatal(err)
	}
	return s
}

// natsServer returns the path of a nats-server binary: the one
// SMARTPOOL_NATS_SERVER names, or else one built once per test binary
// from the nats-server module this module requires (go build, from the
// module cache), into a directory TestMain removes.
var natsServer = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv("SMARTPOOL_NATS_SERVER"); bin != "" {
		return bin, nil
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", err
	}
	if binDir, err = os.MkdirTemp("", "asynqcmp-nats-server"); err != nil {
		return "", err
	}
	bin := filepath.Join(binDir, "nats-server")
	if out, err := exec.Command(gobin, "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build github.com/nats-io/nats-server/v2: %v: %s", err, out)
	}
	return bin, nil
})

var binDir string // natsServer's build directory, if it made one

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// untilUp calls connect until it succeeds, every 10 ms, and fails b if
// the server it reaches (what) has not answered within 10 s.
func untilUp(b *testing.B, what string, connect func() error) {
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := connect()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s did not answer within 10 s: %v", what, err)
		}
		<-time.After(10 * time.Millisecond)
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type spSystem struct {
	c     *jetstream.Client
	chans map[string]*jetstream.Channel
	pool  *smartpool.OwnedPool[string]
}

func (s *spSystem) Config() smartpool.Config[string] {
	return smartpool.Config[string]{Workers: runtime.GOMAXPROCS(0), Logger: quiet,
		Levels: [][]smartpool.ChannelParams[string]{{{Key: "high"}}, {{Key: "low"}}}}
}
func (s *spSystem) Channel(k string) smartpool.Channel { return s.chans[k] }
func (s *spSystem) Followup(k string) string           { return k }

func (s *spSystem) publish(q string, p []byte) error {
	_, err := s.c.Publish(context.Background(), q, "h", p)
	return err
}

func (s *spSystem) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.pool.Close(ctx)
	s.c.Close()
}

// startAsynq starts redis-server on a loopback port and an asynq server
// with strict priority over "high" and "low"; it skips the benchmark where
// no redis-server is installed.
func startAsynq(b *testing.B, h handlers) system {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		b.Skip("no redis-server installed (apt-get install redis-server): asynq not compared")
	}
	port := freePort(b)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	untilUp(b, "redis-server", func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	})
	opt := asynq.RedisClientOpt{Addr: addr}
	srv := asynq.NewServer(opt, asynq.Config{Concurrency: runtime.GOMAXPROCS(0),
		Queues: map[string]int{"high": 10, "low": 1}, StrictPriority: true, LogLevel: asynq.ErrorLevel})
	mux := asynq.NewServeMux()
	mux.HandleFunc("high", func(_ context.Context, t *asynq.Task) error { h.high(t.Payload()); return nil })
	mux.HandleFunc("low", func(_ context.Context, t *asynq.Task) error { h.low(t.Payload()); return nil })
	if err := srv.Start(mux); err != nil {
		b.Fatal(err)
	}
	return &asynqSystem{srv: srv, client: asynq.NewClient(opt)}
}

type asynqSystem struct {
	srv    *asynq.Server
	client *asynq.Client
}

func (s *asynqSystem) publish(q string, p []byte) error {
	_, err := s.client.Enqueue(asynq.NewTask(q, p), asynq.Queue(q), asynq.MaxRetry(0))
	return err
}

func (s *asynqSystem) close() {
	s.srv.Shutdown()
	s.client.Close()
}

var systems = []struct {
	name  string
	start func(*testing.B, handlers) system
}{{"smartpool-jetstream", startSmartpool}, {"smartpool-jetstream-embedded", startEmbedded}, {"asynq-redis", startAsynq},
	{"jetstream-bare", startBare}, {"jetstream-bare-embedded", startBareEmbedded}}

// BenchmarkPriorityStart measures how long a high-priority task waits to
// start (from its publish to its handler) behind a low-priority backlog of
// about 1,000 tasks of 20 µs kept in the queue (each low task publishes
// its successor): b.N samples, one at a time, for each system.
func BenchmarkPriorityStart(b *testing.B) {
	for _, sys := range systems {
		b.Run(sys.name, func(b *testing.B) {
			lat := make(chan time.Duration, 1)
			var stop atomic.Bool
			var s system
			low := func([]byte) {
				for t := time.Now(); time.Since(t) < 20*time.Microsecond; {
				}
				if !stop.Load() {
					_ = s.publish("low", nil)
				}
			}
			high := func(p []byte) { lat <- time.Since(time.Unix(0, int64(binary.LittleEndian.Uint64(p)))) }
			s = sys.start(b, handlers{high: high, low: low})
			defer s.close()
			defer stop.Store(true)
			for range 1000 {
				if err := s.publish("low", nil); err != nil {
					b.Fatal(err)
				}
			}
			samples := make([]time.Duration, 0, b.N)
			buf := make([]byte, 8)
			b.ResetTimer()
			for range b.N {
				binary.LittleEndian.PutUint64(buf, uint64(time.Now().UnixNano()))
				if err := s.publish("high", buf); err != nil {
					b.Fatal(err)
				}
				select {
				case d := <-lat:
					samples = append(samples, d)
				case <-time.After(time.Minute):
					b.Fatal("a high-priority task did not start within a minute")
				}
			}
			b.StopTimer()
			slices.Sort(samples)
			q := func(f float64) float64 { return float64(samples[int(f*float64(len(samples)-1))].Microseconds()) }
			b.ReportMetric(q(0.5), "p50-µs")
			b.ReportMetric(q(0.9), "p90-µs")
			b.ReportMetric(q(0.99), "p99-µs")
		})
	}
}

// BenchmarkDrain measures how fast each system runs 5,000 published no-op
// tasks: from the first publish (8 publishers) to the last task's end.
func BenchmarkDrain(b *testing.B) {
	const n = 5000
	for _, sys := range systems {
		b.Run(sys.name, func(b *testing.B) {
			var ran atomic.Int64
			done := make(chan struct{}, 1)
			count := func([]byte) {
				if ran.Add(1)%n == 0 {
					done <- struct{}{}
				}
			}
			s := sys.start(b, handlers{high: count, low: count})
			defer s.close()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				var next atomic.Int64
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						for next.Add(1) <= n {
							if err := s.publish("low", nil); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				select {
				case <-done:
				case <-time.After(time.Minute):
					b.Fatalf("ran %d of %d", ran.Load()%n, n)
				}
			}
			b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "tasks/s")
		})
	}
}
