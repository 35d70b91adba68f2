// Package channels holds the task sources a smartpool behavior is built from:
// FIFO (submission order), Deadline (earliest deadline first), Priority
// (highest priority first), Multi (one logical channel sharded over several
// queues to cut lock contention), Bounded (a FIFO with a capacity and
// backpressure) and Keyed (a FIFO with a limit on the tasks of each group in
// progress at once, such as requests per host).
//
// Every channel is safe for concurrent use, may be used on its own before it
// is attached to a pool (tasks queue up and run once the pool starts), and
// belongs to at most one pool. FIFO, Deadline, Priority, Multi and Keyed are
// unbounded and their submit methods never block; Bounded's Submit waits for
// room. After the pool's Close starts every submit returns
// smartpool.ErrClosed.
package channels
