// Package channels holds the task sources a smartpool behavior is built from:
// FIFO (submission order), Deadline (earliest deadline first), Priority
// (highest priority first), Multi (one logical channel sharded over several
// queues to cut lock contention), Bounded (a FIFO with a capacity and
// backpressure) and Keyed (a FIFO with a limit on the tasks of each group in
// progress at once, such as requests per host).
//
// Every channel is safe for concurrent use and belongs to at most one pool.
// It takes tasks only while a running pool serves it: before smartpool.New
// attached it (a channel left out of the configuration's levels never is),
// after a New that failed, and once the pool's Close started, every submit
// returns smartpool.ErrClosed, so no task is taken that would never run.
// FIFO, Deadline, Priority, Multi and Keyed are unbounded and their submit
// methods never block; Bounded's Submit waits for room.
//
// Users call a channel's submit methods, Len and its own inspection methods
// (Stats, Shards, ...). Queues, Attach, Push, Requeue, Poll and Close belong
// to the smartpool.Channel interface and are called by the pool; a user's
// Close while the pool runs does nothing.
package channels
