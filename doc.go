// Package smartpool is a worker pool with priorities: tasks arrive through
// named channels grouped into levels, highest first, and a pluggable
// scheduler decides which level a free worker serves.
//
// The smallest pool is four lines:
//
//	jobs := channels.NewFIFO()
//	owned, err := smartpool.New(smartpool.Levels[string]{{{Key: "jobs", Channel: jobs, CompleteOnClose: true}}})
//	err = jobs.Submit(func(ctx context.Context) { work() })
//	report, err := owned.Close(ctx) // runs what jobs still holds, then reports
//
// It grows a line at a time: more levels and channels in Levels, each with
// its close policy, followup, cap and OnEnd callback, and the pool-wide
// settings (workers, limit, panic handler, logger) through Levels.With. A
// behavior with code of its own declares a PoolBehavior type instead.
//
// # What to use for what
//
// Submit a task:
//   - a channel's own Submit (FIFO.Submit, Deadline.Submit(due, fn), ...
//     in the channels package), or Pool.Submit(key, fn) and
//     Pool.SubmitTask by key;
//   - options, the same on every submit: WithContext (wait for room,
//     cancel while queued), WithDeadline, WithPriority; an option the
//     channel cannot honour is an error wrapping ErrOption;
//   - Go(pool, key, fn) for a result (a Future); NewFuture for a channel's
//     SubmitTask;
//   - Pool.After, At and Every for later and periodic tasks; Handoff for a
//     continuation that keeps its chain's unit of the limit.
//
// Wait inside a task without holding a worker: Yield, Sleep, Recv,
// Future.Wait, Group.Wait. The task re-enters through its channel's
// followup (PoolBehavior.Followup, LevelChannel.Followup).
//
// Group tasks: NewGroup or Scope, Group.Go, SetLimit, Wait, CollectErrors,
// as golang.org/x/sync/errgroup's Group (see Group for the differences);
// NewResults for a group whose Wait returns every task's value, in order.
//
// Schedule: Config.Schedule (scheduler.HighestFirst, RoundRobin, Weighted,
// or a scheduler.Scheduler of your own); the order within a channel is the
// channel's (FIFO, Deadline, Priority, Keyed, Bounded, Multi).
//
// Limit: Config.Workers and Pool.SetWorkers (tasks running at once);
// Config.Limit and Pool.SetLimit (tasks admitted and not finished);
// ChannelParams.MaxRunning or MaxInFlight and Pool.SetCap (per channel);
// ChannelParams.Rate and Pool.SetRate (starts per second, per channel);
// channels.Bounded (a queue with room for n); channels.Keyed (a limit per
// host or tenant).
//
// Observe: Pool.Stats (counts, queue wait and run time histograms, stalls),
// ChannelParams.OnEnd (every task's Outcome, once), Config.Logger (log/slog),
// Pool.Publish (expvar), Config.Observe (a TaskObserver per task: tracing);
// the statuspage and prometheus packages, and the otel module.
//
// Shut down: OwnedPool.Close (see Closing below) and OwnedPool.Done.
//
// Write a channel of your own: see package source, the contract a channel hands the
// pool; users of a channel never see it.
//
// # Waiting without a worker
//
// A task that waits calls Yield (or Sleep, Recv, Future.Wait, Group.Wait,
// which are built on it): its worker goes back to the pool while it waits,
// and it re-enters through its followup channel, so tasks can wait on tasks
// at any pool size without deadlock. What decides is the goroutine, not the
// context: a wait from a task's goroutine yields whatever context it is
// given, context.Background() included.
//
// # Closing and panics
//
// OwnedPool.Close runs what complete-on-close channels hold, drops the rest
// and reports; every task ends once, with an Outcome its channel counts and
// passes to ChannelParams.OnEnd. A task's panic is recovered and goes to
// Config.PanicHandler (and to its Future or Group); the worker carries on.
//
// # How a worker finds work
//
// Every queue has one bit in an atomic availability bitfield and every level
// a summary bit, so a worker chooses a level and decides to sleep with one
// atomic load, and no global lock is taken on submit, pick or run (see
// internal/avail for the availability-bit protocol and internal/engine for the
// sleep/wake protocol without lost wake-ups).
package smartpool
