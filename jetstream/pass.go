package jetstream

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"
)

// Headers the channel writes on the copies it publishes.
const (
	attemptsHeader = "Smartpool-Attempts" // handler attempts of the earlier copies
	bornHeader     = "Smartpool-Born"     // first publish, Unix nanoseconds
	timeoutHeader  = "Smartpool-Timeout"  // WithTimeout, a Go duration
)

// A process that lacks a message's handler (during a rolling deploy, one
// that runs the older code) must not destroy it, nor spin it between the
// processes that lack the handler, nor use up the attempts of the processes
// that have it, nor delay it behind the stream's backlog. So it parks the
// message (kept alive, no worker, still counted in its Prefetch window, so
// that it stops fetching when its window is full of them) for
// UnknownDelay and then passes it on: it publishes a copy to the channel's
// pass stream, which carries the attempts so far and the first publish
// time, and acknowledges the original. Every process takes from the pass
// stream before the work stream, except one that passed a message on lately
// (passShy): the copy goes to a process that is likely to have
// the handler, ahead of the backlog. A copy is delivered afresh, so the
// server's delivery count restarts; its attempts header keeps MaxDeliver
// honest. The copy's message ID is derived from the original's stream and
// sequence, so a pass repeated after a lost acknowledgement stores one copy.
// Only a message older than UnknownMaxAge is dead-lettered for its handler.

// unknown handles a message whose handler this process lacks.
func (ch *Channel) unknown(m *message) {
	if time.Since(m.born) >= ch.opts.UnknownMaxAge {
		if m.claim() {
			m.deadLetter(fmt.Errorf("%w: %q, for %v", ErrUnknownHandler, m.handler, ch.opts.UnknownMaxAge))
		}
		return
	}
	ch.mu.Lock()
	if ch.closed || m.settled.Load() {
		ch.mu.Unlock()
		if m.claim() {
			m.handBack()
		}
		return
	}
	if ch.onPark != nil {
		ch.onPark(m)
	}
	warn := !ch.unknownSeen[m.handler]
	if warn {
		ch.unknownSeen[m.handler] = true
	}
	ch.parked[m] = time.AfterFunc(ch.opts.UnknownDelay, func() {
		if !ch.client.goroutine(func(ctx context.Context) { m.passOn(ctx) }) && m.claim() {
			m.handBack() // the client is closing
		}
	})
	ch.mu.Unlock()
	if warn { // once per name: a forgotten Handle, or a rolling deploy under way
		ch.client.log.Warn("jetstream: no handler registered under this name in this process; its messages are passed on to other processes",
			"channel", ch.name, "handler", m.handler, "unknownDelay", ch.opts.UnknownDelay, "deadLetteredAfter", ch.opts.UnknownMaxAge)
	}
}

// passOn publishes a copy of a parked message for another process and
// acknowledges the original. If the copy cannot be stored, the original
// goes back to the stream after UnknownDelay instead: nothing is lost.
func (m *message) passOn(ctx context.Context) {
	if !m.claim() {
		return
	}
	if m.passCopy(ctx) {
		m.ch.stats.passedOn.Add(1)
	}
}

// passCopy passes a claimed message on (see passOn); false if the copy
// could not be stored and the original was handed back instead.
func (m *message) passCopy(ctx context.Context) bool {
	ch := m.ch
	ch.mu.Lock()
	ch.passedAt = time.Now()
	ch.mu.Unlock()
	copyMsg := ch.copyOf(m, passSubject(ch.name))
	copyMsg.Header.Set(attemptsHeader, strconv.FormatUint(m.attempts()-1, 10)) // this delivery ran nothing
	ctx, cancel := context.WithTimeout(ctx, max(ch.opts.AckWait, 5*time.Second))
	defer cancel()
	_, err := ch.client.js.PublishMsg(ctx, copyMsg, njs.WithMsgID(fmt.Sprintf("smartpool-pass-%s-%s", ch.name, m.id())))
	if err != nil {
		ch.stats.settleErrors.Add(1)
		ch.client.log.Warn("jetstream: passing a message on failed; it comes back later",
			"channel", ch.name, "handler", m.handler, "seq", m.seq, "err", err)
		if m.msg.NakWithDelay(ch.opts.UnknownDelay) != nil {
			ch.stats.settleErrors.Add(1)
		}
		return false
	}
	if m.msg.Ack() != nil {
		ch.stats.settleErrors.Add(1) // redelivered after AckWait; its next pass is a duplicate the server drops
	}
	return true
}

// sweep passes on every queued message that waited QueueTimeout for a
// worker of this process (all of them hung, or busy for long), so that
// another process runs it, and stalls the fetcher (see fetchLoop). Called
// by the heartbeat goroutine.
func (ch *Channel) sweep() {
	now := time.Now()
	ch.mu.Lock()
	var late []*message
	if ch.msgs > 0 {
		keep := ch.queue[:ch.head]
		for _, t := range ch.queue[ch.head:] {
			if m, ok := t.(*message); ok && now.Sub(m.queuedAt) >= ch.opts.QueueTimeout {
				late = append(late, m)
				continue
			}
			keep = append(keep, t)
		}
		clear(ch.queue[len(keep):])
		ch.queue = keep
	}
	if len(late) == 0 {
		ch.mu.Unlock()
		return
	}
	ch.msgs -= len(late)
	if ch.head == len(ch.queue) {
		ch.queue, ch.head = ch.queue[:0], 0
		ch.bits.Clear(0)
	}
	ch.sweptAt = now
	ch.stalled.Store(true)
	b := ch.bits
	b.Hold(len(late)) // out of the queue, not yet ended: see source.Bits.Hold
	ch.mu.Unlock()
	defer b.Unhold(len(late))
	ch.client.log.Warn("jetstream: messages waited QueueTimeout for a worker of this process; passing them on to other processes",
		"channel", ch.name, "messages", len(late), "queueTimeout", ch.opts.QueueTimeout)
	for _, m := range late {
		ch.stats.queueTimedOut.Add(1)
		if !m.state.CompareAndSwap(queued, handedBack) || !m.claim() {
			continue
		}
		if !ch.client.goroutine(func(ctx context.Context) { m.passCopy(ctx) }) {
			m.handBack() // the client is closing
		}
	}
	b.Refund(len(late)) // their units of the in-flight limit: no worker here runs them
}

// copyOf returns a new message to subj with m's payload and headers (the
// server's own Nats-* headers left out) and its first publish time.
func (ch *Channel) copyOf(m *message, subj string) *nats.Msg {
	h := nats.Header{}
	for k, v := range m.msg.Headers() {
		if strings.HasPrefix(k, "Nats-") {
			continue
		}
		h[k] = append([]string(nil), v...)
	}
	h.Set(bornHeader, strconv.FormatInt(m.born.UnixNano(), 10))
	return &nats.Msg{Subject: subj, Data: m.msg.Data(), Header: h}
}

// releaseParked hands every parked message back to the stream at once: the
// channel is closing, and a message must not wait for AckWait.
func (ch *Channel) releaseParked() {
	ch.mu.Lock()
	var ms []*message
	for m, t := range ch.parked {
		t.Stop()
		ms = append(ms, m)
	}
	ch.mu.Unlock()
	for _, m := range ms {
		if m.claim() {
			m.handBack()
		}
	}
}

// releaseQueued hands back every held message that never started: the
// client is closing, so no pool will run it.
func (ch *Channel) releaseQueued() {
	ch.mu.Lock()
	var ms []*message
	for m := range ch.held {
		ms = append(ms, m)
	}
	ch.mu.Unlock()
	for _, m := range ms {
		if m.state.CompareAndSwap(queued, handedBack) && m.claim() {
			m.handBack()
		}
	}
}
