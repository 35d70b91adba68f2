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

// fetchLoop keeps the local queue filled up to Prefetch messages, on its own
// goroutine, until the channel or the client closes. A fetch runs under the
// client's context, not the channel's, so that the channel's Close lets it
// end and hand its messages back (see stop).
func (ch *Channel) fetchLoop(cctx context.Context) {
	ctx := ch.ctx // derived from the client's: ends at either Close
	pause := errPause{}
	for ctx.Err() == nil {
		ch.mu.Lock()
		room := ch.opts.Prefetch - ch.msgs
		ch.mu.Unlock()
		if room <= 0 {
			select {
			case <-ch.room:
			case <-ctx.Done():
			}
			continue
		}
		if err := ch.fetch(cctx, room); err != nil && ctx.Err() == nil {
			ch.stats.fetchErrors.Add(1)
			pause.wait(ctx) // a lost connection, a leader election: try again soon, not in a spin
			continue
		}
		pause.reset()
	}
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
	ch.pushLocked(m)
	ch.mu.Unlock()
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
