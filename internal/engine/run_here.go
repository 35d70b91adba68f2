package engine

import (
	"context"

	"github.com/smartpool-go/smartpool/internal/gid"
	"github.com/smartpool-go/smartpool/task"
)

// RunHere is source.Bits.RunHere, whose documentation is the channel author's.
func (b Bits) RunHere(ctx context.Context, t task.Task) {
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
	b.e.RunHere(ch, ctx, t)
}

// InlineKey marks the context of a task RunHere runs, so that a Future or
// Group that recovers the task's panic can say so (recoveredPanic).
type InlineKey struct{}

// InlineRun is what RunHere learns about the task it runs; only the calling
// goroutine touches it.
type InlineRun struct {
	e         *Engine
	ch        int              // the task's channel (Where)
	Recovered *task.PanicError // the task's panic, which its Future or Group recovered (recoveredPanic)
	skipped   bool             // WithContext's wrapper skipped it: cancelled, and counted so
}

type inlineContext struct {
	context.Context
	run *InlineRun
}

func (c inlineContext) Value(key any) any {
	if key == (InlineKey{}) {
		return c.run
	}
	return c.Context.Value(key)
}

// RunHere runs t for channel ch on the calling goroutine, counted in held
// (track or holdUnlessRemoving: hold.go), which it ends last.
func (e *Engine) RunHere(ch int, ctx context.Context, t task.Task) {
	defer e.untrack(ch) // last, after OnEnd: a removal may report once no task is held
	stats := &e.Chans[ch].inline
	run := &InlineRun{e: e, ch: ch}
	// On a pool task's goroutine, recoveredPanic marks that task: keep its
	// own flag apart from t's, as runInline does.
	host := TaskOf(ctx)
	var hostRecovered *task.PanicError
	if host != nil {
		hostRecovered, host.Recovered = host.Recovered, nil
		host.inline = append(host.inline, ch) // see runInline
	}
	finished := false
	defer func() {
		if host != nil {
			if run.Recovered == nil {
				run.Recovered = host.Recovered
			}
			host.Recovered = hostRecovered
			host.inline = host.inline[:len(host.inline)-1]
		}
		if finished {
			return
		}
		if r := recover(); r != nil {
			stats.panicked.Add(1)
			pe := &task.PanicError{Value: r, Stack: Stack()}
			e.notePanic(t, pe)
			e.panicked(ch, pe)
			e.ended(ch, t, task.Panicked)
			return
		}
		stats.goexited.Add(1) // runtime.Goexit: it goes on unwinding the caller
		e.ended(ch, t, task.Goexited)
	}()
	t.Run(inlineContext{Context: ctx, run: run})
	finished = true
	recovered := run.Recovered
	if recovered == nil && host != nil {
		recovered = host.Recovered
	}
	switch {
	case run.skipped:
	case recovered != nil:
		stats.panicked.Add(1)
		e.notePanic(t, recovered)
		e.panicked(ch, recovered)
		e.ended(ch, t, task.Panicked)
	default:
		stats.ran.Add(1)
		e.ended(ch, t, task.Ran)
	}
}
