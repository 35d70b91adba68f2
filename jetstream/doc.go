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
// # Clusters
//
// Run three (or five) nats-server nodes with JetStream and give every
// process the same Options.Replicas (3) and DuplicateWindow: a channel's
// streams (SMARTPOOL_<channel>, SMARTPOOL_PASS_<channel>,
// SMARTPOOL_DLQ_<channel>) are created by whichever process opens the
// channel first and shared by all. A process whose Options disagree with
// the streams is refused with ErrStreamConflict (naming both values)
// rather than changing them for everyone; to change the replicas, edit the
// three streams (nats stream edit --replicas) and then deploy the new
// Options. Likewise every process must use the same ChannelOptions.AckWait
// (ErrConsumerConflict). Several processes may open a channel at once on a
// fresh cluster: each request left unanswered is tried again until the
// caller's context ends (one minute under a context without a deadline).
//
// What a failover costs, measured with three in-process nodes, Replicas 3,
// AckWait 30 s and 600 tasks (TestClusterOpenAtOnceAndFailover): stopping
// the stream's leader pauses publishes and fetches for about 2 s (one
// unanswered attempt, then a retry with the same message ID, which stores
// the message once); the client logs the election at Warn, the pause of
// fetches and publishes at Warn and their return at Info, and counts them
// in ConnStats.LeaderElections and FetchOutages. Nothing acknowledged to a
// publisher is lost. The old leader may have delivered messages that died
// in flight with its connections: the new leader counts them as delivered,
// and without help they would run only when AckWait expires (30 s after
// the fault, in the runs that lost some). So a process that sees the
// consumer elect a leader, or its connection or fetches come back, checks
// for them: every process keeps what it holds alive, and the server is
// asked to deliver again, within 3 s (AckWait if shorter), every pending
// message that nobody keeps alive (Stats.FailoverChecks, FailoverNaks).
// Measured, with the stopped node leading both the stream and its
// consumer: every task started within 3.6 to 6.1 s of its publish, lost 0,
// in runs where the failover cut 5 to 10 deliveries off (30 s before).
// An acknowledgement the old leader took but had not replicated, or one
// sent while no leader existed, makes its task run twice; with
// ConfirmAcks it goes unanswered and is sent again until confirmed
// (Stats.AckRetries), so the task runs once.
//
// So AckWait is the longest a task waits after its process died (not
// after a failover): 30 s suits most fleets, 5 to 10 s if a dead process's
// tasks must move sooner. The cost of a short AckWait is one keep-alive
// per held message every AckWait/3 (a few small messages a second per
// process), and duplicates when a process is cut off from every node for
// longer than AckWait (its running tasks are delivered to others
// meanwhile). Choose ConfirmAcks when a duplicate run costs more than a
// round trip per task.
//
// # Server versions
//
// The oldest nats-server the channel supports is 2.9.0 (the JetStream API
// the client uses); Connect and Embedded refuse an older one with
// ErrServerTooOld. On servers older than 2.10.4, which ignore a
// termination that carries a reason, a dead letter is terminated without
// one (the reason is in the dead-letter stream either way). Tested with
// 2.9.10 (Debian 12's package) and 2.15.2 (the embedded server).
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
// credentials, nkeys); the rest of the code is the same. An embedded
// server's goroutines share the process's Go scheduler (its GOMAXPROCS
// Ps) with the pool and the client: behind a busy backlog on 2 cores
// (benchmarks/asynqcmp) a high-priority task's start had a p99 of 2.5 to
// 4.2 ms embedded against 1.7 to 2.6 ms with nats-server as a process of
// its own, for a lower median (296 to 478 µs against 541 to 758 µs).
// Where that tail matters, run nats-server as its own process and Connect.
package jetstream
