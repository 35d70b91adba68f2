package engine

import (
	"context"
	"runtime/debug"

	"github.com/smartpool-go/smartpool/task"
)

// # Spawning from a task never waits for itself
//
// A task that spawns work and waits for room to spawn it can wait for ever:
// when every place is held by tasks that are themselves waiting for a place
// (the errgroup crawler under SetLimit: each task spawns its children with
// Go), nothing ever frees one. Yielding the worker does not help, since the
// places are not workers: a group's limit, the units of Config.Limit, the
// slots of a full channels.Bounded. So a task that finds no room runs the
// child itself, on its own goroutine and in its own place, and goes on once
// the child ended: the fork-join "help while you wait" rule (Cilk's
// work-first spawn, Java's ForkJoinPool.join). The parent does not run while
// its child does, so the child needs no place of its own and every limit
// holds; the wait cannot be circular, so every spawn returns.
//
// Who helps: a task of the pool (the calling goroutine runs one, holding a
// worker or inside a Yield's wait: taskOf), at a group's limit only a task
// of that group (one whose goroutine runs that group's task, directly or
// inline: Group.ownTask). Any other caller waits for room, yielding its
// worker if it is a task of the pool.
//
// The child runs on the caller's goroutine with the caller's task context
// under its own (so its waits yield the caller's worker, and Close's
// cancellation reaches it), and is counted in its own channel's Stats like a
// run on a submitting goroutine (Bits.RunHere): Ran, Panicked or Goexited. A
// panic is recovered, so it never ends the parent: it goes to the panic
// handler (and to the child's Future or Group). runtime.Goexit cannot be
// stopped: it ends the child and then the parent, whose goroutine it
// unwinds, as Goexit in any function the parent calls would.
//
// A channel with a cap (MaxRunning, MaxInFlight) keeps it: a child runs
// inline only if it gets a running slot of its channel (inlineSlot), which
// it holds until it ends; else its parent waits as any caller would. So the
// guarantee does not cover a cycle of full capped channels, each task
// waiting for a slot of the next.

// InlineSlot reports whether a child for channel ch may run inline: a
// channel with a cap must have a running slot free, which the child takes
// (runInline gives it back).
func (e *Engine) InlineSlot(ch int) bool { return !e.Chans[ch].Capped || e.reserve(ch) }

// RunInline runs t, which the task carried by tc spawned into channel ch,
// on the calling goroutine (tc's) in that task's place, with ctx as its
// context, and counts how it ended. Only tc's goroutine calls it, after
// inlineSlot(ch) reported true and with the run counted in held (track or
// holdUnlessRemoving: hold.go), which it ends last. While it runs, tc lists ch in
// inline, so that RemoveChannel refuses to wait for the run from inside it.
func (e *Engine) RunInline(tc *taskContext, ch int, ctx context.Context, t task.Task) {
	defer e.untrack(ch) // last, after OnEnd: a removal may report once no task is held
	c := &e.Chans[ch]
	if c.Capped {
		defer e.Release(ch)
	}
	tc.inline = append(tc.inline, ch)
	run := &InlineRun{e: e, ch: ch}
	outer := tc.Recovered // the parent's: a recovered panic of the child sets it (recoveredPanic)
	tc.Recovered = nil
	finished := false
	defer func() {
		recovered := tc.Recovered
		if recovered == nil {
			recovered = run.Recovered
		}
		tc.Recovered = outer
		tc.inline = tc.inline[:len(tc.inline)-1]
		var how task.Outcome
		switch {
		case finished && run.skipped:
		case finished && recovered != nil:
			c.inline.panicked.Add(1)
			e.notePanic(t, recovered)
			e.panicked(ch, recovered)
			how = task.Panicked
		case finished:
			c.inline.ran.Add(1)
			how = task.Ran
		default:
			if r := recover(); r != nil {
				c.inline.panicked.Add(1)
				pe := &task.PanicError{Value: r, Stack: debug.Stack()}
				e.notePanic(t, pe)
				e.panicked(ch, pe)
				how = task.Panicked
				break
			}
			if tc.Dropped { // it yielded, and Close dropped the parent's re-entry
				c.dropped[tc.dropCause].Add(1)
				how = task.DroppedOnClose
				break
			}
			c.inline.goexited.Add(1) // runtime.Goexit goes on unwinding the parent
			how = task.Goexited
		}
		e.ended(ch, t, how)
	}()
	t.Run(inlineContext{Context: ctx, run: run})
	finished = true
}

// Helper returns the task context of the calling goroutine if it runs a
// task of this pool, which then runs the children it finds no room for
// itself; or nil.
func (e *Engine) Helper(ctx context.Context) *taskContext {
	if tc := TaskOf(ctx); tc != nil && tc.E == e {
		return tc
	}
	return nil
}

// InTask is source.Bits.InTask, whose documentation is the channel author's.
func (b Bits) InTask() bool {
	return b.e != nil && b.e.Helper(context.Background()) != nil
}

// RunInTask is source.Bits.RunInTask, whose documentation is the channel author's.
func (b Bits) RunInTask(t task.Task) bool {
	if b.e == nil || t == nil {
		return false
	}
	ch := b.e.channelOf(b)
	if ch < 0 {
		return false
	}
	tc := b.e.Helper(context.Background())
	if tc == nil || !b.e.InlineSlot(ch) {
		return false
	}
	b.e.track(ch) // within the channel's Hold: counted whatever a removal does
	b.e.RunInline(tc, ch, tc, t)
	return true
}
