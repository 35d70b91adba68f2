package jetstream

import (
	"context"
	"errors"
	"fmt"

	njs "github.com/nats-io/nats.go/jetstream"
)

// ErrConsumerConflict is returned by Client.Channel when the channel's
// durable consumer, shared by every process consuming the channel, exists
// with settings other than the ones asked for. Changing them in one process
// would silently change them for all (a shorter AckWait redelivers the
// others' running tasks), so the channel refuses: give every process the
// same ChannelOptions, or delete the consumer when none runs.
var ErrConsumerConflict = errors.New("jetstream: the channel's consumer exists with other settings")

// consumerConfig is the durable consumer a channel asks for on the stream
// of subject subj: its work stream or its pass stream.
func consumerConfig(subj string, opts ChannelOptions) njs.ConsumerConfig {
	return njs.ConsumerConfig{
		Durable:       consumerName,
		AckPolicy:     njs.AckExplicitPolicy,
		AckWait:       opts.AckWait,
		MaxDeliver:    -1, // the channel counts attempts itself and terminates: see message.go
		FilterSubject: subj,
		MaxAckPending: -1,
	}
}

// ensureConsumer creates the durable consumer of channel name on stream
// (its work stream or its pass stream, whose subject is subj), or joins it
// if it exists with the same settings. It never updates one: see
// ErrConsumerConflict.
func (c *Client) ensureConsumer(ctx context.Context, name, stream, subj string, opts ChannelOptions) (njs.Consumer, error) {
	want := consumerConfig(subj, opts)
	var cons njs.Consumer
	err := retryOpen(ctx, func(ctx context.Context) error {
		var err error
		cons, err = c.js.Consumer(ctx, stream, consumerName)
		if err == nil {
			return sameConsumer(name, want, cons.CachedInfo().Config)
		}
		if !errors.Is(err, njs.ErrConsumerNotFound) {
			return err
		}
		cons, err = c.js.CreateConsumer(ctx, stream, want)
		if errors.Is(err, njs.ErrConsumerExists) {
			return errOpenAgain // a create racing another process's create: read what won
		}
		return err
	})
	if err == nil {
		c.noteCreated(stream+"/"+consumerName, cons.CachedInfo().Created)
	}
	if err != nil {
		if errors.Is(err, ErrConsumerConflict) {
			return nil, err
		}
		return nil, fmt.Errorf("jetstream: consumer for channel %q: %w", name, err)
	}
	return cons, nil
}

// sameConsumer compares the settings a channel depends on.
func sameConsumer(name string, want, have njs.ConsumerConfig) error {
	switch {
	case want.AckWait != have.AckWait:
		return fmt.Errorf("%w: channel %q: AckWait %v asked for, %v on the server", ErrConsumerConflict, name, want.AckWait, have.AckWait)
	case want.AckPolicy != have.AckPolicy, want.MaxDeliver != have.MaxDeliver,
		want.FilterSubject != have.FilterSubject, want.MaxAckPending != have.MaxAckPending:
		return fmt.Errorf("%w: channel %q: ack policy %v, max deliver %d, filter %q, max ack pending %d asked for; %v, %d, %q, %d on the server",
			ErrConsumerConflict, name, want.AckPolicy, want.MaxDeliver, want.FilterSubject, want.MaxAckPending,
			have.AckPolicy, have.MaxDeliver, have.FilterSubject, have.MaxAckPending)
	}
	return nil
}
