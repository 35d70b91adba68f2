package smartpool_test

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/scheduler"
	"github.com/smartpool-go/smartpool/source"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Test durations: long bounds every wait for an event (eventually polls with
// it as a deadline; no test sleeps a fixed time to wait for one).
const long = 10 * time.Second

// scale multiplies a count by SMARTPOOL_TEST_SCALE and divides it by 4 under
// the race detector (raceDivisor, set in race_test.go).
func scale(n int) int {
	f := 1.0
	if s, err := strconv.ParseFloat(os.Getenv("SMARTPOOL_TEST_SCALE"), 64); err == nil && s > 0 {
		f = s
	}
	return max(1, int(float64(n)*f)/raceDivisor)
}

// seeded returns a PCG seeded from SMARTPOOL_TEST_SEED or at random, and logs
// the seed so a failure can be replayed.
func seeded(t testing.TB) *rand.Rand {
	seed, err := strconv.ParseUint(os.Getenv("SMARTPOOL_TEST_SEED"), 10, 64)
	if err != nil {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with SMARTPOOL_TEST_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0x5eed))
}

// ch is one channel of a test behavior.
type ch struct {
	key         string
	c           smartpool.Channel
	coc         bool
	onEnd       func(smartpool.Task, smartpool.Outcome) // ChannelParams.OnEnd
	followup    string                                  // "" means itself
	maxRunning  int
	maxInFlight int
	rate        smartpool.Rate // ChannelParams.Rate
}

// taskEnd is one ending an OnEnd callback received.
type taskEnd struct {
	t smartpool.Task
	o smartpool.Outcome
}

// endLog is an OnEnd callback that records every ending, in order.
type endLog struct {
	mu   sync.Mutex
	ends []taskEnd
}

func (l *endLog) fn(t smartpool.Task, o smartpool.Outcome) {
	l.mu.Lock()
	l.ends = append(l.ends, taskEnd{t, o})
	l.mu.Unlock()
}

// all returns the endings so far.
func (l *endLog) all() []taskEnd {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]taskEnd(nil), l.ends...)
}

// endCounter is an OnEnd callback that counts endings by outcome.
type endCounter struct {
	n   [smartpool.DroppedDisplaced + 1]atomic.Int32
	bad atomic.Int32 // outcomes out of range
}

func (c *endCounter) fn(_ smartpool.Task, o smartpool.Outcome) {
	if o < smartpool.Ran || o > smartpool.DroppedDisplaced {
		c.bad.Add(1)
		return
	}
	c.n[o].Add(1)
}

// of returns how many endings had outcome o.
func (c *endCounter) of(o smartpool.Outcome) int32 { return c.n[o].Load() }

// total returns how many endings it received, out-of-range ones included.
func (c *endCounter) total() int32 {
	n := c.bad.Load()
	for o := smartpool.Ran; o <= smartpool.DroppedDisplaced; o++ {
		n += c.of(o)
	}
	return n
}

// behavior is a PoolBehavior built from a table, keyed by strings.
type behavior struct {
	workers int
	limit   int // Config.Limit
	sched   scheduler.Scheduler
	levels  [][]ch
	onPanic func(string, *smartpool.PanicError)
	idle    time.Duration                                                           // Config.IdleTimeout; 0: testIdleTimeout
	logger  *slog.Logger                                                            // Config.Logger
	spare   []int                                                                   // Config.Spare: non-nil makes the channels removable (reshape.go)
	quantum int                                                                     // Config.Quantum
	observe func(ctx context.Context, key string, level int) smartpool.TaskObserver // Config.Observe
}

// testIdleTimeout is the tests' Config.IdleTimeout: so short that idle
// workers' goroutines end and start again all the time, in every test, so
// that the race between a goroutine giving up its worker and a wake-up
// claiming it is played everywhere.
const testIdleTimeout = 20 * time.Microsecond

func (b *behavior) Config() smartpool.Config[string] {
	cfg := smartpool.Config[string]{Workers: b.workers, Limit: b.limit, Schedule: b.sched, PanicHandler: b.onPanic, IdleTimeout: b.idle, Logger: b.logger, Spare: b.spare, Quantum: b.quantum, Observe: b.observe}
	if b.idle == 0 {
		cfg.IdleTimeout = testIdleTimeout
	}
	// The watchdog's timer is always pending, so in a synctest bubble a
	// deadlock would advance fake time for ever instead of failing at once
	// (the endings matrix relies on it): off, except where stall_test.go
	// turns it on.
	cfg.StallAfter = -1
	for _, lv := range b.levels {
		var ps []smartpool.ChannelParams[string]
		for _, c := range lv {
			ps = append(ps, smartpool.ChannelParams[string]{Key: c.key, CompleteOnClose: c.coc, OnEnd: c.onEnd, MaxRunning: c.maxRunning, MaxInFlight: c.maxInFlight, Rate: c.rate})
		}
		cfg.Levels = append(cfg.Levels, ps)
	}
	return cfg
}

// key returns the key of the i-th channel in configuration order.
func (b *behavior) key(i int) string {
	for _, lv := range b.levels {
		if i < len(lv) {
			return lv[i].key
		}
		i -= len(lv)
	}
	return ""
}

func (b *behavior) find(k string) *ch {
	for _, lv := range b.levels {
		for i := range lv {
			if lv[i].key == k {
				return &lv[i]
			}
		}
	}
	return nil
}

func (b *behavior) Channel(k string) smartpool.Channel {
	if c := b.find(k); c != nil {
		return c.c
	}
	return nil
}

func (b *behavior) Followup(k string) string {
	if c := b.find(k); c != nil && c.followup != "" {
		return c.followup
	}
	return k
}

// start builds the pool and registers a cleanup that closes it within 2×long,
// dumping every goroutine's stack if it does not.
func start(t testing.TB, b *behavior) *smartpool.OwnedPool[string] {
	t.Helper()
	o, err := smartpool.New[string](b)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { closeWithin(t, o, 2*long) })
	return o
}

func closeWithin(t testing.TB, o *smartpool.OwnedPool[string], d time.Duration) *smartpool.Report[string] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r, err := o.Close(ctx)
	if err != nil {
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		t.Fatalf("Close: %v\n%s", err, buf.String())
	}
	return r
}

// fifo returns a complete-on-close FIFO channel named key.
func fifo(key string) ch { return ch{key: key, c: channels.NewFIFO(), coc: true} }

// submit submits fn by key and fails the test on error.
func submit(t testing.TB, o *smartpool.OwnedPool[string], key string, fn func(context.Context)) {
	t.Helper()
	if err := o.Pool().Submit(key, fn); err != nil {
		t.Fatalf("Submit(%q): %v", key, err)
	}
}

// gate is a handshake: tasks signal started and wait for release.
type gate struct {
	started chan string
	release chan struct{}
}

func newGate() *gate { return &gate{started: make(chan string, 1<<16), release: make(chan struct{})} }

func (g *gate) task(name string) func(context.Context) {
	return func(context.Context) {
		g.started <- name
		<-g.release
	}
}

// waitStarted waits for n tasks to signal started and returns their names.
func (g *gate) waitStarted(t testing.TB, n int) []string {
	t.Helper()
	var names []string
	timeout := time.After(long)
	for range n {
		select {
		case s := <-g.started:
			names = append(names, s)
		case <-timeout:
			t.Fatalf("only %d of %d tasks started within %v", len(names), n, long)
		}
	}
	return names
}

// waitFor waits until done is closed, failing after long.
func waitFor(t testing.TB, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(long):
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		t.Fatalf("timed out waiting for %s\n%s", what, buf.String())
	}
}

// eventually polls cond until it holds, failing after long. It yields the
// processor between polls; it is a bounded wait for an event, not a sleep.
func eventually(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(long)
	for !cond() {
		if time.Now().After(deadline) {
			var buf bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
			t.Fatalf("condition not met within %v\n%s", long, buf.String())
		}
		runtime.Gosched()
	}
}

func seededFrom(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

func runtimeGoexit() { runtime.Goexit() }

// src returns c's Source, for tests that drive a channel as the pool does.
func src(c smartpool.Channel) source.Source { return source.SourceOf(c) }

// goF is Go for tests that read a refusal through the Future, as a Wait's
// error: a refused submit gives a Future resolved with its error.
func goF[T any](f *smartpool.Future[T], err error) *smartpool.Future[T] {
	if err == nil {
		return f
	}
	t, f := smartpool.NewFuture(func(context.Context) (T, error) { var zero T; return zero, err })
	t.Run(context.Background())
	return f
}

// goWait runs fn through Go and waits for its result; a refused submit is
// its error.
func goWait[T any](ctx context.Context, p *smartpool.Pool[string], key string, fn func(context.Context) (T, error), opts ...smartpool.Option) (T, error) {
	f, err := smartpool.Go(p, key, fn, opts...)
	if err != nil {
		var zero T
		return zero, err
	}
	return f.Wait(ctx)
}
