package smartpool

import (
	"context"
	"log/slog"
	"time"

	"github.com/smartpool-go/smartpool/internal/engine"
	"github.com/smartpool-go/smartpool/scheduler"
)

// PoolBehavior declares a pool: its channels, grouped into levels, and
// where a task that yielded re-enters. K is the user's key type, usually a
// small integer enum; Levels is a ready-made one. New calls Config once,
// then Channel and Followup once per listed key, and never again.
type PoolBehavior[K comparable] interface {
	// Config returns the pool's configuration.
	Config() Config[K]
	// Channel returns the channel for key k.
	Channel(k K) Channel
	// Followup returns the key of the channel through which a task that
	// was taken from channel `from` and then yielded re-enters the pool.
	// Return `from` itself to keep tasks where they came from, or a key of a
	// higher level so that the pool finishes what it started before it
	// takes new work.
	Followup(from K) K
}

// Config is what a PoolBehavior declares. Zero fields mean the documented
// defaults. New copies what it needs; the value may be reused.
type Config[K comparable] struct {
	// Workers is the number of worker goroutines, the most tasks that run
	// at once. 0 means runtime.GOMAXPROCS(0). At most MaxWorkers.
	Workers int
	// Schedule chooses the level a free worker serves; nil means
	// scheduler.HighestFirst(). A Scheduler value serves one pool.
	Schedule scheduler.Scheduler
	// Levels lists the channels, level by level, highest level first. At
	// least one level; every level at least one channel; every key once.
	Levels [][]ChannelParams[K]
	// Limit, if positive, caps the work units admitted and not finished,
	// pool-wide: tasks queued, running and yielded. A submit returns ErrFull
	// at the limit, or waits given WithContext; Pool.SetLimit changes it.
	// Zero means no limit (and SetLimit is refused).
	Limit int
	// PanicHandler receives every panic a task raises, exactly once, with
	// its channel's key, on the goroutine that recovered it: also the panics
	// a Future or Group reports as an error, so none goes unseen. nil means:
	// log it at error level. A panic in it is recovered and logged.
	PanicHandler func(key K, p *PanicError)
	// Logger receives the pool's log lines: start and close at Info, dropped
	// tasks per channel at Warn, panics at Error; never a line per task. nil
	// means slog.Default().
	Logger *slog.Logger
	// TimingEvery times about one task in n for the queue wait and run
	// time histograms of Stats. 0 means DefaultTimingEvery; 1 times every
	// task (its cost: BENCHMARKS.md); negative turns timing off.
	TimingEvery int
	// IdleTimeout is how long a worker's goroutine waits for work before it
	// ends; workers are created when work needs them, up to Workers, so a
	// big Workers costs nothing until used. 0 means DefaultIdleTimeout;
	// negative keeps waiting goroutines until Close.
	IdleTimeout time.Duration
	// StallAfter is how long the pool may go with work queued, every
	// worker busy and no task ending (a task blocked outside the pool keeps
	// its worker) before its watchdog calls it stalled: it logs once at
	// Warn, with the stacks of the goroutines running its tasks, counts
	// Stats.Stalls, and logs at Info when the pool moves on. Raise it for
	// tasks that each run longer. One timer per pool; tasks pay nothing.
	// 0 means DefaultStallAfter; negative turns it off (do so in a
	// testing/synctest bubble, where its timer keeps fake time moving).
	StallAfter time.Duration
	// Spare reserves room for channels added at run time (Pool.AddChannel):
	// Spare[l] queues in level l, on top of the listed channels'; levels
	// past Levels start empty. Tables are sized at New, so adding never
	// reallocates what workers read. A non-nil Spare (even all zeros) also
	// lets Pool.RemoveChannel remove any channel, at the cost of a count per
	// task taken and per by-key submit (BENCHMARKS.md, control=spare). nil:
	// the channels are fixed, and the pool pays nothing for reshaping.
	Spare []int
	// Quantum is how many tasks in a row a worker may take from one queue
	// of a level before the level's rotation moves on, where workers poll
	// in batches (the default scheduler, and HighestFirst): 1 keeps a strict
	// rotation, up to MaxQuantum trades that grain for cheaper polls. 0,
	// the default, decides by the tasks' length: MaxQuantum while they
	// average under about 6 µs, 1 once they are longer (examples/tenants).
	Quantum int
	// Observe, if set, is called on the submitting goroutine for every
	// task the pool admits, with the context it was submitted with
	// (WithContext; a Group's context for Group.Go; nil without one), its
	// channel's key and level, and returns the task's TaskObserver, or nil
	// to leave the task unobserved. It is the hook for tracing (the otel
	// module) and for instrumentation of your own; see TaskObserver. nil,
	// the default, costs nothing: a pool without it takes one nil check per
	// submit, end and yield, and allocates nothing more. It may be called
	// from many goroutines at once, under a channel's lock for a channel's
	// own submit, and must not block.
	Observe func(ctx context.Context, key K, level int) TaskObserver
}

// DefaultIdleTimeout is how long an idle worker's goroutine waits for work
// when Config.IdleTimeout is 0.
const DefaultIdleTimeout = 10 * time.Second

// ChannelParams places one channel in a level and sets its close policy.
type ChannelParams[K comparable] struct {
	// Key names the channel; the behavior's Channel method maps it to the
	// channel itself.
	Key K
	// CompleteOnClose makes Close run every task queued in this channel
	// before it returns. Otherwise Close drops the queued tasks and reports
	// them. Tasks already running are never interrupted either way.
	CompleteOnClose bool
	// OnEnd, if set, learns how each task of this channel ended, exactly
	// once, whatever ended it (see Outcome; a yielded task ends on its
	// origin channel). It runs outside every lock, after the end was counted
	// in ChannelStats and the task's Future or Group resolved, so a server
	// can keep its books from it alone. It runs on the worker that ran the
	// task, on the goroutine that cancelled or dropped it, or on the closer;
	// Close waits for it. It receives the task as submitted (a func arrives
	// as a Func); it may submit, and a wait in it gives the worker back, as
	// a task's does. A panic in it goes to the panic handler.
	OnEnd func(t Task, o Outcome)
	// MaxRunning, if positive, caps how many of this channel's tasks run at
	// once (a yielded task counts only while it runs again): a CPU-side cap
	// that costs the picker nothing. Pool.SetCap changes it; 0: no cap.
	MaxRunning int
	// MaxInFlight, if positive, caps this channel's tasks in progress,
	// running or yielded: a resource-side cap (connections per host). Such
	// a channel may be no channel's followup. Set at most one of the two.
	MaxInFlight int
	// Rate, if set, limits how fast this channel's tasks start (see Rate);
	// Pool.SetRate changes it. The zero Rate: no limit.
	Rate Rate
}

// DefaultStallAfter is the stall watchdog's delay when Config.StallAfter is 0.
const DefaultStallAfter = 10 * time.Second

// DefaultTimingEvery is the sampling rate when Config.TimingEvery is 0: one
// task in DefaultTimingEvery is timed.
const DefaultTimingEvery = 64

// MaxWorkers is the largest Config.Workers and SetWorkers argument.
const MaxWorkers = 1 << 16

// MaxQuantum is the largest Config.Quantum: the most tasks a worker takes
// from one queue of a level in a row, and what it takes by default while
// the tasks are short.
const MaxQuantum = 8

// The engine sizes its tables by the same bounds: a constant overflows if
// they differ.
const _ = uint(MaxWorkers-engine.MaxWorkers) + uint(engine.MaxWorkers-MaxWorkers) +
	uint(MaxQuantum-engine.MaxQuantum) + uint(engine.MaxQuantum-MaxQuantum)
