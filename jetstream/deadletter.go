package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"
)

// Each channel has a dead-letter stream next to its work stream: a message
// the channel gives up on is stored there (payload, headers, the reason and
// the attempt count) before it is terminated in the work stream, so a dead
// letter outlives the process that gave up on it. Client.DeadLetters lists
// them, DeadLetterCount counts them, Replay publishes one again.

// names of a channel's dead-letter stream and subject.
func deadStreamName(channel string) string { return "SMARTPOOL_DLQ_" + channel }
func deadSubject(channel string) string    { return "smartpool-dlq." + channel }

// Headers of a stored dead letter.
const (
	reasonHeader  = "Smartpool-Error"   // why the channel gave up
	origSeqHeader = "Smartpool-Seq"     // sequence in the work stream
	diedHeader    = "Smartpool-Dead-At" // Unix nanoseconds
)

// DeadLetter is a message the channel gave up on.
type DeadLetter struct {
	Channel string
	Handler string
	Payload []byte
	// Deliveries counts the handler's attempts (passes by processes that
	// lacked the handler excluded).
	Deliveries uint64
	// Err is why: the handler's last error, ErrUnknownHandler,
	// ErrTooManyDeliveries, ErrTimedOut or ErrHandlerAborted (a panic).
	// Read back by Client.DeadLetters it is an error with Reason's text.
	Err    error
	Reason string // Err's text, as stored
	// Sequence is the dead letter's number in the channel's dead-letter
	// stream: pass it to Client.Replay.
	Sequence uint64
	Born     time.Time // first publish of the task
	Died     time.Time // when the channel gave up
}

// termReasonServer is the first server version that honours a termination
// with a reason (+TERM reason); older ones ignore it and deliver the message
// again after AckWait.
var termReasonServer = [3]int{2, 10, 4}

// deadLetter stores a claimed message in the dead-letter stream and then
// terminates it. If it cannot be stored, the message stays in the work
// stream and comes back after its backoff: a dead letter is never only a
// log line.
func (m *message) deadLetter(cause error) {
	ch := m.ch
	died := time.Now()
	dm := ch.copyOf(m, deadSubject(ch.name))
	dm.Header.Set(attemptsHeader, strconv.FormatUint(m.attempts(), 10))
	dm.Header.Set(reasonHeader, cause.Error())
	dm.Header.Set(origSeqHeader, strconv.FormatUint(m.seq, 10))
	dm.Header.Set(diedHeader, strconv.FormatInt(died.UnixNano(), 10))
	ctx, cancel := context.WithTimeout(ch.client.ctx, max(ch.opts.AckWait, 5*time.Second))
	ack, err := ch.client.js.PublishMsg(ctx, dm, njs.WithMsgID(fmt.Sprintf("smartpool-dead-%s-%s", ch.name, m.id())))
	cancel()
	if err != nil {
		ch.stats.settleErrors.Add(1)
		ch.client.log.Error("jetstream: storing a dead letter failed; the message stays in its stream",
			"channel", ch.name, "handler", m.handler, "seq", m.seq, "reason", cause, "err", err)
		if m.msg.NakWithDelay(ch.opts.Backoff(int(m.attempts()))) != nil {
			ch.stats.settleErrors.Add(1)
		}
		return
	}
	term := func() error { return m.msg.TermWithReason(cause.Error()) }
	if !ch.client.serverAtLeast(termReasonServer) {
		term = m.msg.Term // an older server ignores a termination with a reason and redelivers
	}
	if term() != nil {
		ch.stats.settleErrors.Add(1) // redelivered; storing it again is a duplicate the server drops
	}
	ch.stats.deadLettered.Add(1)
	if f := ch.opts.OnDeadLetter; f != nil {
		f(DeadLetter{Channel: ch.name, Handler: m.handler, Payload: m.msg.Data(), Deliveries: m.attempts(),
			Err: cause, Reason: cause.Error(), Sequence: ack.Sequence, Born: m.born, Died: died})
	}
}

// deadStream returns channel's dead-letter stream, creating both of its
// streams on first use.
func (c *Client) deadStream(ctx context.Context, channel string) (njs.Stream, error) {
	if err := c.ensureStream(ctx, channel); err != nil {
		return nil, err
	}
	s, err := c.js.Stream(ctx, deadStreamName(channel))
	if err != nil {
		return nil, fmt.Errorf("jetstream: dead-letter stream of channel %q: %w", channel, err)
	}
	return s, nil
}

// DeadLetterCount returns the number of dead letters kept for channel.
func (c *Client) DeadLetterCount(ctx context.Context, channel string) (uint64, error) {
	s, err := c.deadStream(ctx, channel)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("jetstream: dead-letter stream of channel %q: %w", channel, err)
	}
	return info.State.Msgs, nil
}

// DeadLetters returns up to limit dead letters of channel, oldest first,
// from sequence from on (0 or 1: from the first). To page, pass the last
// Sequence plus one.
func (c *Client) DeadLetters(ctx context.Context, channel string, from uint64, limit int) ([]DeadLetter, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("jetstream: DeadLetters: limit %d, want at least 1", limit)
	}
	s, err := c.deadStream(ctx, channel)
	if err != nil {
		return nil, err
	}
	var out []DeadLetter
	for seq := max(from, 1); len(out) < limit; {
		raw, err := s.GetMsg(ctx, seq, njs.WithGetMsgSubject(deadSubject(channel)))
		if errors.Is(err, njs.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("jetstream: dead letters of channel %q: %w", channel, err)
		}
		out = append(out, readDead(channel, raw))
		seq = raw.Sequence + 1
	}
	return out, nil
}

func readDead(channel string, raw *njs.RawStreamMsg) DeadLetter {
	h := raw.Header
	d := DeadLetter{Channel: channel, Handler: h.Get(handlerHeader), Payload: raw.Data, Reason: h.Get(reasonHeader),
		Sequence: raw.Sequence, Died: raw.Time}
	d.Err = errors.New(d.Reason)
	d.Deliveries, _ = strconv.ParseUint(h.Get(attemptsHeader), 10, 64)
	if ns, err := strconv.ParseInt(h.Get(bornHeader), 10, 64); err == nil {
		d.Born = time.Unix(0, ns)
	}
	if ns, err := strconv.ParseInt(h.Get(diedHeader), 10, 64); err == nil {
		d.Died = time.Unix(0, ns)
	}
	return d
}

// ErrNoDeadLetter is returned by Replay for a sequence that holds no dead
// letter (never did, or was replayed already).
var ErrNoDeadLetter = errors.New("jetstream: no such dead letter")

// Replay publishes dead letter seq of channel again as a new task (a fresh
// message ID, no attempts counted, a new first-publish time) and then
// removes it from the dead-letter stream. A Replay repeated after an error
// stores the task once.
func (c *Client) Replay(ctx context.Context, channel string, seq uint64) (Published, error) {
	s, err := c.deadStream(ctx, channel)
	if err != nil {
		return Published{}, err
	}
	raw, err := s.GetMsg(ctx, seq)
	if errors.Is(err, njs.ErrMsgNotFound) {
		return Published{}, fmt.Errorf("%w: channel %q, sequence %d", ErrNoDeadLetter, channel, seq)
	}
	if err != nil {
		return Published{}, fmt.Errorf("jetstream: replay %d of channel %q: %w", seq, channel, err)
	}
	h := nats.Header{}
	for k, v := range raw.Header {
		switch k {
		case attemptsHeader, bornHeader, reasonHeader, origSeqHeader, diedHeader:
		default:
			if len(k) < 5 || k[:5] != "Nats-" {
				h[k] = v
			}
		}
	}
	msg := &nats.Msg{Subject: subject(channel), Data: raw.Data, Header: h}
	p, err := c.publish(ctx, channel, msg, fmt.Sprintf("smartpool-replay-%s-%d", channel, seq))
	if err != nil {
		return p, err
	}
	if err := s.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, njs.ErrMsgNotFound) {
		return p, fmt.Errorf("jetstream: replayed %d of channel %q but could not remove it: %w", seq, channel, err)
	}
	return p, nil
}
