package jetstream

import (
	"context"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"
)

// fetchWait bounds one pull request: a fetch that a lost connection left
// hanging is given up after it, and then retried.
const fetchWait = 2 * time.Second

// fetchLoop keeps the local queue filled up to Prefetch messages, on its own
// goroutine, until the channel or the client closes. A message it fetches
// takes a unit of the pool's in-flight limit first (Bits.AdmitWait, then
// Bits.Admit for the rest of a batch), like a channel's own submit method;
// units a fetch did not use go back (Bits.Refund).
func (ch *Channel) fetchLoop(context.Context) {
	ctx := ch.ctx // derived from the client's: ends at either Close
	pause := errPause{}
	for ctx.Err() == nil {
		ch.mu.Lock()
		room, b := ch.opts.Prefetch-ch.msgs, ch.bits
		ch.mu.Unlock()
		if room <= 0 {
			select {
			case <-ch.room:
			case <-ctx.Done():
			}
			continue
		}
		if b.AdmitWait(ctx) != nil {
			return // the pool closes (or ctx ended)
		}
		units := 1
		for units < room && b.Admit(1) == nil {
			units++
		}
		batch, err := ch.cons.Fetch(units, njs.FetchMaxWait(fetchWait), njs.FetchContext(ctx))
		got := 0
		if err == nil {
			for m := range batch.Messages() {
				got++
				ch.deliver(m)
			}
			err = batch.Error()
		}
		b.Refund(units - got)
		if err != nil && ctx.Err() == nil {
			ch.stats.fetchErrors.Add(1)
			pause.wait(ctx) // a lost connection, a leader election: try again soon, not in a spin
			continue
		}
		pause.reset()
	}
}

// deliver queues a fetched message, which holds a unit of the limit, or
// hands it back if the channel closed meanwhile.
func (ch *Channel) deliver(msg njs.Msg) {
	m := newMessage(ch, msg)
	ch.stats.fetched.Add(1)
	if m.delivered > 1 {
		ch.stats.redelivered.Add(1)
	}
	ch.mu.Lock()
	if ch.closed {
		b := ch.bits
		ch.mu.Unlock()
		m.handBack()
		b.Refund(1)
		return
	}
	ch.held[m] = true
	ch.msgs++
	ch.pushLocked(m)
	b := ch.bits
	ch.mu.Unlock()
	b.Wake(1)
}

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
