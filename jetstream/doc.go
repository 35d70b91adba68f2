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
// handler returns nil; an error or a panic asks for redelivery after a
// backoff; after ChannelOptions.MaxDeliver attempts, or for a handler name
// no one registered, the message is terminated and passed to the
// dead-letter callback, never redelivered forever. A process that dies
// mid-task never acknowledges it, so the server delivers it again after
// AckWait: a handler can run twice for one message (the duplicate-run
// window is from the start of a run that will not be acknowledged until
// AckWait after the last sign of life the process gave). Handlers must be
// idempotent. Order holds only within one channel and only with a single
// consuming process and one worker.
//
// # Setup
//
// Embedded starts an in-process NATS server with JetStream file storage in a
// directory: one binary, durable across restarts, no setup. Connect takes the
// URL of an existing NATS cluster instead; the rest of the code is the same.
package jetstream
