// Package channels holds the task sources a smartpool behavior is built from:
// FIFO (submission order), Deadline (earliest deadline first), Priority
// (highest priority first) and Multi (one logical channel sharded over
// several queues to cut lock contention).
//
// Every channel is safe for concurrent use, may be used on its own before it
// is attached to a pool (tasks queue up and run once the pool starts), and
// belongs to at most one pool. Submit methods never block: channels are
// unbounded. After the pool's Close starts they return smartpool.ErrClosed.
package channels
