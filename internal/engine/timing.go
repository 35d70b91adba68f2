package engine

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/smartpool-go/smartpool/task"
)

// # Timing: queue waits and run times
//
// Every channel has two histograms (histogram.go): the queue wait of its
// tasks (submit to start, and for a yielded task re-entry to restart) and
// their run time (start to end, including any time spent yielded). Timing
// costs clock reads, so by default only a sample of tasks is timed
// (Config.TimingEvery):
//
//   - wait: a task submitted through the pool (Submit, SubmitTask,
//     WithContext, Go, futures, groups, timers) or a channel's own submit
//     method (source.Bits.Stamp) is picked at random with probability 1/n
//     and wrapped in a stamped task that carries its submit time (32
//     bytes, allocated only for the picked ones). Tasks a channel queues
//     otherwise (a move, a requeue) carry no stamp.
//   - run: every n-th task a worker runs is timed, from one clock read
//     before it starts to one after it ends. A stamped task the worker times
//     ends its wait with the worker's start read, so the two share one read.
//   - re-entry: a yielded task picked at random stamps its resumption.
//
// Nothing here takes a lock. The histograms are shared by all workers of a
// channel; with sampling their atomic adds are rare.

// timing is a pool's clock and per-channel histograms. Read-only after New
// except the histograms' counters.
type timing struct {
	every uint32    // 0: off; 1: every task; n: one in n
	odds  uint32    // pick when a random uint32 is below it: 2^32/every
	epoch time.Time // clock readings are nanoseconds since epoch (monotonic)
	chans []chanTiming
}

// chanTiming holds one channel's histograms, allocated on first use (1.4 kB
// each): a pool of thousands of channels pays only for those it times.
type chanTiming struct {
	tm        *timing
	wait, run lazyHistogram
}

// lazyHistogram is a histogram allocated by its first record.
type lazyHistogram struct{ p atomic.Pointer[histogram] }

func (l *lazyHistogram) record(d int64) {
	h := l.p.Load()
	if h == nil {
		l.p.CompareAndSwap(nil, new(histogram))
		h = l.p.Load()
	}
	h.record(d)
}

func (l *lazyHistogram) snapshot() Timing {
	if h := l.p.Load(); h != nil {
		return h.snapshot()
	}
	return Timing{}
}

func newTiming(every, channels int) timing {
	tm := timing{epoch: time.Now(), chans: make([]chanTiming, channels)}
	if every > 0 { // resolved by New: 0 is off here
		tm.every = uint32(min(every, 1<<31))
	}
	if tm.every > 1 {
		tm.odds = uint32((1 << 32) / uint64(tm.every))
	}
	return tm
}

// link points every channel's histograms back at tm; tm must not move
// afterwards (it lives in the engine).
func (tm *timing) link() {
	for i := range tm.chans {
		tm.chans[i].tm = tm
	}
}

// now reads the clock.
func (tm *timing) now() int64 { return int64(time.Since(tm.epoch)) }

// pick reports whether to time one more event: with probability 1/every.
func (tm *timing) pick() bool {
	switch tm.every {
	case 0:
		return false
	case 1:
		return true
	}
	return rand.Uint32() < tm.odds // cheaper than Uint32N: no division
}

// stamp returns t wrapped with its submit time if it is picked, else t. ch
// is the channel it is pushed into.
func (tm *timing) stamp(ch int, t task.Task) task.Task {
	if !tm.pick() {
		return t
	}
	return &stamped{Task: t, c: &tm.chans[ch], at: tm.now()}
}

// stamped is a task timed from its submit: its Run ends the queue wait.
// Unwrap hands the user's task to drop callbacks.
type stamped struct {
	task.Task
	c  *chanTiming
	at int64 // clock reading at submit
}

// Unwrap returns the task as it was submitted.
func (s *stamped) Unwrap() task.Task { return s.Task }

// Run records the wait, using the worker's start read if it took one, and
// runs the task.
func (s *stamped) Run(ctx context.Context) {
	start := int64(0)
	if tc, ok := ctx.(*taskContext); ok {
		start = tc.runStart
	}
	if start == 0 {
		start = s.c.tm.now()
	}
	s.c.wait.record(start - s.at)
	s.Task.Run(ctx)
}

// startRun is called by a worker before it runs a task of channel ch on
// tc: it marks the worker busy with ch and, every n-th task, reads the clock,
// which it returns and leaves in tc.runStart for a stamped task (0: not
// timed). The mark is stored only when it changes (an atomic store is a
// full barrier on amd64): a worker running one channel's tasks back to back
// stores nothing, and it is cleared only when the worker parks (goIdle).
func (w *Worker) startRun(tc *taskContext, ch int) int64 {
	if mark := int32(ch) + 1; w.running.Load() != mark {
		w.running.Store(mark)
	}
	tc.runStart = 0
	tm := &w.e.timing
	if tm.every == 0 {
		return 0
	}
	if w.runs++; w.runs < tm.every {
		return 0
	}
	w.runs = 0
	tc.runStart = tm.now()
	return tc.runStart
}

// endRun records a run time for channel ch if start is a clock reading. A
// task that yielded ends on its own goroutine and calls this directly.
func (tm *timing) endRun(ch int, start int64) {
	if start != 0 {
		tm.chans[ch].run.record(tm.now() - start)
	}
}

// markReentry stamps a yielded task's re-entry into channel ch, if picked.
func (tc *taskContext) markReentry() {
	tc.reenteredAt = 0
	if tc.E.timing.pick() {
		tc.reenteredAt = tc.E.timing.now()
	}
}

// endReentry records a stamped re-entry's wait in channel ch's histogram, as
// a worker hands its slot to the task.
func (tc *taskContext) endReentry(ch int) {
	if at := tc.reenteredAt; at != 0 {
		tm := &tc.E.timing
		tm.chans[ch].wait.record(tm.now() - at)
		tc.reenteredAt = 0
	}
}

// Stamp is source.Bits.Stamp, whose documentation is the channel author's.
func (b Bits) Stamp(t task.Task) task.Task {
	if b.e == nil || t == nil {
		return t
	}
	ch := b.e.channelOf(b)
	if ch < 0 {
		return t
	}
	if b.e.observer != nil {
		t, _ = b.e.observe(context.Background(), ch, t) // a channel's own submit: observed here (observe.go)
	}
	return b.e.timing.stamp(ch, t)
}
