package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// handlerHeader carries the handler name of a message.
const handlerHeader = "Smartpool-Handler"

// publishAttempt bounds one attempt of a publish: an attempt the connection
// loss left unanswered is given up after it, and the publish tries again
// with the same message ID.
const publishAttempt = 2 * time.Second

// Published is what the stream said about a stored message.
type Published struct {
	// Sequence is the message's number in its channel's stream.
	Sequence uint64
	// Duplicate is true if a message with the same ID was stored within
	// the duplicate window before this call: this publish stored nothing.
	Duplicate bool
	// MsgID is the message's ID: the WithMsgID given, or one Publish made.
	MsgID string
	// Attempts counts the tries this publish took (more than 1 across an
	// outage).
	Attempts int
}

// PublishOption adjusts one publish.
type PublishOption func(*publishConfig)

type publishConfig struct {
	msgID   string
	timeout time.Duration
}

// WithMsgID gives the message an ID: the server stores only the first
// message with a given ID within Options.DuplicateWindow. Without it,
// Publish makes a unique one.
func WithMsgID(id string) PublishOption {
	return func(p *publishConfig) { p.msgID = id }
}

// WithTimeout bounds each run of this task's handler, in place of the
// channel's ChannelOptions.Timeout.
func WithTimeout(d time.Duration) PublishOption {
	return func(p *publishConfig) { p.timeout = d }
}

// Errors of Publish.
var (
	// ErrTooLarge wraps a publish refused because the message is bigger
	// than the server accepts.
	ErrTooLarge = errors.New("jetstream: message too large")
	// ErrNotConfirmed wraps a publish whose context ended (or whose
	// duplicate window ran out) while an attempt was unanswered: the
	// message may be stored. See PublishError.
	ErrNotConfirmed = errors.New("jetstream: publish not confirmed: the message may be stored")
)

// PublishError is the error of a publish that was not confirmed: it wraps
// ErrNotConfirmed and the last attempt's error. Publishing again with
// WithMsgID(MsgID) within the duplicate window stores the message once.
type PublishError struct {
	Channel  string
	MsgID    string
	Attempts int
	Err      error // the last attempt's
}

func (e *PublishError) Error() string {
	return fmt.Sprintf("jetstream: publish to %q not confirmed after %d attempts (message ID %q; publish again with this ID to store it once): %v",
		e.Channel, e.Attempts, e.MsgID, e.Err)
}

// Unwrap returns ErrNotConfirmed and the last attempt's error.
func (e *PublishError) Unwrap() []error { return []error{ErrNotConfirmed, e.Err} }

// Publish stores a task for the handler named handler in the stream of
// channel, creating the stream on first use, and returns once the stream
// has stored it (on a quorum of replicas, for a replicated stream).
//
// Across a lost connection or a server restart it tries again, with the
// same message ID, until ctx ends (at most Options.DuplicateWindow), so:
//   - nil: the message is stored once, whatever attempts got lost;
//   - an error wrapping ErrNotConfirmed (a *PublishError): the last
//     attempt went unanswered; the message may be stored. Publish again
//     with WithMsgID(err.MsgID) to have it stored once;
//   - any other error (bad name, ErrTooLarge, a refusal by the server): the
//     message was not stored.
//
// Never retry without the ID: that may run the task twice.
func (c *Client) Publish(ctx context.Context, channel, handler string, payload []byte, opts ...PublishOption) (Published, error) {
	if handler == "" {
		return Published{}, fmt.Errorf("%w: empty handler name", ErrBadName)
	}
	var pc publishConfig
	for _, o := range opts {
		o(&pc)
	}
	if pc.timeout < 0 {
		return Published{}, fmt.Errorf("jetstream: WithTimeout(%v): a negative timeout", pc.timeout)
	}
	if err := c.ensureStream(ctx, channel); err != nil {
		return Published{}, err
	}
	msg := &nats.Msg{Subject: subject(channel), Data: payload, Header: nats.Header{handlerHeader: []string{handler}}}
	if pc.timeout > 0 {
		msg.Header.Set(timeoutHeader, pc.timeout.String())
	}
	c.inject(ctx, msg.Header) // trace.go
	if pc.msgID == "" {
		pc.msgID = nuid.Next()
	}
	return c.publish(ctx, channel, msg, pc.msgID)
}

// publish stores msg with message ID id, trying again until ctx ends or the
// duplicate window would no longer recognise id.
func (c *Client) publish(ctx context.Context, channel string, msg *nats.Msg, id string) (Published, error) {
	start := time.Now()
	pause := errPause{}
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, publishAttempt)
		ack, err := c.js.PublishMsg(actx, msg, njs.WithMsgID(id))
		cancel()
		if err == nil {
			if attempt > 1 && c.publishFailing.CompareAndSwap(true, false) {
				c.log.Info("jetstream: publishes answered again", "channel", channel, "msgID", id,
					"attempts", attempt, "took", time.Since(start).Round(time.Millisecond))
			}
			// A duplicate found by a retry is this call's own earlier attempt.
			return Published{Sequence: ack.Sequence, Duplicate: ack.Duplicate && attempt == 1, MsgID: id, Attempts: attempt}, nil
		}
		if refused(err) {
			if errors.Is(err, nats.ErrMaxPayload) {
				err = fmt.Errorf("%w (%d bytes): %w", ErrTooLarge, len(msg.Data), err)
			}
			return Published{}, fmt.Errorf("jetstream: publish to %q refused: %w", channel, err)
		}
		c.publishRetries.Add(1)
		if c.publishFailing.CompareAndSwap(false, true) { // once per outage, not per publish
			c.log.Warn("jetstream: publish not answered (a leader election or a lost connection); trying again with the same message ID",
				"channel", channel, "msgID", id, "err", err)
		}
		if ctx.Err() != nil || errors.Is(err, nats.ErrConnectionClosed) || time.Since(start)+publishAttempt >= c.opts.DuplicateWindow {
			return Published{}, &PublishError{Channel: channel, MsgID: id, Attempts: attempt, Err: err}
		}
		pause.wait(ctx)
	}
}

// refused reports an error after which the message is certainly not
// stored and another attempt cannot help: the server's refusal (not a
// temporary unavailability, 503) or one the client raises before sending.
func refused(err error) bool {
	var apiErr *njs.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code < 500
	}
	return errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadSubject)
}
