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
package asynqcmp
