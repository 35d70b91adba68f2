package jetstream

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startCluster starts three JetStream servers in this process, routed to
// each other on loopback, and returns them with a URL list for clients.
func startCluster(t *testing.T) ([]*server.Server, string) {
	t.Helper()
	var routes []*url.URL
	var ports []int
	for range 3 { // free loopback ports for the routes, so every server can list all three
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		ports = append(ports, port)
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", port)})
	}
	var servers []*server.Server
	for i := range 3 {
		o := &server.Options{ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: server.RANDOM_PORT,
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true, Routes: routes,
			Cluster: server.ClusterOpts{Name: "smartpool", Host: "127.0.0.1", Port: ports[i]}}
		s, err := server.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start() // a clustered JetStream server's Start waits for its peers
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		servers = append(servers, s)
	}
	var urls []string
	for i, s := range servers {
		if !s.ReadyForConnections(bound) {
			t.Fatalf("server %d not ready", i+1)
		}
		urls = append(urls, s.ClientURL())
	}
	return servers, strings.Join(urls, ",")
}

// A three-node cluster with an R3 stream: the stream's leader is stopped
// while a producer publishes and two pools consume. Every publish the
// stream acknowledged runs at least once.
func TestClusterLeaderLoss(t *testing.T) {
	servers, urls := startCluster(t)
	opts := Options{Replicas: 3, ReconnectWait: 50 * time.Millisecond}
	var prod *Client
	until(t, "the cluster elects a JetStream leader", func() bool {
		var err error
		prod, err = Connect(testCtx(t), urls, opts)
		return err == nil
	})
	defer prod.Close()
	ty := newTally()
	reg := NewRegistry()
	if err := reg.Handle("work", ty.handler); err != nil {
		t.Fatal(err)
	}
	var chans []*Channel
	for range 2 {
		c, err := Connect(testCtx(t), urls, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var ch *Channel
		until(t, "the cluster takes the stream", func() bool { // a meta leader is elected first
			ch, err = c.Channel(testCtx(t), "ha", reg, ChannelOptions{AckWait: fastAck, Prefetch: 4})
			return err == nil
		})
		chans = append(chans, ch)
		onePool(t, ch, 2)
	}

	const n = 300
	var mu sync.Mutex
	var acked []string
	var retries int
	published := make(chan int, n) // how many were acknowledged so far
	go func() {
		defer close(published)
		for i := range n {
			id := fmt.Sprintf("h-%d", i)
			deadline := time.Now().Add(bound)
			for time.Now().Before(deadline) { // same ID on every retry: stored once
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err := prod.Publish(ctx, "ha", "work", []byte(id), WithMsgID(id))
				cancel()
				if err == nil {
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
					break
				}
				mu.Lock()
				retries++
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
	leader.Shutdown()
	leader.WaitForShutdown()
	for range published {
	}
	mu.Lock()
	ids := append([]string(nil), acked...)
	mu.Unlock()
	ty.waitAll(t, ids)
	ran, twice, lost := ty.summary(ids)
	var redelivered uint64
	for _, ch := range chans {
		redelivered += ch.Stats().Redelivered
	}
	t.Logf("stopped leader %s; published %d (acknowledged %d, %d publish retries), ran %d (twice %d), redelivered %d, lost %d; %+v / %+v",
		leader.Name(), n, len(ids), retries, ran, twice, redelivered, lost, chans[0].Stats(), chans[1].Stats())
	if lost != 0 || len(ids) != n {
		t.Fatalf("acknowledged %d of %d, lost %d", len(ids), n, lost)
	}
}
