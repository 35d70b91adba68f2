package jetstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"
)

// Options configure a Client. Zero fields mean the documented defaults.
type Options struct {
	// Replicas is the number of servers that store each channel's stream:
	// 3 on a three-node cluster survives the loss of one. Default 1.
	Replicas int
	// DuplicateWindow is how long the server remembers message IDs
	// (WithMsgID) to drop duplicate publishes. Default 2 minutes.
	DuplicateWindow time.Duration
	// ConnectTimeout bounds the first connection. Default 5 seconds.
	ConnectTimeout time.Duration
	// ReconnectWait is the pause between reconnection attempts after the
	// connection is lost; the client retries for ever. Default 250 ms.
	ReconnectWait time.Duration
	// Logger receives the client's log lines: a lost connection at Warn,
	// its return at Info, timed-out handlers at Warn, dead letters that
	// could not be stored at Error. Pass the pool's Config.Logger to keep
	// one log. nil means slog.Default().
	Logger *slog.Logger
	// NATS are extra connection options (TLS, credentials, nkeys, a
	// name, more handlers), applied after the client's own: see
	// github.com/nats-io/nats.go. Connection handlers given here replace
	// the client's, which keep Stats' connection counts and log.
	NATS []nats.Option
	// Propagator, if set, carries the publisher's context to the handler in
	// message headers: the trace context, so that a task published in one
	// process and run in another is one trace (trace.go). nil: none.
	Propagator Propagator
}

func (o Options) withDefaults() Options {
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.DuplicateWindow <= 0 {
		o.DuplicateWindow = 2 * time.Minute
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 5 * time.Second
	}
	if o.ReconnectWait <= 0 {
		o.ReconnectWait = 250 * time.Millisecond
	}
	return o
}

// Client is a connection to JetStream, and the owner of the channels made
// from it and of the embedded server, if it started one. Close it after the
// pools that use its channels. Safe for concurrent use.
type Client struct {
	nc   *nats.Conn
	js   njs.JetStream
	srv  *server.Server // the embedded server, or nil
	url  string         // the embedded server's listener, if any
	opts Options
	log  *slog.Logger
	conn connState // connection counts (conn.go)

	publishRetries atomic.Uint64 // publish attempts that failed and were tried again
	publishFailing atomic.Bool   // a publish went unanswered and none was answered since: logged once

	mu          sync.Mutex
	streams     map[string]time.Time // channel names whose streams exist, and since when; guarded by mu
	channels    []*Channel           // made by this client; guarded by mu
	created     map[string]time.Time // streams and consumers ("stream/consumer") of the channels opened, and when the server created them; guarded by mu
	leadersSeen map[string]bool      // streams and consumers of this package whose election this client saw; guarded by mu
	closed      bool                 // guarded by mu
	ctx         context.Context      // ends at Close, after the fetches: the channels' goroutines end
	cancel      context.CancelFunc
	wg          sync.WaitGroup // the channels' goroutines
	fetchers    sync.WaitGroup // the channels' fetching goroutines
}

// ErrUnreachable wraps a failure to reach the server at start.
var ErrUnreachable = errors.New("jetstream: server unreachable")

// Connect connects to an existing NATS server or cluster (url may list
// several servers, comma-separated) that has JetStream enabled. It fails
// with an error wrapping ErrUnreachable within Options.ConnectTimeout (or
// ctx's deadline, if sooner) if no server answers.
func Connect(ctx context.Context, url string, opts Options) (*Client, error) {
	return connect(ctx, url, opts, nil)
}

func connect(ctx context.Context, url string, opts Options, srv *server.Server) (*Client, error) {
	opts = opts.withDefaults()
	timeout := opts.ConnectTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = max(time.Until(d), time.Millisecond)
	}
	cl := &Client{srv: srv, opts: opts, streams: map[string]time.Time{}, created: map[string]time.Time{}, leadersSeen: map[string]bool{}, log: opts.Logger}
	if cl.log == nil {
		cl.log = slog.Default()
	}
	nopts := []nats.Option{
		nats.Name("smartpool"),
		nats.Timeout(timeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(opts.ReconnectWait),
		nats.DisconnectErrHandler(cl.disconnected),
		nats.ReconnectHandler(cl.reconnected),
	}
	if srv != nil {
		nopts = append(nopts, nats.InProcessServer(srv))
	}
	nopts = append(nopts, opts.NATS...)
	nc, err := nats.Connect(url, nopts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnreachable, url, err)
	}
	js, err := njs.New(nc)
	if err == nil && !versionAtLeast(nc.ConnectedServerVersion(), minServer) {
		err = fmt.Errorf("%w: the server is %s", ErrServerTooOld, nc.ConnectedServerVersion())
	}
	if err == nil {
		actx, cancel := context.WithTimeout(ctx, timeout)
		_, err = js.AccountInfo(actx)
		cancel()
	}
	if err != nil {
		cl.mu.Lock()
		cl.closed = true // closing the connection is no outage to log
		cl.mu.Unlock()
		nc.Close()
		if errors.Is(err, ErrServerTooOld) {
			return nil, fmt.Errorf("jetstream: %s: %w", url, err)
		}
		return nil, fmt.Errorf("jetstream: %s: JetStream not available: %w", url, err)
	}
	cl.nc, cl.js = nc, js
	cl.watchElections()
	cl.ctx, cl.cancel = context.WithCancel(context.Background())
	return cl, nil
}

// Close stops the goroutines of every channel made from c, closes the
// connection and shuts the embedded server down, if any, waiting for all of
// them. It lets each fetch in flight end (up to 2 s) and hands what it
// brings back to the stream, so no message waits for AckWait; messages
// still running (a pool not closed, a handler past its pool's Close) are
// not acknowledged, and the server delivers them again after AckWait.
// Close the pools first.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	chans := c.channels
	c.mu.Unlock()
	for _, ch := range chans {
		ch.stop() // no new fetch; parked messages handed back
	}
	c.fetchers.Wait() // each fetch ends within fetchWait
	for _, ch := range chans {
		ch.releaseQueued()
	}
	c.cancel()
	c.wg.Wait()
	_ = c.nc.FlushTimeout(2 * time.Second) // settle what handlers acknowledged before the connection goes
	c.nc.Close()
	if c.srv != nil {
		c.srv.Shutdown()
		c.srv.WaitForShutdown()
	}
	return nil
}

// ErrClientClosed is returned by methods of a closed Client.
var ErrClientClosed = errors.New("jetstream: client closed")

// names of a channel's stream, subject and durable consumer.
func streamName(channel string) string { return "SMARTPOOL_" + channel }
func subject(channel string) string    { return "smartpool." + channel }

// names of a channel's pass stream and subject (pass.go).
func passStreamName(channel string) string { return "SMARTPOOL_PASS_" + channel }
func passSubject(channel string) string    { return "smartpool-pass." + channel }

const consumerName = "smartpool"

// validName accepts names that are safe in a stream name and a subject.
func validName(s string) error {
	if s == "" || len(s) > 64 {
		return fmt.Errorf("%w: channel name %q: 1 to 64 characters", ErrBadName, s)
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return fmt.Errorf("%w: channel name %q: letters, digits, '-' and '_' only", ErrBadName, s)
		}
	}
	return nil
}

// ensureStream creates the channel's streams once per client: its work
// stream and its pass stream, work queues (a message is deleted once
// acknowledged or terminated), and its dead-letter stream, on file storage.
func (c *Client) ensureStream(ctx context.Context, channel string) error {
	if err := validName(channel); err != nil {
		return err
	}
	c.mu.Lock()
	_, ok := c.streams[channel]
	closed := c.closed
	c.mu.Unlock()
	switch {
	case closed:
		return ErrClientClosed
	case ok:
		return nil
	}
	for _, sc := range []struct {
		what string
		cfg  njs.StreamConfig
	}{
		{"stream", njs.StreamConfig{Name: streamName(channel), Subjects: []string{subject(channel)},
			Retention: njs.WorkQueuePolicy}},
		{"pass stream", njs.StreamConfig{Name: passStreamName(channel), Subjects: []string{passSubject(channel)},
			Retention: njs.WorkQueuePolicy}}, // copies passed on by a process that could not run them (pass.go)
		{"dead-letter stream", njs.StreamConfig{Name: deadStreamName(channel), Subjects: []string{deadSubject(channel)},
			Retention: njs.LimitsPolicy}}, // kept until replayed or purged
	} {
		cfg := sc.cfg
		cfg.Storage, cfg.Replicas, cfg.Duplicates = njs.FileStorage, c.opts.Replicas, c.opts.DuplicateWindow
		if err := retryOpen(ctx, func(ctx context.Context) error { return c.ensureOneStream(ctx, channel, cfg) }); err != nil {
			return fmt.Errorf("jetstream: %s for channel %q: %w", sc.what, channel, err)
		}
	}
	c.mu.Lock()
	c.streams[channel] = time.Now()
	c.mu.Unlock()
	return nil
}

// goroutine runs f on a goroutine the client's Close waits for; false if
// the client is closed.
func (c *Client) goroutine(f func(ctx context.Context)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f(c.ctx)
	}()
	return true
}

// fetcher runs f like goroutine, counted among the fetchers that Close
// lets finish before it cancels the rest.
func (c *Client) fetcher(f func(ctx context.Context)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	c.fetchers.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.fetchers.Done()
		f(c.ctx)
	}()
	return true
}

// Backlog returns the number of messages stored in channel's streams and
// not yet acknowledged or dead-lettered: queued, fetched, running, waiting
// to be delivered again, or passed on by a process that could not run them.
func (c *Client) Backlog(ctx context.Context, channel string) (uint64, error) {
	if err := c.ensureStream(ctx, channel); err != nil {
		return 0, err
	}
	var n uint64
	for _, name := range []string{streamName(channel), passStreamName(channel)} {
		s, err := c.js.Stream(ctx, name)
		if err != nil {
			return 0, fmt.Errorf("jetstream: stream of channel %q: %w", channel, err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			return 0, fmt.Errorf("jetstream: stream of channel %q: %w", channel, err)
		}
		n += info.State.Msgs
	}
	return n, nil
}
