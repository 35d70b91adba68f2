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
	// Default 30 s. Shared by every process consuming the channel.
	AckWait time.Duration
	// MaxDeliver is how many times a message is attempted before it is
	// dead-lettered. Default 5.
	MaxDeliver int
	// Backoff returns the delay before attempt number attempt+1, after
	// attempt failed (attempt counts from 1). Default: 1 s doubled per
	// attempt, at most 1 minute.
	Backoff func(attempt int) time.Duration
	// OnDeadLetter, if set, receives every message the channel gives up
	// on: unknown handler, Permanent error, or MaxDeliver attempts. The
	// message is terminated on the server either way. It runs on a worker
	// (or on the fetching goroutine for a message delivered more than
	// MaxDeliver times); keep it short.
	OnDeadLetter func(DeadLetter)
}

// DeadLetter is a message the channel gave up on.
type DeadLetter struct {
	Channel    string
	Handler    string
	Payload    []byte
	Deliveries uint64 // times the server delivered it
	Err        error  // why: the handler's last error, ErrUnknownHandler, ErrTooManyDeliveries or ErrHandlerAborted (a panic)
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
	return o
}

func defaultBackoff(attempt int) time.Duration {
	d := time.Second
	for i := 1; i < attempt && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}
