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
// FIFO, Deadline, Priority, Multi and Keyed are unbounded; Bounded has a
// capacity.
//
// Every submit method takes the pool's submit options, as Pool.Submit does:
// smartpool.WithContext makes it wait (for a unit of the pool's in-flight
// limit, for room in a full Bounded) until its context ends, and cancels the
// task if the context ends while the task is queued; without it no submit
// ever blocks. smartpool.WithDeadline and smartpool.WithPriority order the
// task in a channel that orders by that key (a Multi of Deadline or Priority
// shards); the others refuse them with an error wrapping
// smartpool.ErrOption, as they do an option that repeats their own argument
// (a Deadline's deadline).
//
// A channel's methods are all for its users: its constructor, its submit
// methods, Len and its own inspection methods (Stats, Shards, ...). The
// side the pool talks to is the channel's source.Source, which each
// channel keeps out of sight. Make every channel with its constructor
// (NewFIFO, ...): smartpool.New refuses a zero value.
package channels
