// Package jetstream is a smartpool channel whose queue lives in NATS
// JetStream, so that several processes share one durable queue and a task
// survives the process that fetched it.
//
// A closure cannot cross machines, so a task here is data: the name of a
// handler registered in a Registry plus a byte payload. Producers call
// Client.Publish, which returns once the stream has stored the message.
// Consumers build a Channel with Client.Channel and place it in a pool's
// behavior like any other channel: levels, schedulers and close policies
// work unchanged, next to local channels.
//
// # Guarantees
//
// Delivery is at least once. A handler's message is acknowledged after the
// handler returns nil; an error, a panic or a run past its timeout asks for
// redelivery after a backoff; after ChannelOptions.MaxDeliver attempts or a
// Permanent error the message is moved to the channel's dead-letter stream
// (Client.DeadLetters, Client.Replay), never redelivered forever. A process
// that lacks a message's handler (a rolling deploy) passes it on to the
// others; only a message no process ran within UnknownMaxAge is
// dead-lettered for it. A process that dies mid-task never acknowledges
// it, so the server delivers it again after AckWait: a handler can run
// twice for one message. Handlers must be idempotent. Order holds only
// within one channel and only with a single consuming process and one
// worker.
//
// Publish tries again across a lost connection with one message ID until
// its context ends: nil means stored once; an error wrapping
// ErrNotConfirmed means maybe stored (publish again with its MsgID); any
// other error means not stored.
//
// # Operating
//
// Channel.Stats counts what a channel did with its messages (acked,
// retried, timed out, dead-lettered, passed on, handed back) and carries
// the connection's state (Client.ConnStats). NewCollector exports both,
// and each channel's count of kept dead letters, as Prometheus metrics,
// next to the pool's own collector.
//
// # Dependencies
//
// The package imports github.com/prometheus/client_golang for
// NewCollector, whether or not a program calls it. Upgrading from a
// version without it: run go get github.com/smartpool-go/smartpool/jetstream@version
// (which records the new modules' checksums), or go mod tidy after editing
// go.mod by hand; a build without them fails with "missing go.sum entry".
//
// # Setup
//
// Embedded starts an in-process NATS server with JetStream file storage in a
// directory: one binary, durable across restarts, no setup. Connect takes the
// URL of an existing NATS cluster instead (and any nats.Option: TLS,
// credentials, nkeys); the rest of the code is the same.
package jetstream
