package jetstream

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"
)

// What a failover loses, seen in a cluster run with per-message timelines
// (TestClusterOpenAtOnceAndFailover): messages published just before the
// stream's leader stopped were delivered by the old consumer leader to a
// pull request, the delivery was replicated, and the message itself died in
// flight with the stopped server's connections. The new leader counts them
// as delivered and pending; no process holds them, so nothing keeps them
// alive and nothing acknowledges them: they came back only after AckWait
// (30 s after the fault with the default AckWait). Acknowledgements sent
// while no consumer leader existed are lost the same way (those tasks run
// twice, AckWait late).
//
// The recovery, run by every process that sees the consumer elect a new
// leader, or its own fetches recover after failing (a lost connection, a
// restarted server):
//
//  1. It announces the check on the channel's recover subject. Every
//     process consuming the channel (itself included) then keeps its held
//     messages alive at once and every recoverDelay/3 for 3×recoverDelay.
//  2. It asks the new leader for the consumer's ack floor and last
//     delivered sequence, announces again, and sends a negative
//     acknowledgement with delay recoverDelay for every stream sequence in
//     between. The server ignores it for sequences that are not pending.
//
// A message a process holds is kept alive within the delay, which moves its
// redelivery back to AckWait; a message no process holds comes back after
// recoverDelay instead of AckWait. The cost: a holder that misses both
// announcements and every keep-alive window (cut off for longer than
// recoverDelay at that moment) has its message run twice, as a shorter
// AckWait would; a retry waiting out its backoff comes back after
// recoverDelay (its attempt was counted); an acknowledgement still being
// confirmed (ConfirmAcks) races the redelivery.

// recoverDelayMax bounds the delay of a recovery's negative
// acknowledgements: recoverDelay is AckWait, at most this.
const recoverDelayMax = 3 * time.Second

// recoverScanMax bounds the sequences one recovery touches: past it, the
// newest are taken (deliveries lost in a failover are the latest ones).
const recoverScanMax = 100_000

func (ch *Channel) recoverDelay() time.Duration { return min(ch.opts.AckWait, recoverDelayMax) }

// recoverSubject is where a channel's processes announce a recovery.
func recoverSubject(channel string) string { return "smartpool-recover." + channel }

// failover is a Channel's recovery state; its fields are atomics, touched
// by the NATS client's callbacks, the fetcher, the heartbeat and the
// recovery goroutine.
type failover struct {
	sub        *nats.Subscription          // the recover subject; nil if the subscription failed
	aliveUntil atomic.Int64                // Unix nanoseconds: until then the heartbeat keeps held messages alive every recoverDelay/3
	kick       chan struct{}               // capacity 1: wakes the heartbeat to keep alive now
	running    atomic.Bool                 // a recovery goroutine runs
	again      atomic.Bool                 // another recovery was asked for while one ran
	reply      [2]atomic.Pointer[[]string] // a reply subject of the work (0) and pass (1) consumers, split on '.': the template of a negative acknowledgement
	due        atomic.Int64                // Unix nanoseconds: when the last recovery's negative acknowledgements come due
	checks     atomic.Uint64               // recoveries run
	naks       atomic.Uint64               // negative acknowledgements with delay sent by them
}

// listen subscribes to the recover subject; called once by Client.Channel.
func (ch *Channel) listen() {
	ch.fo.kick = make(chan struct{}, 1)
	if sub, err := ch.client.nc.Subscribe(recoverSubject(ch.name), func(m *nats.Msg) {
		if due, err := strconv.ParseInt(string(m.Data), 10, 64); err == nil && ch.fo.due.Load() <= time.Now().UnixNano() {
			ch.fo.due.Store(due) // another process's check of this failover
		}
		ch.keepAliveSoon()
	}); err == nil {
		ch.fo.sub = sub
	}
}

// keepAliveSoon makes the heartbeat keep every held message alive now and
// every recoverDelay/3 for 3×recoverDelay.
func (ch *Channel) keepAliveSoon() {
	ch.fo.aliveUntil.Store(time.Now().Add(3 * ch.recoverDelay()).UnixNano())
	select {
	case ch.fo.kick <- struct{}{}:
	default:
	}
}

// noteReply keeps the reply subject of a delivered message as the
// template of its consumer's negative acknowledgements.
func (ch *Channel) noteReply(m *message) {
	i := 0
	if m.stream == passStreamName(ch.name) {
		i = 1
	}
	if ch.fo.reply[i].Load() != nil {
		return
	}
	if tokens := strings.Split(m.msg.Reply(), "."); ackOffset(tokens) > 0 {
		ch.fo.reply[i].Store(&tokens)
	}
}

// ackOffset returns the index of the stream's name in the tokens of an
// acknowledgement subject ($JS.ACK.<stream>.<consumer>.<delivered>.<stream
// seq>.<consumer seq>.<time>.<pending>, with a domain and an account hash
// before the stream's name on servers since 2.10), or 0 if it is none.
func ackOffset(tokens []string) int {
	switch {
	case len(tokens) < 9 || tokens[0] != "$JS" || tokens[1] != "ACK":
		return 0
	case len(tokens) == 9:
		return 2
	case len(tokens) >= 11:
		return 4
	}
	return 0
}

// nakDelay returns the delay of a recovery's negative acknowledgements
// sent at now: recoverDelay, or, while an earlier recovery's are not yet
// due, what is left of theirs (recoverDelay/2 at least, so that the holders
// keep their messages alive before it), so that the several checks one
// failover starts (an election, a reconnection, fetches that recover, in
// every process: the announcement carries the time) do not push the lost
// deliveries back each time.
func (ch *Channel) nakDelay(now time.Time) time.Duration {
	d := ch.recoverDelay()
	if due := ch.fo.due.Load(); due > now.UnixNano() {
		return max(time.Duration(due-now.UnixNano()), d/2)
	}
	ch.fo.due.Store(now.Add(d).UnixNano())
	return d
}

// recoverLost starts a recovery (see above) unless one runs, in which case
// that one runs once more when it ends.
func (ch *Channel) recoverLost() {
	ch.fo.again.Store(true)
	if !ch.fo.running.CompareAndSwap(false, true) {
		return
	}
	if !ch.client.goroutine(ch.recoverLoop) {
		ch.fo.running.Store(false)
	}
}

func (ch *Channel) recoverLoop(ctx context.Context) {
	for {
		for ch.fo.again.Swap(false) && ctx.Err() == nil {
			ch.recoverOnce(ctx)
		}
		ch.fo.running.Store(false)
		if !ch.fo.again.Load() || !ch.fo.running.CompareAndSwap(false, true) {
			return
		}
	}
}

// recoverOnce runs one recovery over both consumers.
func (ch *Channel) recoverOnce(ctx context.Context) {
	ch.fo.checks.Add(1)
	_ = ch.client.nc.Publish(recoverSubject(ch.name), nil)
	ch.keepAliveSoon()
	type span struct{ floor, last, dseq uint64 }
	var spans [2]span
	for i, cons := range []njs.Consumer{ch.cons, ch.pass} {
		// The new leader may take a while to answer: try until it does or
		// AckWait passes (then redelivery has come anyway).
		actx, cancel := context.WithTimeout(ctx, ch.opts.AckWait)
		err := retryOpen(actx, func(ctx context.Context) error {
			info, err := cons.Info(ctx)
			if err == nil {
				spans[i] = span{info.AckFloor.Stream, info.Delivered.Stream, info.Delivered.Consumer}
			}
			return err
		})
		cancel()
		if err != nil && ctx.Err() == nil {
			ch.client.log.Warn("jetstream: could not read the consumer after a failover; deliveries it lost come back after AckWait",
				"channel", ch.name, "err", err)
		}
	}
	delay := ch.nakDelay(time.Now())
	// Again, since the reading may have taken a while, and with the time
	// the negative acknowledgements come due, which the other processes'
	// checks of the same failover keep (see nakDelay).
	_ = ch.client.nc.Publish(recoverSubject(ch.name), strconv.AppendInt(nil, ch.fo.due.Load(), 10))
	ch.keepAliveSoon()
	nak := []byte("-NAK {\"delay\": " + strconv.FormatInt(int64(delay), 10) + "}")
	for i, s := range spans {
		tmpl := ch.fo.reply[i].Load()
		if tmpl == nil || s.last <= s.floor {
			continue // nothing pending, or never delivered here: another process knows the subject
		}
		tokens := append([]string(nil), (*tmpl)...)
		off := ackOffset(tokens)
		tokens[off+2] = "1"                            // delivery count: only reported in an advisory
		tokens[off+4] = strconv.FormatUint(s.dseq, 10) // any consumer sequence the leader accepts
		tokens[off+5] = strconv.FormatInt(time.Now().UnixNano(), 10)
		for seq := max(s.floor+1, s.last-min(s.last, recoverScanMax)+1); seq <= s.last; seq++ {
			tokens[off+3] = strconv.FormatUint(seq, 10)
			if ch.client.nc.Publish(strings.Join(tokens, "."), nak) == nil {
				ch.fo.naks.Add(1)
			}
		}
	}
	_ = ch.client.nc.Flush()
}
