package smartpool

import (
	"log/slog"
	"time"

	"github.com/smartpool-go/smartpool/internal/engine"
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
	// pool-wide: tasks queued, running and yielded (see WithContext,
	// Handoff). A submit returns ErrFull at the limit, or waits for a unit
	// given WithContext.
	// Pool.SetLimit changes it at run time. Zero means no limit, and then
	// SetLimit is refused.
	Limit int
	// PanicHandler receives every panic a task raises, with the key of the
	// channel the task came from, on the worker that recovered it; the
	// worker then carries on (a wait in the handler gives the worker back,
	// as OnEnd's does). nil means: log it with log/slog at error level.
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
	// StallAfter is how long the pool may go with work queued (or a submit
	// waiting for a unit of Limit), every worker busy and no task ending
	// before its watchdog calls it stalled
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
	// Spare reserves room for channels added at run time (Pool.AddChannel):
	// Spare[l] queues in level l, on top of those of the channels Levels
	// lists there. A level may list no channel if it has spare room, and
	// Spare may be longer than Levels: the levels past the listed ones start
	// empty (a reserved lowest level). The bitfield and the pool's tables
	// are sized at New for the listed channels plus this room, so adding a
	// channel never reallocates what workers read. A non-nil Spare (even all
	// zeros) also lets Pool.RemoveChannel remove any channel, listed or
	// added: such a pool counts, per channel, the tasks taken from it and
	// not yet ended (one atomic add when a worker takes a task, one when the
	// task ends), and a by-key submit marks itself in progress (two more):
	// on a 2-CPU machine, empty tasks through one FIFO by key cost 116 ns
	// instead of 87 (BenchmarkSubmitRunControls, control=spare). nil: the
	// channels are fixed, and the pool pays nothing for reshaping. See
	// reshape.go.
	Spare []int
	// Quantum is how many tasks in a row a worker may take from one queue
	// of a level before the level's rotation moves on, where workers poll
	// in batches (the default scheduler, and HighestFirst). 1 keeps a
	// strict rotation, one task per queue per turn, so that a newcomer's
	// queue waits for one task per worker; up to MaxQuantum trade that
	// grain for cheaper polls when a level has many busy queues (a batch
	// taken under one hold of the queue's lock runs before the next
	// queue's turn: BENCHMARKS.md, levels scaling). 0, the default, decides
	// by the tasks' length, as each worker's clock for sharing the CPU
	// measures it (every 16 tasks): MaxQuantum while they average under
	// about 6 µs, so that a queue's turn adds about 50 µs at most to the
	// others' wait, and 1 once they are longer (see examples/tenants). A
	// worker that just turned from long tasks to short ones may take up to
	// MaxQuantum long tasks in a row before its clock notices.
	Quantum int
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
	// once per task, whatever ended it: it ran, panicked or called
	// runtime.Goexit (on the worker that ran it, right after; a task run
	// inline by its spawner too), its submit's context cancelled it while
	// queued (Cancelled), or it was dropped (DroppedOnClose, DroppedLate,
	// DroppedDisplaced; see Outcome). A yielded task ends once, when it
	// finally ends, on its origin channel. OnEnd runs outside every pool
	// and channel lock, after the end was counted in ChannelStats and the
	// task's Future or Group resolved (a task dropped while it yielded:
	// before its deferred calls run, which resolve them), so a server can
	// keep its books from it alone, and release what a dropped task held.
	// A cancelled task's OnEnd runs on the goroutine that cancelled it (the
	// context's AfterFunc goroutine, Handle.Cancel's caller), and Close
	// waits for it to return, as for the workers'. It receives the task
	// as submitted (a func arrives as a Func). It may submit, and a wait in
	// it after a run (Future.Wait, a Group's Wait, Yield, Sleep, Recv) gives
	// the worker back, as a task's does: the rest of OnEnd runs beside the
	// pool's workers. A panic in it is recovered and sent to the panic
	// handler. A nil OnEnd costs a task one branch.
	OnEnd func(t Task, o Outcome)
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
