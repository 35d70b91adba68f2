package jetstream

import (
	"context"
	"errors"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"
)

// fetchWait bounds one pull request: a fetch that a lost connection left
// hanging is given up after it, and then retried.
const fetchWait = 2 * time.Second

// fetchLoop keeps the local queue filled up to Prefetch messages (parked
// ones included), on its own goroutine, until the channel or the client
// closes. It takes copies from the pass stream first (pass.go), unless this
// process passed a message on lately. A fetch runs under the client's
// context, not the channel's, so that the channel's Close lets it end and
// hand its messages back (see stop).
func (ch *Channel) fetchLoop(cctx context.Context) {
	ctx := ch.ctx // derived from the client's: ends at either Close
	pause := errPause{}
	var failing time.Time // since when fetches fail; zero while they succeed
	for ctx.Err() == nil {
		ch.mu.Lock()
		room := ch.opts.Prefetch - ch.msgs - ch.nUnknown
		var wait time.Duration // a stall's rest: no fetch meanwhile
		if ch.stalled.Load() {
			if wait = ch.opts.QueueTimeout - time.Since(ch.sweptAt); wait > 0 {
				room = 0
			} else {
				room = min(room, 1-ch.msgs) // one at a time until a worker takes a task
			}
		}
		look := room > 0 && ch.lookPass()
		ch.mu.Unlock()
		if room <= 0 {
			ch.waitRoom(ctx, wait)
			continue
		}
		if look {
			n, err := ch.fetchPass(room)
			if err != nil && ctx.Err() == nil {
				ch.stats.fetchErrors.Add(1)
			}
			if n == room {
				ch.passNews.Store(true) // a full batch: more copies may wait; look again next time
			}
			if room -= n; room <= 0 {
				continue
			}
		}
		if err := ch.fetch(cctx, room); err != nil && ctx.Err() == nil {
			ch.stats.fetchErrors.Add(1)
			if failing.IsZero() {
				failing = time.Now()
				ch.client.conn.fetchOutages.Add(1)
				ch.client.log.Warn("jetstream: fetching failed (a leader election or a lost connection); trying again",
					"channel", ch.name, "err", err)
			}
			pause.wait(ctx) // a lost connection, a leader election: try again soon, not in a spin
			continue
		}
		if !failing.IsZero() && ctx.Err() == nil {
			ch.client.log.Info("jetstream: fetching again", "channel", ch.name, "after", time.Since(failing).Round(time.Millisecond))
			failing = time.Time{}
			ch.recoverLost() // deliveries the failure cut off come back now, not after AckWait
		}
		pause.reset()
	}
}

// waitRoom waits until the prefetch window may have room, the channel
// closes, or wait (if positive) passes.
func (ch *Channel) waitRoom(ctx context.Context, wait time.Duration) {
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ch.room:
	case <-timeout:
	case <-ctx.Done():
	}
}

// lookPass reports whether the fetcher should take from the pass stream
// now: a copy was published there, or fetchWait passed since the last look
// (a notice lost with the connection), and this process passed nothing on
// within passShy, so that a process that cannot run a message is not the
// next taker of its copy. Called with mu held.
func (ch *Channel) lookPass() bool {
	now := time.Now()
	if now.Sub(ch.passedAt) < ch.passShy() {
		return false
	}
	if !ch.passNews.Load() && now.Sub(ch.lookedAt) < fetchWait {
		return false
	}
	ch.lookedAt = now
	ch.passNews.Store(false) // before the fetch: a notice during it is kept
	return true
}

// passShy is how long a process that passed a message on leaves the pass
// stream to others: long enough for every other process's fetch in flight
// (fetchWait at most) to end and its next to look, twice over.
func (ch *Channel) passShy() time.Duration {
	return 2 * (ch.opts.UnknownDelay + fetchWait)
}

// fetchPass takes up to n copies waiting in the pass stream, without
// waiting for more, and queues them; it returns how many it took.
func (ch *Channel) fetchPass(n int) (int, error) {
	batch, err := ch.pass.FetchNoWait(n)
	if err != nil {
		return 0, err
	}
	got := 0
	for m := range batch.Messages() {
		ch.deliver(ch.ctx, m)
		got++
	}
	if err := batch.Error(); err != nil && !errors.Is(err, njs.ErrNoMessages) {
		return got, err
	}
	return got, nil
}

// fetch pulls up to n messages, waiting at most fetchWait, and queues them.
func (ch *Channel) fetch(ctx context.Context, n int) error {
	fctx, cancel := context.WithTimeout(ctx, fetchWait) // the pull request expires a little before
	defer cancel()
	batch, err := ch.cons.Fetch(n, njs.FetchContext(fctx))
	if err != nil {
		return err
	}
	for m := range batch.Messages() {
		ch.deliver(ch.ctx, m)
	}
	err = batch.Error()
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = nil // the request expired: nothing to fetch
	}
	if err == nil && !ch.client.connected() {
		err = errDisconnected // the request went unanswered: an outage, not an empty stream
	}
	return err
}

// deliver queues a fetched message, or hands it back if the channel closed
// meanwhile. A message enters the queue holding a unit of the pool's
// in-flight limit, taken like a channel's own submit does (Bits.AdmitWait):
// a fetch takes no unit while it waits for messages, and a message waiting
// for a unit is kept alive (held) meanwhile.
func (ch *Channel) deliver(ctx context.Context, msg njs.Msg) {
	m := newMessage(ch, msg)
	ch.event("fetched", m)
	ch.noteReply(m)
	ch.stats.fetched.Add(1)
	if m.delivered > 1 {
		ch.stats.redelivered.Add(1)
	}
	ch.mu.Lock()
	ch.held[m] = true
	b := ch.bits
	ch.mu.Unlock()
	if b.AdmitWait(ctx) != nil { // the pool or the channel closes
		if m.claim() {
			m.handBack()
		}
		return
	}
	ch.mu.Lock()
	if ch.closed {
		ch.mu.Unlock()
		if m.claim() {
			m.handBack()
		}
		b.Refund(1)
		return
	}
	ch.msgs++
	ch.peak = max(ch.peak, ch.msgs+ch.nUnknown)
	m.queuedAt = time.Now()
	ch.pushLocked(m)
	ch.mu.Unlock()
	ch.event("queued", m)
	b.Wake(1)
}

var errDisconnected = errors.New("jetstream: not connected")

// errPause is the growing wait between failed fetches: 50 ms doubling to 2 s.
type errPause struct{ d time.Duration }

func (p *errPause) reset() { p.d = 0 }

func (p *errPause) wait(ctx context.Context) {
	p.d = min(max(2*p.d, 50*time.Millisecond), 2*time.Second)
	t := time.NewTimer(p.d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
