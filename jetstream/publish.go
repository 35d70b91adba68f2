package jetstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"
)

// handlerHeader carries the handler name of a message.
const handlerHeader = "Smartpool-Handler"

// Published is what the stream said about a stored message.
type Published struct {
	// Sequence is the message's number in its channel's stream.
	Sequence uint64
	// Duplicate is true if a message with the same ID was stored within
	// the duplicate window: this publish stored nothing.
	Duplicate bool
}

// PublishOption adjusts one publish.
type PublishOption func(*publishConfig)

type publishConfig struct {
	msgID string
}

// WithMsgID gives the message an ID: the server stores only the first
// message with a given ID within Options.DuplicateWindow, so a producer may
// retry a publish whose answer it did not get without queuing the task
// twice.
func WithMsgID(id string) PublishOption {
	return func(p *publishConfig) { p.msgID = id }
}

// ErrTooLarge wraps a publish refused because the message is bigger than
// the server accepts.
var ErrTooLarge = errors.New("jetstream: message too large")

// Publish stores a task for the handler named handler in the stream of
// channel, creating the stream on first use, and returns once the stream
// has stored it (on a quorum of replicas, for a replicated stream). An
// error means the task may or may not be stored: retry with the same
// WithMsgID to be sure it is stored once.
func (c *Client) Publish(ctx context.Context, channel, handler string, payload []byte, opts ...PublishOption) (Published, error) {
	if handler == "" {
		return Published{}, fmt.Errorf("%w: empty handler name", ErrBadName)
	}
	var pc publishConfig
	for _, o := range opts {
		o(&pc)
	}
	if err := c.ensureStream(ctx, channel); err != nil {
		return Published{}, err
	}
	msg := &nats.Msg{Subject: subject(channel), Data: payload, Header: nats.Header{handlerHeader: []string{handler}}}
	var jopts []njs.PublishOpt
	if pc.msgID != "" {
		jopts = append(jopts, njs.WithMsgID(pc.msgID))
	}
	ack, err := c.js.PublishMsg(ctx, msg, jopts...)
	if err != nil {
		if errors.Is(err, nats.ErrMaxPayload) {
			err = fmt.Errorf("%w (%d bytes): %w", ErrTooLarge, len(payload), err)
		}
		return Published{}, fmt.Errorf("jetstream: publish to %q: %w", channel, err)
	}
	return Published{Sequence: ack.Sequence, Duplicate: ack.Duplicate}, nil
}
