package asynqcmp

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"
)

// startBare is the floor under startSmartpool: the same server process and
// the same streams (file storage, work-queue retention, one durable pull
// consumer each, explicit acks), read with nats.go's own Consume and no
// pool, and published without a message ID (the channel's Publish sets
// one, so that a retry is stored once). The high handler runs in its
// subscription's callback as soon as the message arrives, never waiting
// for a worker; the low queue has GOMAXPROCS callbacks of its own, each
// pulling up to 4 messages ahead, so that the server carries the same
// traffic as under the pool. What the high task waits for here is the
// server's path and the client library's, which any pool on JetStream
// adds to.
func startBare(b *testing.B, h handlers) system {
	url := runNatsServer(b)
	var nc *nats.Conn
	untilUp(b, "nats-server", func() (err error) {
		nc, err = nats.Connect(url)
		return err
	})
	return newBareSystem(b, nc, h)
}

// startBareEmbedded is startBare with the server inside the benchmark's
// process and the client connected in-process, as jetstream.Embedded
// does: the floor under startEmbedded.
func startBareEmbedded(b *testing.B, h handlers) system {
	srv, err := server.NewServer(&server.Options{JetStream: true, StoreDir: b.TempDir(), DontListen: true, NoLog: true, NoSigs: true})
	if err != nil {
		b.Fatal(err)
	}
	go srv.Start()
	b.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		b.Fatal("the embedded server was not ready within 10 s")
	}
	nc, err := nats.Connect("", nats.InProcessServer(srv))
	if err != nil {
		b.Fatal(err)
	}
	return newBareSystem(b, nc, h)
}

func newBareSystem(b *testing.B, nc *nats.Conn, h handlers) system {
	js, err := njs.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	s := &bareSystem{nc: nc, js: js}
	ctx := context.Background()
	for _, q := range []struct {
		name      string
		callbacks int
		handle    func([]byte)
	}{{"high", 1, h.high}, {"low", runtime.GOMAXPROCS(0), h.low}} {
		st, err := js.CreateStream(ctx, njs.StreamConfig{Name: q.name, Subjects: []string{q.name},
			Retention: njs.WorkQueuePolicy, Storage: njs.FileStorage})
		if err != nil {
			b.Fatal(err)
		}
		cons, err := st.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{Durable: "w",
			AckPolicy: njs.AckExplicitPolicy, MaxAckPending: -1})
		if err != nil {
			b.Fatal(err)
		}
		for range q.callbacks {
			cc, err := cons.Consume(func(m njs.Msg) { q.handle(m.Data()); _ = m.Ack() }, njs.PullMaxMessages(4))
			if err != nil {
				b.Fatal(err)
			}
			s.consuming = append(s.consuming, cc)
		}
	}
	return s
}

type bareSystem struct {
	nc        *nats.Conn
	js        njs.JetStream
	consuming []njs.ConsumeContext
}

func (s *bareSystem) publish(q string, p []byte) error {
	_, err := s.js.Publish(context.Background(), q, p)
	return err
}

func (s *bareSystem) close() {
	for _, cc := range s.consuming {
		cc.Stop()
	}
	s.nc.Close()
}
