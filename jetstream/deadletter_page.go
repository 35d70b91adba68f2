package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/smartpool-go/smartpool/statuspage"
)

// A Client is a statuspage.DeadLetterSource: the live page lists the newest
// dead letters of each channel the client opened, and, with the page's
// actions on, replays or deletes one.
//
//	mux.Handle("/debug/pool/", statuspage.Handler(pool, statuspage.Options{
//		Sections:    func() []statuspage.Section { return []statuspage.Section{client.StatusSection()} },
//		DeadLetters: []statuspage.DeadLetterSource{client},
//		Authorize:   authorize,
//	}))
var _ statuspage.DeadLetterSource = (*Client)(nil)

// newestScan bounds the reads one channel's NewestDeadLetters makes, n
// letters plus the gaps replays and deletes left: a stream with more gaps
// than that among its newest letters shows fewer.
const newestScan = 4

// NewestDeadLetters returns, for each channel the client opened, up to n of
// its newest dead letters, newest first, and how many it keeps; a channel
// whose dead-letter stream cannot be read has Err set. It implements
// statuspage.DeadLetterSource; the letter's ID is its Sequence.
func (c *Client) NewestDeadLetters(ctx context.Context, n int) []statuspage.DeadLetterList {
	n = max(n, 1)
	col := Collector{client: c}
	var out []statuspage.DeadLetterList
	for _, cn := range col.channels() {
		l := statuspage.DeadLetterList{Channel: cn.name}
		letters, kept, err := c.newestDead(ctx, cn.name, n)
		l.Kept, l.Err = kept, err
		for _, d := range letters {
			l.Letters = append(l.Letters, statuspage.DeadLetter{ID: strconv.FormatUint(d.Sequence, 10), Reason: d.Reason,
				Attempts: d.Deliveries, Born: d.Born, Died: d.Died, Payload: d.Payload})
		}
		out = append(out, l)
	}
	return out
}

// newestDead reads channel's newest dead letters, walking its dead-letter
// stream back from the last sequence over the gaps replays and deletes left.
func (c *Client) newestDead(ctx context.Context, channel string, n int) ([]DeadLetter, uint64, error) {
	s, err := c.deadStream(ctx, channel)
	if err != nil {
		return nil, 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("jetstream: dead-letter stream of channel %q: %w", channel, err)
	}
	st := info.State
	var out []DeadLetter
	for seq, reads := st.LastSeq, 0; seq >= max(st.FirstSeq, 1) && len(out) < n && reads < newestScan*n; seq-- {
		reads++
		raw, err := s.GetMsg(ctx, seq)
		if errors.Is(err, njs.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return out, st.Msgs, fmt.Errorf("jetstream: dead letters of channel %q: %w", channel, err)
		}
		out = append(out, readDead(channel, raw))
	}
	return out, st.Msgs, nil
}

// ReplayDeadLetter is Replay for the live page: id is the dead letter's
// Sequence. It implements statuspage.DeadLetterSource.
func (c *Client) ReplayDeadLetter(ctx context.Context, channel, id string) error {
	seq, err := deadSeq(id)
	if err != nil {
		return err
	}
	_, err = c.Replay(ctx, channel, seq)
	return err
}

// DeleteDeadLetter removes dead letter id (its Sequence) of channel for
// good; ErrNoDeadLetter if there is none. It implements
// statuspage.DeadLetterSource.
func (c *Client) DeleteDeadLetter(ctx context.Context, channel, id string) error {
	seq, err := deadSeq(id)
	if err != nil {
		return err
	}
	s, err := c.deadStream(ctx, channel)
	if err != nil {
		return err
	}
	// Looked up first: a server answers a delete of a missing sequence with
	// an API error, not ErrMsgNotFound.
	if _, err := s.GetMsg(ctx, seq); errors.Is(err, njs.ErrMsgNotFound) {
		return fmt.Errorf("%w: channel %q, sequence %d", ErrNoDeadLetter, channel, seq)
	}
	err = s.DeleteMsg(ctx, seq)
	if errors.Is(err, njs.ErrMsgNotFound) {
		return fmt.Errorf("%w: channel %q, sequence %d", ErrNoDeadLetter, channel, seq)
	}
	if err != nil {
		return fmt.Errorf("jetstream: delete dead letter %d of channel %q: %w", seq, channel, err)
	}
	return nil
}

func deadSeq(id string) (uint64, error) {
	seq, err := strconv.ParseUint(id, 10, 64)
	if err != nil || seq == 0 {
		return 0, fmt.Errorf("%w: %q is not a dead letter's sequence", ErrNoDeadLetter, id)
	}
	return seq, nil
}
