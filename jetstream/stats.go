package jetstream

import "sync/atomic"

// counters are a channel's event counts, each updated atomically.
type counters struct {
	fetched, redelivered, acked, retried, deadLettered, handedBack atomic.Uint64
	keptAlive, settleErrors, fetchErrors                           atomic.Uint64
	passedOn, timedOut, acksUnconfirmed, queueTimedOut, ackRetries atomic.Uint64
}

// Stats counts what a Channel did with its messages in this process. Counts
// only grow, except Queued, Held, Parked and Conn.Connected.
//
// AcksUnconfirmed counts only acknowledgements this process knows to be
// uncertain: one that failed to send, one left unanswered with
// ConfirmAcks, one sent while the connection was down. It is not a count
// of the tasks that are delivered again, nor of those that run twice,
// which may be more: a failover or a restarted server can lose a delivery
// in flight (the task is delivered again once, having never run:
// Redelivered counts it, AcksUnconfirmed does not) and can forget
// acknowledgements it took but had not yet written to disk or to its
// replicas (the task runs twice, and no process can tell). The checks a
// process makes after a failover for lost deliveries are counted in
// FailoverChecks and FailoverNaks. Even with ConfirmAcks and
// EmbeddedOptions.SyncAlways, a process that dies after its handler
// returned and before its acknowledgement left runs the task again
// elsewhere. Handlers must be idempotent (keyed on something in the
// payload); count duplicates there if they matter.
type Stats struct {
	Queued          int    // messages in the local queue now
	Held            int    // messages fetched and not settled now: queued, running, yielded or parked
	Parked          int    // of those, messages with a handler this process lacks, waiting to be passed on
	Fetched         uint64 // messages fetched
	Redelivered     uint64 // of those, delivered before (to any process)
	Acked           uint64 // handler returned nil: acknowledged
	Retried         uint64 // handler failed or timed out: delivered again after a backoff
	TimedOut        uint64 // runs past their timeout (also counted in Retried or DeadLettered)
	DeadLettered    uint64 // moved to the dead-letter stream: Permanent error, MaxDeliver, unknown handler past UnknownMaxAge
	PassedOn        uint64 // handler unknown here: passed on to other processes
	QueueTimedOut   uint64 // waited QueueTimeout in the local queue with no worker free: passed on to other processes
	HandedBack      uint64 // returned to the stream unrun because the pool or channel closed
	KeptAlive       uint64 // in-progress signals sent for held messages
	SettleErrors    uint64 // acknowledgements, retries or dead letters that failed to send (the server redelivers)
	AcksUnconfirmed uint64 // acknowledgements not confirmed (failed, unanswered, or sent while disconnected): the message may run again
	AckRetries      uint64 // with ConfirmAcks: acknowledgements sent again after an attempt went unanswered (a failover, an outage)
	FetchErrors     uint64 // fetches that failed or went unanswered (lost connection, leader election)
	// FailoverChecks counts the checks this process ran after a failover
	// or a lost connection for deliveries that reached no process (see
	// the package doc, "Clusters"); FailoverNaks the pending messages
	// those checks asked the server to deliver again within a few seconds
	// unless the process holding one keeps it alive (it does, so only the
	// lost ones come back).
	FailoverChecks uint64
	FailoverNaks   uint64
	Conn           ConnStats
}

// Stats returns a snapshot of the channel's counters and of its client's
// connection.
func (ch *Channel) Stats() Stats {
	ch.mu.Lock()
	q, h, p := ch.msgs, len(ch.held), len(ch.parked)
	ch.mu.Unlock()
	s := &ch.stats
	return Stats{Queued: q, Held: h, Parked: p,
		Fetched: s.fetched.Load(), Redelivered: s.redelivered.Load(), Acked: s.acked.Load(),
		Retried: s.retried.Load(), TimedOut: s.timedOut.Load(), DeadLettered: s.deadLettered.Load(),
		PassedOn: s.passedOn.Load(), QueueTimedOut: s.queueTimedOut.Load(), HandedBack: s.handedBack.Load(), KeptAlive: s.keptAlive.Load(),
		SettleErrors: s.settleErrors.Load(), AcksUnconfirmed: s.acksUnconfirmed.Load(), AckRetries: s.ackRetries.Load(), FetchErrors: s.fetchErrors.Load(),
		FailoverChecks: ch.fo.checks.Load(), FailoverNaks: ch.fo.naks.Load(),
		Conn: ch.client.ConnStats()}
}
