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
// jetstream-bare and jetstream-bare-embedded are the floors under the
// JetStream side: the same server (a process of its own, or inside the
// benchmark's process with an in-process connection, as
// jetstream.Embedded makes) and the same streams, read with nats.go's own
// Consume and no pool. The high handler runs in its subscription's
// callback the moment the message arrives: it never waits for a worker.
//
// # Results
//
// Six rounds on a 2-core VM shared with other jobs, one test binary
// (go test -c), each benchmark run on its own (-test.bench
// 'PriorityStart/<system>$' -test.benchtime 300x), the order rotated
// from round to round, with SMARTPOOL_NATS_SERVER set to nats-server
// v2.15.2 built as above; load average (uptime) at each round's start,
// which includes the previous benchmark's. High-priority start, p50 /
// p90 / p99 in µs:
//
//	     server a process of its own              server embedded
//	load smartpool         bare               smartpool          bare               asynq
//	0.66 581 / 988 / 1741  365 / 741 / 1357   387 / 673 / 4215   247 / 402 / 1098   305 / 569 / 961
//	0.56 686 / 1374 / 2625 304 / 627 / 1001   296 / 571 / 4080   210 / 406 / 2304   323 / 584 / 716
//	1.01 577 / 1039 / 1922 324 / 605 / 1000   381 / 672 / 4239   182 / 355 / 1122   232 / 402 / 840
//	1.07 570 / 1074 / 2393 369 / 733 / 1334   420 / 683 / 3157   260 / 540 / 3976   262 / 486 / 701
//	0.90 541 / 1072 / 1794 370 / 759 / 1423   478 / 784 / 2451   161 / 309 / 970    282 / 513 / 768
//	0.76 758 / 1200 / 2321 419 / 798 / 1491   405 / 639 / 2550   214 / 529 / 4076   313 / 536 / 1012
//
// Drain, three rounds the same way (-test.benchtime 3x), tasks/s:
//
//	load smartpool  bare    smartpool, embedded  bare, embedded  asynq
//	0.65 6,647      16,441  10,884               17,076          2,467
//	0.79 7,312      13,051   8,769               16,412          4,642
//	0.76 7,264      15,212   9,500               17,350          2,930
//
// Against a server of its own, JetStream alone delivers a high-priority
// message later than asynq starts its task: the bare floor's median is
// 0.94 to 1.41 times asynq's, above it in five rounds of six (and in
// five of six in an earlier set of rounds), so no pool reading
// JetStream that way can match asynq's median on this machine. Embedded,
// the floor is 0.57 to 0.99 times asynq's median in every round, and
// smartpool 0.92 to 1.70 times: the pool adds 86 to 317 µs to the
// floor's median (171 to 382 µs over a server process). Split by
// BenchmarkUrgentTrace in the jetstream module and, for the floors, by a
// probe in the callback (three runs each in the same hour, then
// removed), medians:
//
//	                       embedded                  process
//	                       smartpool   floor         smartpool   floor
//	publish call → stored  146–256     130–245       277–290     174–207
//	stored → fetched       64–97       60–78         213–253     149–153
//	local queue → start    35–56       —             75–96       —
//
// The wait for a worker (the floor has none) is the largest step of the
// pool's own: the worker is most often busy with a low task, one that
// here includes its successor's publish and acknowledgement. It is not
// the whole share: with each low task publishing its successor from a
// goroutine of its own instead (a variant run for this measurement, four
// rounds, then removed), smartpool embedded still took 401 to 488 µs at
// the median against the floor's 271 to 347 µs (asynq 289 to 574 µs,
// the server now loaded with more publishes at once).
//
// Timing the high task's publish call apart (a variant of the harness,
// twelve runs of each embedded system, then removed) splits the pool's
// share in two. The publish returns later in the pool's process than in
// the floor's: median 183 to 432 µs (median of the runs 300) against 80
// to 304 µs (236). The handler then starts 45 to 91 µs after the
// publish returned (median 71) against 2 to 30 µs. Ruled out for the
// first part: the message ID and the handler's header (the floor
// publishing with both, four runs: 175 to 242 µs), and the channel's
// pull requests: it fetches the room left, so it sends one request per
// 1.1 to 1.3 messages, and fetching only once half the window is free
// (1.7 to 1.8 messages a request, four alternating runs) moved neither
// figure beyond the noise. For the second part, a worker kept for the
// high channel (GOMAXPROCS+1 workers, the low channel at MaxRunning
// GOMAXPROCS) brought the start after the publish to 26 to 40 µs, but
// the median of sixteen rotated rounds only from 317 to 302 µs (asynq
// 240, the floor 209): not kept.
//
// The workers' own yielding was one part of the share. A runtime trace of
// 1,000 samples (go test -trace, then go tool trace -pprof=sched) put 19%
// of the embedded pool's scheduling delay on runtime.Gosched in the
// worker's loop: a worker that found nothing gave its processor away
// once and looked again before it parked, and meanwhile it queued with
// the server's goroutines. The loop now parks at once. Twelve alternating
// runs without that Gosched against with it gave a median p50 of 310
// against 351 µs (-11.7%, p=0.025) and p99 3.1 against 4.2 ms (-27%,
// p=0.039); twelve more, of the change as committed, 303 against 343 µs
// and 2.4 against 4.0 ms, within that set's noise (p=0.29 and 0.41). The
// main suite's spawn-spam (twelve alternating runs: 283 against 297 ns,
// p=1.0), cpu-light, blocking-io and urgent start (ten) did not move
// beyond their noise.
//
// With the workers parking at once, three sets of rotated rounds in one
// evening (load average 0.1 to 0.5), the median of the rounds' p50 in µs:
//
//	rounds  smartpool embedded  asynq  floor embedded  the variant in the set
//	6       265                 250    159             floor, low read by Fetch(1): 135
//	8       320                 212    179             no CPU sharing in the workers: 327
//	8       351                 277    299             a worker kept for the high channel: 369
//
// The pool came within 6% of asynq's median in the first set and 27% and
// 51% above it in the others. Neither variant helped: a worker that never
// gives its processor away after long tasks, nor, now that idle workers
// park at once, a worker kept for the high channel. Reading the floor's
// low queue with one-shot Fetch(1) calls, as the pool's channel reads
// (a new subscription per pull), did not slow the floor's high start;
// but that floor also read no low message ahead, so it ran fewer of
// them, and the next measurement points the other way.
//
// The next lever is how the channel reads. It pulls with one-shot Fetch
// calls, each a new subscription, a pull request and an unsubscribe, so
// that it never holds more than Prefetch messages. A variant that read
// both channels with nats.go's Consume instead (one subscription, pulls
// kept outstanding, each message queued from the callback; built for the
// measurement, then removed: it drops the Prefetch bound, which the
// keep-alive and the hand-back of unstarted messages rely on) started
// the high task sooner in 17 of 18 rotated rounds, in two sets (load
// average 0.1 to 0.9): median p50 292 against 427 µs (asynq 255, the
// floor 248), then 318 against 423 µs (asynq 246, the floor 289).
// Consume on one channel only did not separate from Fetch: 397 against
// 381 µs for the high channel, 380 against 370 µs for the low (eight
// rounds each). A reader that keeps its pulls outstanding on one
// subscription, asking for the room left as workers take messages, would
// keep the bound and save the subscriptions.
//
// The pool drains 1.6 to 2.7 times as fast as asynq and about half as
// fast as the floor.
// The drain's limit is Prefetch: a process holds at most Prefetch
// messages it has not started, so it runs about Prefetch of them per
// round trip to the server. With Prefetch 16 instead of the default
// (twice GOMAXPROCS: 4 here) the process drain went from 6,188 to 10,967
// (median 7,460) to 9,247 to 14,019 tasks/s (median 11,864), eight
// alternating runs each; ChannelOptions.Prefetch says when to raise it.
//
// Where the time goes, from the jetstream module's BenchmarkUrgentTrace
// in earlier runs (the same workload; SMARTPOOL_NATS_SERVER as above;
// four runs of 300 each, ranges of the medians, then of the 99th
// percentiles):
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
// fourth row). Handing a fetched message from the subscription's
// callback straight to the local queue would remove the fetcher's
// hand-off, but the split in the Results puts the whole fetch at most
// about 20 µs of median above the floor's callback, embedded; the
// server's hand-offs are nats-server's. Publishing over a
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
// 0.74 / 0.84 ms. Still about 1.6 to 1.9 times asynq's median: over a
// server process, the steps that set it are the server's (the floor in
// the Results is at or above asynq's median). Embedded, the lever left
// is the wait for a worker: a task waiting for its publish's
// acknowledgement could lend its worker to higher levels only, so that a
// high task need not wait for it while no more low tasks start (not
// built: the engine's Yield lends a worker to any level).
//
// River (Postgres) is not compared: it needs a PostgreSQL server set up
// in the benchmark (initdb and a running cluster, as a non-root user, and
// River's migrations), more than starting redis-server is.
package asynqcmp
