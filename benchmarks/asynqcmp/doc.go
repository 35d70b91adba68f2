// Package asynqcmp compares a JetStream channel with asynq (Redis) side by
// side: how soon a high-priority task starts behind a low-priority backlog
// that lives in the queue (not in the process), and how fast a backlog
// drains. It is a module of its own so that the benchmarks module does not
// depend on asynq and Redis.
//
// The asynq side starts redis-server from the machine (Debian:
// apt-get install redis-server) on a loopback port; the benchmarks skip it,
// saying so, where none is installed. The smartpool side likewise runs
// nats-server as a process of its own on a loopback port: the version
// this module requires, built once per test binary with go build from the
// module cache (or the binary SMARTPOOL_NATS_SERVER names); it is skipped,
// saying why, where none can be built. smartpool-jetstream-embedded runs
// the same server inside the benchmark's process (jetstream.Embedded).
//
//	cd benchmarks/asynqcmp && go test -run x -bench PriorityStart -benchtime 300x
//	cd benchmarks/asynqcmp && go test -run x -bench Drain -benchtime 3x
//
// # Results
//
// Three rounds on a 2-core VM shared with other jobs, one test binary
// (go test -c), each benchmark run on its own (-test.bench
// 'PriorityStart/<system>$' -test.benchtime 300x, then
// 'Drain/<system>$' -test.benchtime 3x), smartpool first in rounds 1 and
// 3 and asynq first in round 2, with SMARTPOOL_NATS_SERVER set to
// nats-server v2.15.2 built as above; load average (uptime) at each
// round's start:
//
//	round  load  system                 high p50   high p90   high p99   drain
//	1      0.46  smartpool, process     468 µs     853 µs     1.40 ms    10,777 tasks/s
//	1            smartpool, embedded    389 µs     595 µs     1.98 ms    13,245 tasks/s
//	1            asynq                  242 µs     402 µs     0.60 ms     5,112 tasks/s
//	2      0.59  asynq                  290 µs     499 µs     0.97 ms     3,995 tasks/s
//	2            smartpool, embedded    375 µs     690 µs     4.17 ms    12,251 tasks/s
//	2            smartpool, process     482 µs     839 µs     1.23 ms     8,491 tasks/s
//	3      0.83  smartpool, process     411 µs     695 µs     1.55 ms     8,411 tasks/s
//	3            smartpool, embedded    313 µs     589 µs     2.66 ms    12,474 tasks/s
//	3            asynq                  281 µs     467 µs     0.62 ms     4,849 tasks/s
//
// Against a server of its own, as asynq has Redis, smartpool drains 1.7
// to 2.1 times as fast as asynq round by round, but starts a
// high-priority task later: median 411 to 482 µs against 242 to 290 µs,
// p99 1.2 to 1.6 ms against 0.6 to 1.0 ms. The embedded server has the
// better median (313 to 389 µs) and throughput (2.6 to 3.1 times
// asynq's) and the worse tail (p99 2.0 to 4.2 ms; 7 to 11.5 ms in earlier
// rounds at load average 3). Two figures a run apart differ by up to a
// factor two on this machine.
//
// Where the time goes, from the jetstream module's BenchmarkUrgentTrace
// (the same workload; SMARTPOOL_NATS_SERVER as above; four runs of 300
// each, ranges of the medians, then of the 99th percentiles):
//
//	                                embedded                      process
//	publish call → stored           74–180 µs, p99 2.0–4.0 ms     185–364 µs, p99 0.72–1.5 ms
//	stored → fetch returns it       49–79 µs, p99 0.29–1.2 ms     167–225 µs, p99 0.84–1.4 ms
//	fetched → in the local queue    0 µs, p99 1–3 µs              0–1 µs, p99 1–6 µs
//	local queue → handler starts    26–38 µs, p99 0.21–0.55 ms    59–86 µs, p99 0.45–0.54 ms
//	publish call → handler starts   193–313 µs, p99 2.1–4.5 ms    488–709 µs, p99 1.8–2.8 ms
//
// Embedded, the tail is the server storing the publish, and the cause is
// the Go scheduler the server shares with everything else in the
// process. A runtime trace of one run of PriorityStart (go test -trace;
// p99 4.4 ms) shows the process's two Ps busy 66% of the 186 ms measured,
// and for 40% of it a goroutine ready to run waiting while both were
// busy. The Ps' time went 52% to the server's goroutines, 23% to the
// client's and the benchmark's, 15% to the pool's workers and 10% to the
// garbage collector (three collections in those 186 ms; 25% of the Ps'
// time during the waits over 0.5 ms). The server's goroutines (the
// stream's and the consumers' loops, the connection's writer) waited to
// run 76 to 230 µs at their 99th percentile and up to 1.0 to 4.5 ms; the
// p99 of 300 samples is their fourth slowest, so a few such waits make
// it. The server waits mostly behind itself, the client and the
// collector, not behind the workers (a backlog task spins 20 µs, then
// waits for its successor's publish to be acknowledged). As a process of its own the server keeps
// the tail of its store under 1.5 ms: its two Ps were busy 19% of a
// traced second and the benchmark's 31%, and the longest wait to run was
// 1.3 ms in the server, 2.3 ms in the benchmark's process. But every step
// then crosses loopback TCP between two processes, which raises the
// median (the last row).
//
// What is left of the tail is spread over the path rather than in one
// place. A message passes from the client's writer to the server's
// reader, the stream's loop, the consumer's loops and the server's
// writer, then to the client's reader, the subscription's dispatcher, the
// channel's fetcher and a worker; each of these hand-offs waited to run
// 40 to 290 µs at its 99th percentile in the traces, where asynq's task
// is an enqueue and a dequeue, each one round trip to single-threaded
// Redis. Then the task waits for a worker to finish the backlog task it
// is running, which here includes a publish and its acknowledgement (the
// fourth row). The lever left on smartpool's side is the client's share
// of that path: handing a fetched message from the subscription's
// callback straight to the local queue would remove a hand-off (not
// tried); the server's hand-offs are nats-server's. Publishing over a
// NATS connection of its own (as asynq's Client has Redis connections
// apart from its Server's) did not help in earlier runs: over loopback
// TCP the embedded median rose to 320 to 370 µs, the p99 stayed 2.7 to
// 8 ms.
//
// A lever tried and not kept: a publish from inside a task gives its
// worker up while the server answers (smartpool.Yield around the
// acknowledgement's wait), so that a low task's publish of its successor
// would not hold a worker the high task needs. Three alternating rounds of
// PriorityStart/smartpool-jetstream (300 each, nats-server v2.15.2 as a
// process, load average 0.5–0.7): p50 695 / 666 / 563 µs without it,
// 1193 / 611 / 722 µs with it; p99 1.97 / 2.17 / 1.87 ms against 5.96 /
// 1.82 / 3.00 ms (asynq in the same minutes: p50 251 µs). The freed workers
// run more low tasks at once, whose publishes load the server that stores
// the high task's. With the low channel also capped at two tasks in flight
// (MaxInFlight, its re-entries through a FIFO of their own between the
// levels), so that a yield adds no low task, three more alternating
// rounds (load average 0.3–0.6) gave p50 524 / 420 / 448 µs against
// 523 / 833 / 555 µs without either change, p99 1.49 / 1.32 / 1.38 ms
// against 1.50 / 2.61 / 1.60 ms; asynq 237 / 288 / 276 µs, p99 0.60 /
// 0.74 / 0.84 ms. Still about 1.6 to 1.9 times asynq's median: the steps
// that set it are the server's (the table above), not the workers'.
//
// River (Postgres) is not compared: it needs a PostgreSQL server set up
// in the benchmark (initdb and a running cluster, as a non-root user, and
// River's migrations), more than starting redis-server is.
package asynqcmp
