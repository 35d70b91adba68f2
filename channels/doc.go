// Package channels holds the task sources a smartpool behavior is built from:
// FIFO (submission order), Deadline (earliest deadline first), Priority
// (highest priority first), Multi (one logical channel sharded over several
// queues to cut lock contention) and Bounded (a FIFO with a capacity and
// backpressure).
//
// Every channel is safe for concurrent use, may be used on its own before it
// is attached to a pool (tasks queue up and run once the pool starts), and
// belongs to at most one pool. FIFO, Deadline, Priority and Multi are
// unbounded and their submit methods never block; Bounded's Submit waits for
// room. After the pool's Close starts every submit returns
// smartpool.ErrClosed.
package channels
