package smartpool

import (
	"log/slog"
	"time"

	"github.com/smartpool-go/smartpool/scheduler"
)

// PoolBehavior declares a pool: its channels, grouped into levels, and where a
// task that yielded re-enters. K is the user's own key type, usually a small
// integer enum. A pool that needs nothing but its channels, levels, close
// policy and followups can use the ready-made Levels instead.
//
// New calls Config once, then Channel once for every key the configuration
// lists, then Followup once for every key; it never calls them again, so
// later changes to what they return have no effect on a running pool.
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
	// Schedule chooses the level a free worker serves. nil means
	// scheduler.HighestFirst(). A Scheduler value serves one pool.
	Schedule scheduler.Scheduler
	// Levels lists the channels, level by level, highest level first. At
	// least one level; every level at least one channel; every key once.
	Levels [][]ChannelParams[K]
	// Limit, if positive, caps the work units admitted and not finished,
	// pool-wide: tasks queued, running and yielded (see SubmitContext,
	// Handoff). Submit returns ErrFull at the limit, SubmitContext waits.
	// Pool.SetLimit changes it at run time. Zero means no limit, and then
	// SetLimit is refused.
	Limit int
	// PanicHandler receives every panic a task raises, with the key of the
	// channel the task came from, on the worker that recovered it; the
	// worker then carries on. nil means: log it with log/slog at error level.
	// A panic in the handler itself is recovered and logged.
	PanicHandler func(key K, p *PanicError)
	// Logger receives the pool's log lines: start and close at Info, dropped
	// tasks per channel at Warn, panics at Error; never a line per task. nil
	// means slog.Default().
	Logger *slog.Logger
	// TimingEvery sets how many tasks share one timing sample for the queue
	// wait and run time histograms of Stats: about one task in n is timed.
	// 0 means DefaultTimingEvery; 1 times every task (three clock reads and
	// a 32-byte stamp per task: see BENCHMARKS.md); negative turns timing
	// off.
	TimingEvery int
	// IdleTimeout is how long a worker's goroutine waits for work before it
	// ends; the worker gets a new goroutine when work needs it again.
	// Workers are also created only when work needs them, up to Workers, so
	// a big Workers costs nothing until it is used and the goroutines (and
	// their stacks) of a burst go away after it. 0 means
	// DefaultIdleTimeout; negative keeps waiting goroutines until Close.
	IdleTimeout time.Duration
	// StallAfter is how long the pool may go with work queued, every
	// worker busy and no task ending before its watchdog calls it stalled
	// (a task blocked outside the pool, say on a plain channel, keeps its
	// worker): it then logs once at Warn, with the stacks of the goroutines
	// running its tasks, counts the stall in Stats.Stalls, and logs at Info
	// when the pool moves on. Tasks that each run longer than StallAfter
	// while work waits look the same: raise it for them. The watchdog is one
	// timer per pool, checking four times per StallAfter; tasks pay nothing
	// for it. 0 means DefaultStallAfter; negative turns it off. In tests
	// that run a pool in a testing/synctest bubble, turn it off: its
	// pending timer keeps fake time moving, so a deadlock would spin until
	// the test's timeout instead of failing at once.
	StallAfter time.Duration
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
	// OnDrop, if set, is called exactly once for every task of this channel
	// that is dropped, whatever dropped it: Close, for tasks still queued
	// (or polled by a worker but not started; a task handed to an idle
	// worker by its submit's wake-up has started); Close, for a yielded
	// task of a channel that does not complete on close, when its wait
	// returns; the channel itself, through Bits.Discard (channels.DropLate's
	// late tasks, channels.DropOldest's displaced ones, which the channel's
	// own callback receives too). It runs outside every pool lock, after the task was
	// counted in ChannelStats.Dropped and its Future or Group resolved with
	// ErrDropped (a yielded task's resolves in its deferred calls, right
	// after), so that resources the task held can be released. It receives
	// the task as submitted (a func arrives as a Func). It may call Submit.
	// A panic in it is recovered and sent to the panic handler.
	OnDrop func(t Task)
	// MaxRunning, if positive, caps how many of this channel's tasks run at
	// once (a yielded task does not count while it waits; it counts on the
	// channel it re-enters through while it runs again): a CPU-side cap. A
	// channel at its cap is simply not eligible, so it costs the picker
	// nothing; other channels keep the workers busy. Pool.SetCap changes it
	// at run time. Zero means no cap, and then SetCap is refused.
	MaxRunning int
	// MaxInFlight, if positive, caps how many of this channel's tasks are in
	// progress at once, running or yielded: a resource-side cap (requests
	// per host, connections) that a task keeps while it waits. Such a
	// channel may not be any channel's followup (including its own), so
	// that re-entering tasks never queue behind the cap they hold. At most
	// one of MaxRunning and MaxInFlight may be set.
	MaxInFlight int
}

// MaxWorkers is the largest Workers value New accepts.
const MaxWorkers = 1 << 16
