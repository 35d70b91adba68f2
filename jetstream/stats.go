package jetstream

import "sync/atomic"

// counters are a channel's event counts, each updated atomically.
type counters struct {
	fetched, redelivered, acked, retried, deadLettered, handedBack atomic.Uint64
	keptAlive, settleErrors, fetchErrors                           atomic.Uint64
}

// Stats counts what a Channel did with its messages in this process. Counts
// only grow, except Queued and Held.
type Stats struct {
	Queued       int    // messages in the local queue now
	Held         int    // messages fetched and not settled now: queued, running or yielded
	Fetched      uint64 // messages fetched
	Redelivered  uint64 // of those, delivered before (to any process)
	Acked        uint64 // handler returned nil: acknowledged
	Retried      uint64 // handler failed: delivered again after a backoff
	DeadLettered uint64 // terminated: unknown handler, Permanent error, MaxDeliver
	HandedBack   uint64 // returned to the stream unrun because the pool or channel closed
	KeptAlive    uint64 // in-progress signals sent for held messages
	SettleErrors uint64 // acknowledgements that failed to send (the server redelivers)
	FetchErrors  uint64 // fetches that failed (lost connection, leader election)
}

// Stats returns a snapshot of the channel's counters.
func (ch *Channel) Stats() Stats {
	ch.mu.Lock()
	q, h := ch.msgs, len(ch.held)
	ch.mu.Unlock()
	s := &ch.stats
	return Stats{Queued: q, Held: h,
		Fetched: s.fetched.Load(), Redelivered: s.redelivered.Load(), Acked: s.acked.Load(),
		Retried: s.retried.Load(), DeadLettered: s.deadLettered.Load(), HandedBack: s.handedBack.Load(),
		KeptAlive: s.keptAlive.Load(), SettleErrors: s.settleErrors.Load(), FetchErrors: s.fetchErrors.Load()}
}
