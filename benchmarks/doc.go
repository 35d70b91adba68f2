// Package benchmarks runs smartpool side by side with the Go pools users
// pick today (plain goroutines, hand-written channel pools, ants, pond,
// workerpool, conc, errgroup) through one small adapter per pool, on the
// suite's workloads, and renders the results as Markdown tables and a
// chart. It is a module of its own so that the peers never become
// dependencies of smartpool. The cmd/bench program drives it; the go test
// benchmarks compare spawn-spam per pool for benchstat.
package benchmarks
