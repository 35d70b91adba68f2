package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

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
	delivered uint64 // attempts so far, this one included
	state     atomic.Int32
}

func newMessage(ch *Channel, msg njs.Msg) *message {
	m := &message{ch: ch, msg: msg, handler: msg.Headers().Get(handlerHeader), delivered: 1}
	if md, err := msg.Metadata(); err == nil {
		m.delivered = md.NumDelivered
	}
	return m
}

// Run runs the message's handler and settles the message: acknowledged if
// the handler returned nil; delivered again after a backoff if it returned
// an error, panicked or exited; terminated and dead-lettered for an unknown
// handler, a Permanent error, or the last of MaxDeliver attempts. A handler
// that yields keeps its message alive meanwhile (heartbeat).
func (m *message) Run(ctx context.Context) {
	if !m.state.CompareAndSwap(queued, started) {
		return // handed back by the pool's Close
	}
	h, ok := m.ch.reg.lookup(m.handler)
	switch {
	case !ok:
		m.deadLetter(fmt.Errorf("%w: %q", ErrUnknownHandler, m.handler))
		return
	case m.delivered > uint64(m.ch.opts.MaxDeliver):
		m.deadLetter(fmt.Errorf("%w (%d)", ErrTooManyDeliveries, m.delivered))
		return
	}
	returned := false
	defer func() {
		if !returned {
			// A panic (the pool recovers and reports it), runtime.Goexit,
			// or a yielded task that the pool's Close dropped.
			m.failed(ErrHandlerAborted)
		}
	}()
	err := h(ctx, m.msg.Data())
	returned = true
	if err != nil {
		m.failed(err)
		return
	}
	m.ch.settle(m)
	if m.msg.Ack() != nil {
		m.ch.stats.settleErrors.Add(1) // the server redelivers it after AckWait
		return
	}
	m.ch.stats.acked.Add(1)
}

// failed settles a message whose attempt failed with err.
func (m *message) failed(err error) {
	ch := m.ch
	switch {
	case errors.Is(err, ErrHandlerAborted) && ch.dropping():
		m.handBack()
	case isPermanent(err) || m.delivered >= uint64(ch.opts.MaxDeliver):
		m.deadLetter(err)
	default:
		ch.settle(m)
		if m.msg.NakWithDelay(ch.opts.Backoff(int(m.delivered))) != nil {
			ch.stats.settleErrors.Add(1)
			return
		}
		ch.stats.retried.Add(1)
	}
}

// deadLetter terminates the message and reports it.
func (m *message) deadLetter(err error) {
	ch := m.ch
	ch.settle(m)
	if m.msg.TermWithReason(err.Error()) != nil {
		ch.stats.settleErrors.Add(1)
	}
	ch.stats.deadLettered.Add(1)
	if f := ch.opts.OnDeadLetter; f != nil {
		f(DeadLetter{Channel: ch.name, Handler: m.handler, Payload: m.msg.Data(), Deliveries: m.delivered, Err: err})
	}
}

// handBack returns the message to the stream at once, for another process.
func (m *message) handBack() {
	m.ch.settle(m)
	if m.msg.Nak() != nil {
		m.ch.stats.settleErrors.Add(1)
	}
	m.ch.stats.handedBack.Add(1)
}

// Unwrap is called by the pool when its Close drops the message unrun: the
// message goes back to the stream, and the pool's OnDrop callback receives
// a HandedBack describing it.
func (m *message) Unwrap() smartpool.Task {
	if m.state.CompareAndSwap(queued, handedBack) {
		m.handBack()
	}
	return HandedBack{Channel: m.ch.name, Handler: m.handler, Payload: m.msg.Data()}
}

// HandedBack is what a dropping JetStream channel's OnDrop callback receives
// for a message the pool's Close did not run: the message went back to the
// stream, so another process (or this one, restarted) runs it. Nothing is
// lost. Its Run does nothing.
type HandedBack struct {
	Channel, Handler string
	Payload          []byte
}

// Run does nothing: the message is in the stream again.
func (HandedBack) Run(context.Context) {}
