package jetstream

import (
	"runtime"
	"time"
)

// ChannelOptions configure a Channel. Zero fields mean the documented
// defaults.
type ChannelOptions struct {
	// Prefetch is the most messages this process holds without a worker
	// running them: those in the local queue plus those parked because
	// their handler is unknown here (see UnknownDelay). The fetcher asks
	// for no more while that many wait. Default twice
	// runtime.GOMAXPROCS(0), about twice a default pool's workers; set it
	// to twice Config.Workers.
	//
	// It also bounds throughput: a process starts about Prefetch messages
	// per round trip to the server, so tasks much shorter than that round
	// trip leave workers waiting for the next fetch. Over loopback with 2
	// workers and no-op tasks, Prefetch 16 drained a backlog about 1.6
	// times as fast as 4. A larger Prefetch holds more messages that
	// another process could run meanwhile: a process whose workers hang
	// keeps them until QueueTimeout.
	Prefetch int
	// AckWait is how long the server waits for a sign of life before it
	// delivers a message again. A message this process holds (queued here,
	// running, or yielded) is kept alive every AckWait/3, so only a process
	// that died or lost its connection has its messages redelivered.
	// Default 30 s. It is a setting of the durable consumer that every
	// process consuming the channel shares: Client.Channel fails with
	// ErrConsumerConflict if the consumer exists with another AckWait.
	AckWait time.Duration
	// MaxDeliver is how many times a message is attempted before it is
	// dead-lettered. Default 5. Passes by processes that lack the handler
	// (see UnknownDelay) do not count.
	MaxDeliver int
	// Backoff returns the delay before attempt number attempt+1, after
	// attempt failed (attempt counts from 1). Default: 1 s doubled per
	// attempt, at most 1 minute.
	Backoff func(attempt int) time.Duration
	// Timeout bounds one run of a handler: its context's deadline. Past it
	// the message stops being kept alive and goes back to the stream after
	// its backoff, for any process, whether or not the handler returns
	// (the run is counted in Stats.TimedOut and logged once). Zero: no
	// bound. A publish may set its own with WithTimeout.
	//
	// Go cannot stop a goroutine: a handler that ignores its context keeps
	// its worker until it returns, and what it returns then is ignored
	// (its message was settled at the timeout). Messages queued behind it
	// move on after QueueTimeout. The pool's Close waits for that worker
	// until Close's context ends and then returns the context's error with
	// the stats of that moment; Client.Close does not wait for handlers.
	Timeout time.Duration
	// QueueTimeout bounds how long a fetched message waits in this
	// process's local queue for a worker. Past it, the message is passed
	// on to the other processes as UnknownDelay describes (no attempt
	// counted), and this process fetches no more than one message at a
	// time until one of its workers takes a task again: a process whose
	// workers are all hung (or busy for long) strands nothing. It is
	// counted in Stats.QueueTimedOut and logged. Default AckWait.
	QueueTimeout time.Duration
	// UnknownDelay is how long this process keeps a message whose handler
	// it does not know before it passes it on to another process (during
	// a rolling deploy, one that runs the newer code). The copy goes to
	// the channel's pass stream, which every process reads before the
	// backlog, except those that passed a message on within the last
	// 2×(UnknownDelay+2 s): a process that has the handler starts it
	// within UnknownDelay plus one fetch (2 s at most when idle, much less
	// under a backlog), and a pass costs no attempt (MaxDeliver). Default
	// 5 s.
	UnknownDelay time.Duration
	// UnknownMaxAge is how old (since its first publish) a message whose
	// handler no process knew may grow before it is dead-lettered with
	// ErrUnknownHandler. Default 1 hour.
	UnknownMaxAge time.Duration
	// ConfirmAcks makes each acknowledgement wait for the server's
	// confirmation (JetStream's double ack) instead of being sent and
	// forgotten. An unconfirmed ack is counted in Stats.AcksUnconfirmed:
	// the message may run again. It costs a round trip per message; see
	// BENCHMARKS.md. Without it, an ack sent while the connection is down
	// is counted there too.
	ConfirmAcks bool
	// OnDeadLetter, if set, receives every message the channel gives up
	// on: unknown handler past UnknownMaxAge, Permanent error, MaxDeliver
	// attempts. The message is kept in the channel's dead-letter stream
	// (see Client.DeadLetters) either way. It runs on a worker, a timer or
	// the fetching goroutine; keep it short.
	OnDeadLetter func(DeadLetter)
}

func (o ChannelOptions) withDefaults() ChannelOptions {
	if o.Prefetch <= 0 {
		o.Prefetch = 2 * runtime.GOMAXPROCS(0)
	}
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	if o.QueueTimeout == 0 {
		o.QueueTimeout = o.AckWait
	}
	if o.MaxDeliver <= 0 {
		o.MaxDeliver = 5
	}
	if o.Backoff == nil {
		o.Backoff = defaultBackoff
	}
	if o.UnknownDelay <= 0 {
		o.UnknownDelay = 5 * time.Second
	}
	if o.UnknownMaxAge <= 0 {
		o.UnknownMaxAge = time.Hour
	}
	return o
}

func defaultBackoff(attempt int) time.Duration {
	d := time.Second
	for i := 1; i < attempt && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}
