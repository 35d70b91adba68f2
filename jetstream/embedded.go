package jetstream

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbeddedOptions configure the server Embedded starts.
type EmbeddedOptions struct {
	// Dir is where JetStream keeps its files. Required: a process that
	// starts again on the same Dir finds the messages it left.
	Dir string
	// Listen is a loopback address ("127.0.0.1:4222", or port 0 for any
	// free port) on which other processes may connect (see Client.URL).
	// Empty: no listener at all; the client connects in-process.
	Listen string
	// MaxPayload is the largest message the server accepts, in bytes.
	// Default 1 MiB (the NATS default).
	MaxPayload int32
	// SyncInterval is how often the server flushes its files to disk
	// (fsync). Default: the server's, 2 minutes: a power loss (not a
	// process crash) may lose up to that much acknowledged work. Shorter
	// costs disk writes; see BENCHMARKS.md.
	SyncInterval time.Duration
	// SyncAlways flushes every write to disk before it is acknowledged:
	// nothing acknowledged is lost to a power loss, at the price measured
	// in BENCHMARKS.md. It overrides SyncInterval.
	SyncAlways bool
	// Client configures the client connected to the server.
	Client Options
}

// Embedded starts a NATS server with JetStream inside this process and
// returns a client connected to it. Client.Close shuts the server down.
//
// An embedded server stands alone: it does not join a cluster. For
// replicated streams run nats-server in a cluster of three (or five) and
// use Connect with Options.Replicas 3 in every process.
func Embedded(ctx context.Context, o EmbeddedOptions) (*Client, error) {
	if o.Dir == "" {
		return nil, fmt.Errorf("jetstream: EmbeddedOptions.Dir is required")
	}
	if o.SyncInterval < 0 {
		return nil, fmt.Errorf("jetstream: EmbeddedOptions.SyncInterval %v: negative", o.SyncInterval)
	}
	sopts := &server.Options{
		ServerName: "smartpool",
		JetStream:  true,
		StoreDir:   o.Dir,
		MaxPayload: o.MaxPayload,
		NoSigs:     true,
		NoLog:      true,
		SyncAlways: o.SyncAlways,
	}
	if o.SyncInterval > 0 {
		sopts.SyncInterval = o.SyncInterval
	}
	if o.Listen == "" {
		sopts.DontListen = true
	} else {
		host, port, err := net.SplitHostPort(o.Listen)
		if err != nil {
			return nil, fmt.Errorf("jetstream: Listen %q: %w", o.Listen, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("jetstream: Listen %q: a loopback address only (use Connect for a cluster)", o.Listen)
		}
		sopts.Host = host
		if sopts.Port, err = strconv.Atoi(port); err != nil {
			return nil, fmt.Errorf("jetstream: Listen %q: %w", o.Listen, err)
		}
		if sopts.Port == 0 {
			sopts.Port = server.RANDOM_PORT
		}
	}
	srv, err := server.NewServer(sopts)
	if err != nil {
		return nil, fmt.Errorf("jetstream: embedded server: %w", err)
	}
	srv.Start()
	wait := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	if !srv.ReadyForConnections(wait) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("jetstream: embedded server in %s not ready after %v", o.Dir, wait)
	}
	c, err := connect(ctx, srv.ClientURL(), o.Client, srv)
	if err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, err
	}
	if !sopts.DontListen {
		c.url = srv.ClientURL()
	}
	return c, nil
}

// URL returns the address other processes connect to: the embedded
// server's loopback listener, or "" if it has none or c came from Connect.
func (c *Client) URL() string { return c.url }
