package jetstream

import (
	"context"
	"testing"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"
)

// A delivery that reached no process, as a failover cuts off a pull in
// flight (a bare consumer fetches the message and drops it), comes back
// within the recovery's delay instead of after AckWait (30 s), while a
// message another handler of the fleet holds meanwhile is kept alive and
// runs once.
func TestRecoverLostDelivery(t *testing.T) {
	const ackWait = 30 * time.Second
	srv := embedded(t, t.TempDir(), true)
	ty := newTally()
	held, release := make(chan string, 2), make(chan struct{})
	reg := NewRegistry()
	if err := reg.Handle("work", ty.handler); err != nil {
		t.Fatal(err)
	}
	if err := reg.Handle("hold", func(ctx context.Context, p []byte) error {
		held <- string(p)
		<-release
		return ty.handler(ctx, p)
	}); err != nil {
		t.Fatal(err)
	}
	c, err := Connect(testCtx(t), srv.URL(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ch, err := c.Channel(testCtx(t), "lost", reg, ChannelOptions{AckWait: ackWait, Prefetch: 2})
	if err != nil {
		t.Fatal(err)
	}

	lost := publishN(t, srv, "lost", "work", "x", 1)
	cons, err := srv.js.Consumer(testCtx(t), streamName("lost"), consumerName)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, njs.FetchMaxWait(bound))
	if err != nil {
		t.Fatal(err)
	}
	if m := recv(t, batch.Messages(), "the delivery to be lost"); string(m.Data()) != lost[0] {
		t.Fatalf("fetched %q, want %q", m.Data(), lost[0])
	} // dropped: neither acknowledged nor kept alive

	p := onePool(t, ch, 2)
	t.Cleanup(func() { close(release); closePool(t, p) })
	publishN(t, srv, "lost", "hold", "h", 1)
	recv(t, held, "the held message to start")

	start := time.Now()
	ch.recoverLost() // what a leader election, a reconnection or fetches that recover start
	ty.waitAll(t, lost)
	took := time.Since(start)
	until(t, "the recovery's keep-alive window ends", func() bool { return time.Now().UnixNano() > ch.fo.aliveUntil.Load() })
	s := ch.Stats()
	t.Logf("the lost delivery ran %v after the recovery began (AckWait %v, delay %v); %+v", took.Round(time.Millisecond), ackWait, ch.recoverDelay(), s)
	if took > ch.recoverDelay()+2*time.Second {
		t.Errorf("the lost delivery ran %v after the recovery began, want within its delay %v plus 2 s", took, ch.recoverDelay())
	}
	if s.FailoverChecks != 1 || s.FailoverNaks != 2 {
		t.Errorf("FailoverChecks %d, FailoverNaks %d; want 1 and 2 (the lost message and the held one)", s.FailoverChecks, s.FailoverNaks)
	}
	select {
	case id := <-held:
		t.Fatalf("%s, held by a handler and kept alive, was delivered again", id)
	default:
	}
	if s.Redelivered != 1 {
		t.Errorf("Redelivered %d, want 1: the lost delivery only", s.Redelivered)
	}
}
