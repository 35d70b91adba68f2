package jetstream

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
)

// A handler that fails is retried after its backoff; after MaxDeliver
// attempts the message is terminated and dead-lettered, not redelivered for
// ever.
func TestRetryThenDeadLetter(t *testing.T) {
	c := embedded(t, t.TempDir(), false)
	var attempts atomic.Int32
	dead := make(chan DeadLetter, 2)
	reg := NewRegistry()
	boom := errors.New("boom")
	if err := reg.Handle("fail", func(context.Context, []byte) error { attempts.Add(1); return boom }); err != nil {
		t.Fatal(err)
	}
	ch, err := c.Channel(testCtx(t), "retry", reg, ChannelOptions{MaxDeliver: 3,
		Backoff: func(int) time.Duration { return time.Millisecond }, OnDeadLetter: func(d DeadLetter) { dead <- d }})
	if err != nil {
		t.Fatal(err)
	}
	onePool(t, ch, 1)
	if _, err := c.Publish(testCtx(t), "retry", "fail", []byte("a")); err != nil {
		t.Fatal(err)
	}
	d := recv(t, dead, "the dead letter")
	if !errors.Is(d.Err, boom) || d.Deliveries != 3 || attempts.Load() != 3 {
		t.Fatalf("dead letter %+v after %d attempts: want boom after 3", d, attempts.Load())
	}
	s := ch.Stats()
	t.Logf("channel %+v", s)
	if s.Retried != 2 || s.DeadLettered != 1 || s.Acked != 0 {
		t.Fatalf("retried %d, dead-lettered %d: want 2 and 1", s.Retried, s.DeadLettered)
	}
	if n, err := c.DeadLetterCount(testCtx(t), "retry"); err != nil || n != 1 {
		t.Fatalf("dead-letter stream holds %d (%v), want 1", n, err)
	}
}

// A handler that panics has its message retried (the pool counts the
// panic); the retry runs.
func TestPanicRetried(t *testing.T) {
	c := embedded(t, t.TempDir(), false)
	var attempts atomic.Int32
	ty := newTally()
	reg := NewRegistry()
	if err := reg.Handle("flaky", func(ctx context.Context, p []byte) error {
		if attempts.Add(1) == 1 {
			panic("first attempt")
		}
		return ty.handler(ctx, p)
	}); err != nil {
		t.Fatal(err)
	}
	ch, err := c.Channel(testCtx(t), "flaky", reg, ChannelOptions{Backoff: func(int) time.Duration { return time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	panics := make(chan *smartpool.PanicError, 1)
	p, err := smartpool.New[string](&panicBehavior{behavior{workers: 1, levels: [][]string{{"flaky"}},
		chans: map[string]smartpool.Channel{"flaky": ch}}, panics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closePool(t, p) })
	ids := publishN(t, c, "flaky", "flaky", "p", 1)
	ty.waitAll(t, ids)
	if pe := recv(t, panics, "the panic"); pe.Value != "first attempt" {
		t.Fatalf("panic %v", pe.Value)
	}
	r := closePool(t, p)
	cs, _ := r.Channel("flaky")
	if s := ch.Stats(); s.Retried != 1 || s.Acked != 1 || cs.Panicked != 1 || cs.Ran != 1 {
		t.Fatalf("channel %+v, pool %+v: want one retry, one ack, one panic, one run", s, cs)
	}
}

type panicBehavior struct {
	behavior
	panics chan *smartpool.PanicError
}

func (b *panicBehavior) Config() smartpool.Config[string] {
	cfg := b.behavior.Config()
	cfg.PanicHandler = func(_ string, p *smartpool.PanicError) { b.panics <- p }
	return cfg
}

// A payload over the server's maximum is refused with ErrTooLarge.
func TestPayloadTooLarge(t *testing.T) {
	c, err := Embedded(testCtx(t), EmbeddedOptions{Dir: t.TempDir(), MaxPayload: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Publish(testCtx(t), "big", "x", make([]byte, 512)); err != nil {
		t.Fatalf("a payload under the maximum: %v", err)
	}
	if _, err := c.Publish(testCtx(t), "big", "x", make([]byte, 4096)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("4 KiB against a 1 KiB maximum: %v, want ErrTooLarge", err)
	}
}

// A server that is not there fails Connect with ErrUnreachable within the
// connect timeout, not later.
func TestUnreachableServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	start := time.Now()
	_, err = Connect(context.Background(), "nats://"+addr, Options{ConnectTimeout: 500 * time.Millisecond})
	if took := time.Since(start); !errors.Is(err, ErrUnreachable) || took > 5*time.Second {
		t.Fatalf("Connect to a closed port: %v after %v; want ErrUnreachable within 5 s", err, took)
	}
	t.Logf("error after %v: %v", time.Since(start).Round(time.Millisecond), err)
}

// A consumer dies mid-task (its connection closes without an ack): the
// server delivers the message again after AckWait, to another pool, which
// runs it. Nothing is lost.
func TestConsumerDiesMidTask(t *testing.T) {
	srv := embedded(t, t.TempDir(), true)
	ty := newTally()
	started, release := make(chan string, 1), make(chan struct{})
	var blocked atomic.Bool
	regA := NewRegistry()
	if err := regA.Handle("work", func(ctx context.Context, p []byte) error {
		if blocked.CompareAndSwap(false, true) {
			started <- string(p)
			<-release // the process "dies" here: its connection closes
			return nil
		}
		return ty.handler(ctx, p)
	}); err != nil {
		t.Fatal(err)
	}
	a, err := Connect(testCtx(t), srv.URL(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	chA, err := a.Channel(testCtx(t), "fleet", regA, ChannelOptions{AckWait: fastAck, Prefetch: 2})
	if err != nil {
		t.Fatal(err)
	}
	ids := publishN(t, srv, "fleet", "work", "d", 40)
	poolA := onePool(t, chA, 1)
	victim := <-started
	a.nc.Close() // dies: no ack, no keep-alive from here on
	close(release)
	closePool(t, poolA)

	regB := NewRegistry()
	if err := regB.Handle("work", ty.handler); err != nil {
		t.Fatal(err)
	}
	b, err := Connect(testCtx(t), srv.URL(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	chB, err := b.Channel(testCtx(t), "fleet", regB, ChannelOptions{AckWait: fastAck})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	onePool(t, chB, 2)
	ty.waitAll(t, ids)
	ran, twice, lost := ty.summary(ids)
	sa, sb := chA.Stats(), chB.Stats()
	t.Logf("published %d, ran %d (twice %d), redelivered %d, lost %d; victim %s ran on B after %v; A %+v; B %+v",
		len(ids), ran, twice, sb.Redelivered, lost, victim, time.Since(start).Round(time.Millisecond), sa, sb)
	if lost != 0 || sb.Redelivered == 0 {
		t.Fatalf("lost %d, redelivered %d: want 0 lost and the victim redelivered", lost, sb.Redelivered)
	}
}

// A process stops with messages queued (some fetched, some never fetched)
// and starts again on the same storage directory: the new process runs
// them all. Messages the server sent to a fetch that Close abandoned come
// back after AckWait (1 s here).
func TestRestartRunsQueued(t *testing.T) {
	dir := t.TempDir()
	ty := newTally()
	hold, release := make(chan struct{}), make(chan struct{})
	var n atomic.Int32
	reg := NewRegistry()
	if err := reg.Handle("work", func(ctx context.Context, p []byte) error {
		if n.Add(1) == 11 { // the 11th run holds the only worker until the pool's Close began
			close(hold)
			<-release
		}
		return ty.handler(ctx, p)
	}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	first := 0
	func() {
		c, err := Embedded(testCtx(t), EmbeddedOptions{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// ConfirmAcks: an ack sent just before the server stops may otherwise be
		// lost with it, and its message run again after the restart.
		ch, err := c.Channel(testCtx(t), "durable", reg, ChannelOptions{Prefetch: 8, AckWait: time.Second, ConfirmAcks: true})
		if err != nil {
			t.Fatal(err)
		}
		ids = publishN(t, c, "durable", "work", "r", 100)
		p := onePool(t, ch, 1)
		recv(t, hold, "the 11th run")
		go func() {
			until(t, "the prefetched messages handed back", func() bool { return ch.Stats().HandedBack > 0 })
			close(release)
		}()
		closePool(t, p) // dropping: the prefetched messages go back
		first = len(ty.runs)
		t.Logf("first run: %d ran; channel %+v", first, ch.Stats())
	}()
	c, err := Embedded(testCtx(t), EmbeddedOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ch, err := c.Channel(testCtx(t), "durable", reg, ChannelOptions{AckWait: time.Second}) // every process gives the same AckWait
	if err != nil {
		t.Fatal(err)
	}
	onePool(t, ch, 2)
	ty.waitAll(t, ids)
	ran, twice, lost := ty.summary(ids)
	t.Logf("published %d, ran %d (%d before the restart, twice %d), lost %d; after restart %+v", len(ids), ran, first, twice, lost, ch.Stats())
	if lost != 0 || twice != 0 || first == len(ids) {
		t.Fatalf("lost %d, ran twice %d (acknowledged before the stop), %d ran before the restart", lost, twice, first)
	}
}

// The connection drops twice while messages run: once by the client
// (ForceReconnect), once because the server stops and starts again on the
// same port and directory. The client reconnects, every message runs, and
// the pool's and the channel's counts agree.
func TestConnectionLostMidRun(t *testing.T) {
	dir := t.TempDir()
	srv, err := Embedded(testCtx(t), EmbeddedOptions{Dir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(srv.URL(), "nats://")
	c, err := Connect(testCtx(t), srv.URL(), Options{ReconnectWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ty := newTally()
	reg := NewRegistry()
	if err := reg.Handle("work", ty.handler); err != nil {
		t.Fatal(err)
	}
	ch, err := c.Channel(testCtx(t), "flap", reg, ChannelOptions{AckWait: fastAck, Prefetch: 4})
	if err != nil {
		t.Fatal(err)
	}
	ids := publishN(t, srv, "flap", "work", "f", 300)
	p := onePool(t, ch, 2)
	ty.waitFor(t, "50 ran before the first drop", func(runs map[string]int) bool { return len(runs) >= 50 })
	if err := c.nc.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	ty.waitFor(t, "150 ran before the server stops", func(runs map[string]int) bool { return len(runs) >= 150 })
	srv.Close()
	srv, err = Embedded(testCtx(t), EmbeddedOptions{Dir: dir, Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ty.waitAll(t, ids)
	until(t, "every fetched message settled", func() bool { return ch.Stats().Held == 0 })
	r := closePool(t, p)
	cs, _ := r.Channel("flap")
	s := ch.Stats()
	ran, twice, lost := ty.summary(ids)
	t.Logf("published %d, ran %d (twice %d), redelivered %d, lost %d; pool ran %d; channel %+v", len(ids), ran, twice, s.Redelivered, lost, cs.Ran, s)
	if lost != 0 || cs.Queued != 0 || ch.Len() != 0 {
		t.Fatalf("lost %d, queued %d", lost, cs.Queued)
	}
	// Every fetched message was run by the pool or handed back.
	if cs.Ran+cs.Panicked != s.Fetched-s.HandedBack {
		t.Fatalf("pool ran %d, channel fetched %d and handed back %d", cs.Ran, s.Fetched, s.HandedBack)
	}
}
