// Package asynqcmp compares a JetStream channel with asynq (Redis) side by
// side: how soon a high-priority task starts behind a low-priority backlog
// that lives in the queue (not in the process), and how fast a backlog
// drains. It is a module of its own so that the benchmarks module does not
// depend on asynq and Redis.
//
// The asynq side starts redis-server from the machine (Debian:
// apt-get install redis-server) on a loopback port; the benchmarks skip it,
// saying so, where none is installed.
//
//	cd benchmarks/asynqcmp && go test -run x -bench PriorityStart -benchtime 300x
//	cd benchmarks/asynqcmp && go test -run x -bench Drain -benchtime 3x
//
// # Results
//
// Three rounds on a 2-core VM shared with other jobs (load average 2.9 to
// 3.3 at the rounds' starts), one test binary, each benchmark run on its
// own, smartpool first in rounds 1 and 3 and asynq first in round 2;
// PriorityStart with -benchtime 300x, Drain with -benchtime 3x:
//
//	round  system     high p50   high p90   high p99   drain
//	1      smartpool  189 µs     519 µs     7.5 ms     11,990 tasks/s
//	1      asynq      187 µs     307 µs     0.65 ms     3,982 tasks/s
//	2      asynq      307 µs     455 µs     0.80 ms     4,652 tasks/s
//	2      smartpool  191 µs     971 µs     11.5 ms    10,668 tasks/s
//	3      smartpool  144 µs     474 µs     7.1 ms     12,456 tasks/s
//	3      asynq      402 µs     637 µs     1.06 ms     3,145 tasks/s
//
// The median start of a high-priority task is asynq's or better (within
// 2 µs in round 1), at 2.3 to 4 times asynq's throughput; the tail is
// worse: p99 7 to 11.5 ms against asynq's 0.65 to 1.06 ms. Where the time
// goes, from the jetstream module's BenchmarkUrgentTrace (the same
// workload; medians, then p99, of two runs of 300):
//
//	publish call → stored by the server     224 / 210 µs   p99 1.0 / 5.7 ms
//	stored → fetch returns it                77 /  86 µs   p99 0.3 / 1.2 ms
//	fetched → in the local queue              0 /   1 µs   p99 1 / 3 µs
//	local queue → handler starts             40 /  50 µs   p99 0.35 / 0.45 ms
//	publish call → handler starts           350 / 372 µs   p99 1.3 / 7.5 ms
//
// Half of the median and most of the tail is the server storing the
// publish while the low backlog's own publishes and acknowledgements keep
// it and both cores busy; the fetch (a pull request waiting at the
// server) and the local queue add little. Publishing over a NATS
// connection of its own (as asynq's Client has Redis connections apart
// from its Server's) did not help: over loopback TCP the median rose to
// 320 to 370 µs, the p99 stayed 2.7 to 8 ms. Two figures a run apart
// differ by up to a factor two on this machine.
//
// River (Postgres) is not compared: it needs a PostgreSQL server set up
// in the benchmark (initdb and a running cluster, as a non-root user, and
// River's migrations), more than starting redis-server is.
package asynqcmp
