package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/smartpool-go/smartpool"
)

// Reasons a message is dead-lettered, in DeadLetter.Err.
var (
	ErrUnknownHandler    = errors.New("jetstream: no handler registered under this name")
	ErrTooManyDeliveries = errors.New("jetstream: delivered more than MaxDeliver times")
	// ErrHandlerAborted: the handler panicked (the pool's PanicHandler has
	// the panic) or called runtime.Goexit.
	ErrHandlerAborted = errors.New("jetstream: handler panicked or exited")
	// ErrTimedOut: the handler ran past its timeout (ChannelOptions.Timeout
	// or WithTimeout).
	ErrTimedOut = errors.New("jetstream: handler timed out")
)

// A message's life in this process: queued (fetched, in the local queue or
// polled), then started by Run or handed back by the pool's drop. The
// transition is a compare-and-swap, so exactly one of the two happens.
const (
	queued int32 = iota
	started
	handedBack
)

// message is the task a Channel hands to the pool for one fetched message.
type message struct {
	ch        *Channel
	msg       njs.Msg
	handler   string
	delivered uint64        // server deliveries of this copy, this one included
	prior     uint64        // handler attempts of earlier copies (see pass.go)
	born      time.Time     // first publish of the task (earlier copies included)
	seq       uint64        // stream sequence of this copy
	stream    string        // the stream it came from: the channel's work stream or its pass stream
	timeout   time.Duration // bound of one run; 0: none
	state     atomic.Int32
	settled   atomic.Bool // acknowledged, retried, terminated, passed on or handed back: once
	slot      bool        // counted in Channel.nUnknown until settled; guarded by the channel's mu
	queuedAt  time.Time   // when it entered the local queue; guarded by the channel's mu
}

func newMessage(ch *Channel, msg njs.Msg) *message {
	h := msg.Headers()
	m := &message{ch: ch, msg: msg, handler: h.Get(handlerHeader), delivered: 1, timeout: ch.opts.Timeout}
	if md, err := msg.Metadata(); err == nil {
		m.delivered, m.born, m.seq, m.stream = md.NumDelivered, md.Timestamp, md.Sequence.Stream, md.Stream
	}
	if n, err := strconv.ParseUint(h.Get(attemptsHeader), 10, 64); err == nil {
		m.prior = n
	}
	if ns, err := strconv.ParseInt(h.Get(bornHeader), 10, 64); err == nil {
		m.born = time.Unix(0, ns)
	}
	if d, err := time.ParseDuration(h.Get(timeoutHeader)); err == nil && d > 0 {
		m.timeout = d
	}
	return m
}

// id names this copy in message IDs derived from it (a pass, a dead
// letter): its sequence, marked if it came from the pass stream, whose
// sequences are numbered apart from the work stream's.
func (m *message) id() string {
	if m.stream == passStreamName(m.ch.name) {
		return "p" + strconv.FormatUint(m.seq, 10)
	}
	return strconv.FormatUint(m.seq, 10)
}

// attempts counts the handler's runs of the task, this one included.
func (m *message) attempts() uint64 { return m.prior + m.delivered }

// claim makes the caller the one that settles m, and stops keeping m alive;
// false if m was settled already (a timed-out handler that returns late).
func (m *message) claim() bool {
	if !m.settled.CompareAndSwap(false, true) {
		return false
	}
	m.ch.forget(m)
	return true
}

// Run runs the message's handler and settles the message: acknowledged if
// the handler returned nil; delivered again after a backoff if it returned
// an error, panicked, exited or timed out; dead-lettered for a Permanent
// error or the last of MaxDeliver attempts. A handler this process does not
// know is passed on to another process (see pass.go). A handler that
// yields keeps its message alive meanwhile (heartbeat).
func (m *message) Run(ctx context.Context) {
	if !m.state.CompareAndSwap(queued, started) {
		return // handed back by the pool's Close
	}
	h, ok := m.ch.reg.lookup(m.handler)
	switch {
	case !ok:
		m.ch.unknown(m)
		return
	case m.attempts() > uint64(m.ch.opts.MaxDeliver):
		if m.claim() {
			m.deadLetter(fmt.Errorf("%w (%d)", ErrTooManyDeliveries, m.attempts()))
		}
		return
	}
	if m.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.timeout)
		defer cancel()
		t := time.AfterFunc(m.timeout, m.timedOut) // settles m even if the handler never returns
		defer t.Stop()
	}
	returned := false
	defer func() {
		if !returned && m.claim() {
			// A panic (the pool recovers and reports it), runtime.Goexit,
			// or a yielded task that the pool's Close dropped.
			if m.ch.dropping() {
				m.handBack()
			} else {
				m.retry(ErrHandlerAborted)
			}
		}
	}()
	err := h(m.ch.client.extract(ctx, m.msg.Headers()), m.msg.Data()) // trace.go
	returned = true
	m.ch.unstall() // this worker is free again
	if !m.claim() {
		return // timed out meanwhile: already back in the stream
	}
	if err != nil {
		m.retry(err)
		return
	}
	m.ack()
}

// ack acknowledges a run that succeeded.
func (m *message) ack() {
	ch := m.ch
	var err error
	if ch.opts.ConfirmAcks {
		// An acknowledgement a failover lost (the old leader took it and
		// died before its replicas had it) goes unanswered: it is sent
		// again, which the server takes once, until AckWait runs out.
		ctx, cancel := context.WithTimeout(ch.client.ctx, ch.opts.AckWait)
		for {
			actx, acancel := context.WithTimeout(ctx, min(ch.opts.AckWait, publishAttempt))
			err = m.msg.DoubleAck(actx)
			acancel()
			if err == nil || ctx.Err() != nil || !openAgain(err) {
				break
			}
			ch.stats.ackRetries.Add(1)
		}
		cancel()
	} else {
		err = m.msg.Ack()
		if err == nil && !ch.client.connected() {
			// Buffered until the connection returns, if it does: the
			// server may deliver the message again.
			ch.stats.acksUnconfirmed.Add(1)
		}
	}
	if err != nil {
		ch.event("ack failed", m)
		ch.stats.settleErrors.Add(1)
		ch.stats.acksUnconfirmed.Add(1) // the server redelivers it after AckWait
		return
	}
	ch.event("acked", m)
	ch.stats.acked.Add(1)
}

// event reports a step of m's life to a test's hook.
func (ch *Channel) event(what string, m *message) {
	if ch.onEvent != nil {
		ch.onEvent(what, m)
	}
}

// timedOut settles a run that outlived its timeout: the message goes back
// to the stream after its backoff while the handler may still be running.
func (m *message) timedOut() {
	if !m.claim() {
		return
	}
	m.ch.stats.timedOut.Add(1)
	m.ch.client.log.Warn("jetstream: handler timed out; its message goes back to the stream",
		"channel", m.ch.name, "handler", m.handler, "seq", m.seq, "timeout", m.timeout, "attempt", m.attempts())
	m.retry(fmt.Errorf("%w after %v", ErrTimedOut, m.timeout))
}

// retry settles a claimed message whose attempt failed with err: delivered
// again after the backoff, or dead-lettered if no attempt is left.
func (m *message) retry(err error) {
	ch := m.ch
	if isPermanent(err) || m.attempts() >= uint64(ch.opts.MaxDeliver) {
		m.deadLetter(err)
		return
	}
	if m.msg.NakWithDelay(ch.opts.Backoff(int(m.attempts()))) != nil {
		ch.stats.settleErrors.Add(1)
		return
	}
	ch.stats.retried.Add(1)
}

// handBack returns a claimed message to the stream at once, for another
// process.
func (m *message) handBack() {
	if m.msg.Nak() != nil {
		m.ch.stats.settleErrors.Add(1)
	}
	m.ch.stats.handedBack.Add(1)
}

// Unwrap is called by the pool when its Close drops the message unrun: the
// message goes back to the stream, and the pool's
// smartpool.ChannelParams.OnEnd receives a HandedBack describing it. The pool also unwraps tasks it is about to
// run, so the message goes back only once the channel is dropping; a
// message that a closing pool neither ran nor dropped goes back at the
// client's Close (releaseQueued).
func (m *message) Unwrap() smartpool.Task {
	if m.ch.dropping() && m.state.CompareAndSwap(queued, handedBack) && m.claim() {
		m.handBack()
	}
	return HandedBack{Channel: m.ch.name, Handler: m.handler, Payload: m.msg.Data()}
}

// HandedBack is what a dropping JetStream channel's
// smartpool.ChannelParams.OnEnd receives for a message the pool's Close did not run: the message went back to the
// stream, so another process (or this one, restarted) runs it. Nothing is
// lost. Its Run does nothing.
type HandedBack struct {
	Channel, Handler string
	Payload          []byte
}

// Run does nothing: the message is in the stream again.
func (HandedBack) Run(context.Context) {}
