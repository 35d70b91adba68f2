package smartpool

import (
	"context"

	"github.com/smartpool-go/smartpool/internal/gid"
)

// RunHere runs t on the calling goroutine, for a channel that runs a task
// instead of queueing it (channels.CallerRuns), and counts its outcome in the
// channel's Stats as a worker's run would be: Ran, Panicked or Goexited. A
// panic is recovered and sent to the pool's panic handler (or to the task's
// Future or Group); runtime.Goexit is counted and then ends the calling
// goroutine, as it would without the pool. The task's context is ctx, which
// is context.Background() if nil. Its waits are plain waits, except on the
// goroutine of a pool task, whose worker they give back (see Yield).
//
// The channel must have given back the task's unit of Config.Limit first
// (Bits.Refund), since the task never enters the pool; it holds the task
// (Bits.Hold) under its lock, as for RunInTask, so that Close waits for
// the run; Close called from the task or its OnEnd returns
// ErrCloseFromTask. Without a pool (zero Bits) RunHere just runs t and lets a
// panic through.
func (b Bits) RunHere(ctx context.Context, t Task) {
	if ctx == nil {
		ctx = context.Background()
	}
	ch := -1
	if b.e != nil {
		ch = b.e.channelOf(b)
	}
	if ch < 0 { // no pool, or no channel to count in (a standalone engine)
		t.Run(ctx)
		return
	}
	b.e.track(ch) // within the channel's Hold: counted whatever a removal does
	// The channel's Hold keeps Close from reporting before t ended: a
	// Close from t or its OnEnd must not wait for it (ErrCloseFromTask).
	id := gid.Current()
	b.e.callbacks.add(id)
	defer b.e.callbacks.remove(id)
	b.e.runHere(ch, ctx, t)
}

// inlineKey marks the context of a task RunHere runs, so that a Future or
// Group that recovers the task's panic can say so (recoveredPanic).
type inlineKey struct{}

// inlineRun is what RunHere learns about the task it runs; only the calling
// goroutine touches it.
type inlineRun struct {
	recovered bool // a Future or Group recovered the task's panic (recoveredPanic)
	skipped   bool // WithContext's wrapper skipped it: cancelled, and counted so
}

type inlineContext struct {
	context.Context
	run *inlineRun
}

func (c inlineContext) Value(key any) any {
	if key == (inlineKey{}) {
		return c.run
	}
	return c.Context.Value(key)
}

// runHere runs t for channel ch on the calling goroutine, counted in held
// (track or holdUnlessRemoving: hold.go), which it ends last.
func (e *engine) runHere(ch int, ctx context.Context, t Task) {
	defer e.untrack(ch) // last, after OnEnd: a removal may report once no task is held
	stats := &e.chans[ch].inline
	run := &inlineRun{}
	// On a pool task's goroutine, recoveredPanic marks that task: keep its
	// own flag apart from t's, as runInline does.
	host := taskOf(ctx)
	var hostRecovered bool
	if host != nil {
		hostRecovered, host.recovered = host.recovered, false
		host.inline = append(host.inline, ch) // see runInline
	}
	finished := false
	defer func() {
		if host != nil {
			run.recovered = run.recovered || host.recovered
			host.recovered = hostRecovered
			host.inline = host.inline[:len(host.inline)-1]
		}
		if finished {
			return
		}
		if r := recover(); r != nil {
			stats.panicked.Add(1)
			e.panicked(ch, &PanicError{Value: r, Stack: stack()})
			e.ended(ch, t, Panicked)
			return
		}
		stats.goexited.Add(1) // runtime.Goexit: it goes on unwinding the caller
		e.ended(ch, t, Goexited)
	}()
	t.Run(inlineContext{Context: ctx, run: run})
	finished = true
	recovered := run.recovered || (host != nil && host.recovered)
	switch {
	case run.skipped:
	case recovered:
		stats.panicked.Add(1)
		e.ended(ch, t, Panicked)
	default:
		stats.ran.Add(1)
		e.ended(ch, t, Ran)
	}
}
