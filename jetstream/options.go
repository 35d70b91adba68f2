package jetstream

import (
	"runtime"
	"time"
)

// ChannelOptions configure a Channel. Zero fields mean the documented
// defaults.
type ChannelOptions struct {
	// Prefetch is the most messages fetched and not yet handed to a worker:
	// the local queue's bound. Default twice runtime.GOMAXPROCS(0), about
	// twice a default pool's workers; set it to twice Config.Workers.
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
	Timeout time.Duration
	// UnknownDelay is how long this process keeps a message whose handler
	// it does not know before it passes it on to the stream for another
	// process (during a rolling deploy, one that runs the newer code).
	// Default 5 s.
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
