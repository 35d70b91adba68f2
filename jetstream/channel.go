package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/source"
)

// Channel is a smartpool.Channel fed by a JetStream stream: a durable pull
// consumer shared by every process that consumes the channel, and a local
// queue holding at most ChannelOptions.Prefetch fetched messages. Make it
// with Client.Channel; a Channel serves one pool.
//
// Tasks are published with Client.Publish, not submitted: the pool's by-key
// Submit returns ErrNotData. Tasks that yielded re-enter through this
// channel as through any other.
//
// Close: a complete-on-close Channel stops fetching and runs what it
// fetched. A dropping one hands its queued messages back to the stream at
// once (a negative acknowledgement without delay), so another process runs
// them; the pool counts them in Stats.Dropped and passes each to
// smartpool.ChannelParams.OnEnd as a HandedBack value. What was never fetched stays in the stream. A fetch
// in flight at Close runs to its end (at most 2 s) and what it brings is
// handed back at once too, so no message waits for AckWait; Client.Close
// waits for it.
type Channel struct {
	plug   // made by Client.Channel from a channelSource: what the pool calls
	client *Client
	name   string
	reg    *Registry
	opts   ChannelOptions
	cons   njs.Consumer    // on the work stream
	pass   njs.Consumer    // on the pass stream: copies other processes could not run (pass.go)
	ctx    context.Context // ends when Close or the client's Close is called: fetching stops
	cancel context.CancelFunc
	room   chan struct{} // capacity 1: Poll took a message; the fetcher may fetch more
	stats  counters      // atomics, any goroutine

	passNews atomic.Bool            // a copy was published to the pass stream since the last look
	stalled  atomic.Bool            // a message waited QueueTimeout here: fetch one at a time until a worker takes a task
	passSub  *nats.Subscription     // sets passNews; nil if the subscription failed (then the fetcher looks every fetchWait)
	onPark   func(*message)         // tests: called as a message is parked; set before Attach
	fo       failover               // recovering deliveries a failover lost (failover.go)
	onEvent  func(string, *message) // tests: a message's timeline (fetched, acked, ...); set before Attach

	// mu guards everything below. Workers (Poll), the pool (Requeue,
	// Close), the fetching goroutine (deliver), the heartbeat goroutine and
	// tasks settling their message take it, never while calling out.
	mu          sync.Mutex
	queue       []smartpool.Task         // queue[head:] waits; messages and re-entering yielded tasks
	head        int                      // first waiting entry
	msgs        int                      // messages in queue[head:]
	nUnknown    int                      // messages polled whose handler this process lacks, until settled: with msgs, the prefetch window's fill
	peak        int                      // the most msgs+nUnknown seen: Prefetch at most (tests read it)
	passedAt    time.Time                // the last message this process passed on: it leaves the pass stream to others for a while
	lookedAt    time.Time                // the last fetch from the pass stream
	sweptAt     time.Time                // the last time queued messages were passed on for want of a worker
	held        map[*message]bool        // fetched and not settled: kept alive by the heartbeat
	parked      map[*message]*time.Timer // unknown handler: waiting to be passed on (pass.go); also held
	unknownSeen map[string]bool          // handler names this process lacked: logged once each
	bits        source.Bits              // set by Attach
	attached    bool                     // Attach was called
	closed      bool                     // Close was called: fetched messages are handed back
	dropped     bool                     // Close(true) was called: Requeue refuses
}

// ErrNotData is returned by the pool's by-key Submit: a JetStream channel carries published
// messages (handler name and payload), not closures.
var ErrNotData = errors.New("jetstream: a JetStream channel takes published messages only: use Client.Publish")

// Channel creates (or joins) the durable consumer of channel name and
// returns a Channel that runs its messages with reg's handlers. Every
// process that calls Channel with the same name shares the work. The
// channel fetches nothing until a pool attaches it.
func (c *Client) Channel(ctx context.Context, name string, reg *Registry, opts ChannelOptions) (*Channel, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: nil Registry", ErrNilFunc)
	}
	if err := c.ensureStream(ctx, name); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("jetstream: channel %q: negative Timeout %v", name, opts.Timeout)
	}
	if opts.QueueTimeout < 0 {
		return nil, fmt.Errorf("jetstream: channel %q: negative QueueTimeout %v", name, opts.QueueTimeout)
	}
	cons, err := c.ensureConsumer(ctx, name, streamName(name), subject(name), opts)
	if err != nil {
		return nil, err
	}
	pass, err := c.ensureConsumer(ctx, name, passStreamName(name), passSubject(name), opts)
	if err != nil {
		return nil, err
	}
	ch := &Channel{client: c, name: name, reg: reg, opts: opts, cons: cons, pass: pass,
		held: map[*message]bool{}, parked: map[*message]*time.Timer{}, unknownSeen: map[string]bool{}, room: make(chan struct{}, 1)}
	if sub, err := c.nc.Subscribe(passSubject(name), func(*nats.Msg) { ch.passNews.Store(true) }); err == nil {
		ch.passSub = sub
	}
	ch.listen()
	ch.plug = source.NewPlug(channelSource{ch})
	ch.ctx, ch.cancel = context.WithCancel(c.ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		ch.cancel()
		ch.unsubscribe()
		return nil, ErrClientClosed
	}
	c.channels = append(c.channels, ch)
	return ch, nil
}

// Name returns the channel's name.
func (ch *Channel) Name() string { return ch.name }

// plug makes Channel a smartpool.Channel; unexported, it stays out of the
// godoc.
type plug = source.Plug

// channelSource is the side of a Channel the pool talks to
// (source.Source); users see none of its methods.
type channelSource struct{ *Channel }

// Queues returns 1: the local queue.
func (channelSource) Queues() int { return 1 }

// Attach binds the channel to a pool and starts fetching; it is called by
// smartpool.New. It returns smartpool.ErrAttached if the channel belongs to
// a pool already, or ErrClientClosed. If New fails after attaching it,
// close the Client: the channel fetches until then, and its messages go
// back only when the Client closes (after AckWait).
func (ch channelSource) Attach(b source.Bits) error {
	ch.mu.Lock()
	if ch.attached {
		ch.mu.Unlock()
		return smartpool.ErrAttached
	}
	ch.attached, ch.bits = true, b
	ch.mu.Unlock()
	b.AdmitsOwnSubmits() // every fetched message takes its unit with AdmitWait
	b.WakesOutsideLock() // Wake comes after the lock is released
	if !ch.client.fetcher(ch.fetchLoop) || !ch.client.goroutine(ch.heartbeat) {
		return ErrClientClosed
	}
	return nil
}

// Push refuses every task with ErrNotData: publish messages instead.
func (channelSource) Push(smartpool.Task, smartpool.Order) error { return ErrNotData }

// Requeue queues a yielded task re-entering the pool through this channel;
// see source.Source.
func (ch channelSource) Requeue(t smartpool.Task) error {
	if t == nil {
		return smartpool.ErrNilTask
	}
	ch.mu.Lock()
	if ch.dropped {
		ch.mu.Unlock()
		return smartpool.ErrClosed
	}
	ch.pushLocked(t)
	b := ch.bits
	ch.mu.Unlock()
	b.Wake(1)
	return nil
}

// pushLocked appends t, setting the bit if the queue was empty.
func (ch *Channel) pushLocked(t smartpool.Task) {
	if ch.head == len(ch.queue) {
		ch.bits.Set(0)
	}
	ch.queue = append(ch.queue, t)
}

// Poll removes and returns the oldest queued task, or nil.
func (ch channelSource) Poll(int) smartpool.Task {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.unstall() // a worker is free
	if ch.head == len(ch.queue) {
		ch.bits.Clear(0)
		return nil
	}
	t := ch.queue[ch.head]
	ch.queue[ch.head] = nil
	ch.head++
	if ch.head == len(ch.queue) {
		ch.queue, ch.head = ch.queue[:0], 0
		ch.bits.Clear(0)
	} else if ch.head > 64 && ch.head*2 > len(ch.queue) {
		n := copy(ch.queue, ch.queue[ch.head:])
		clear(ch.queue[n:])
		ch.queue, ch.head = ch.queue[:n], 0
	}
	if m, ok := t.(*message); ok {
		ch.msgs--
		if _, known := ch.reg.lookup(m.handler); !known {
			// Parked (pass.go) until passed on: it keeps its place in
			// the prefetch window, so that a process lacking a handler
			// does not fetch ever more of its messages.
			m.slot = true
			ch.nUnknown++
		} else {
			ch.signalRoom()
		}
	}
	return t
}

// unstall ends a stall (see QueueTimeout): a worker took a task or a
// handler returned.
func (ch *Channel) unstall() {
	if ch.stalled.Load() && ch.stalled.CompareAndSwap(true, false) {
		ch.signalRoom()
	}
}

// signalRoom tells the fetcher that the prefetch window has room.
func (ch *Channel) signalRoom() {
	select {
	case ch.room <- struct{}{}:
	default:
	}
}

// Len returns the number of queued tasks: fetched messages and re-entering
// yielded tasks.
func (ch *Channel) Len() int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return len(ch.queue) - ch.head
}

// Close stops fetching and, if drop is set, empties the queue and returns
// its tasks, which the pool reports as dropped: a message among them is
// handed back to the stream when the pool discards it (see HandedBack). It
// does nothing unless the pool is closing (source.Bits.Closing): a
// mistaken call cannot stop a channel a running pool serves.
func (ch channelSource) Close(drop bool) []smartpool.Task {
	ch.mu.Lock()
	if !ch.bits.Closing() {
		ch.mu.Unlock()
		return nil
	}
	ch.closed = true
	var out []smartpool.Task
	if drop {
		ch.dropped = true
		out = append(out, ch.queue[ch.head:]...)
		clear(ch.queue)
		ch.queue, ch.head, ch.msgs = nil, 0, 0
		ch.bits.Clear(0)
	}
	ch.mu.Unlock()
	ch.stop()
	return out
}

// stop ends fetching and hands parked messages back. A fetch in flight
// runs to its end (fetchWait at most) and its messages are handed back as
// they come: cancelling it would leave whatever the server had sent to it
// waiting for AckWait.
func (ch *Channel) stop() {
	ch.mu.Lock()
	ch.closed = true
	ch.mu.Unlock()
	ch.unsubscribe()
	ch.releaseParked()
	ch.cancel()
}

// unsubscribe ends the pass stream's notices.
func (ch *Channel) unsubscribe() {
	if ch.passSub != nil {
		_ = ch.passSub.Unsubscribe()
	}
	if ch.fo.sub != nil {
		_ = ch.fo.sub.Unsubscribe()
	}
}

// dropping reports whether the pool's Close dropped this channel.
func (ch *Channel) dropping() bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.dropped
}

// forget stops keeping m alive: it is being settled.
func (ch *Channel) forget(m *message) {
	ch.mu.Lock()
	delete(ch.held, m)
	if t, ok := ch.parked[m]; ok {
		t.Stop()
		delete(ch.parked, m)
	}
	if m.slot {
		m.slot = false
		ch.nUnknown--
		ch.signalRoom()
	}
	ch.mu.Unlock()
}
