package smartpool

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
// panic is recovered, so it never ends the parent: it goes to the child's
// Future or Group, or to the panic handler. runtime.Goexit cannot be
// stopped: it ends the child and then the parent, whose goroutine it
// unwinds, as Goexit in any function the parent calls would.
//
// A channel with a cap (MaxRunning, MaxInFlight) keeps it: a child runs
// inline only if it gets a running slot of its channel (inlineSlot), which
// it holds until it ends; else its parent waits as any caller would. So the
// guarantee does not cover a cycle of full capped channels, each task
// waiting for a slot of the next.

import (
	"context"
	"runtime/debug"
)

// inlineSlot reports whether a child for channel ch may run inline: a
// channel with a cap must have a running slot free, which the child takes
// (runInline gives it back).
func (e *engine) inlineSlot(ch int) bool { return !e.chans[ch].capped || e.reserve(ch) }

// runInline runs t, which the task carried by tc spawned into channel ch,
// on the calling goroutine (tc's) in that task's place, with ctx as its
// context, and counts how it ended. Only tc's goroutine calls it, after
// inlineSlot(ch) reported true and with the run counted in held (track or
// holdUnlessRemoving: hold.go), which it ends last. While it runs, tc lists ch in
// inline, so that RemoveChannel refuses to wait for the run from inside it.
func (e *engine) runInline(tc *taskContext, ch int, ctx context.Context, t Task) {
	defer e.untrack(ch) // last, after OnEnd: a removal may report once no task is held
	c := &e.chans[ch]
	if c.capped {
		defer e.release(ch)
	}
	tc.inline = append(tc.inline, ch)
	run := &inlineRun{}
	outer := tc.recovered // the parent's flag: a recovered panic of the child sets it (recoveredPanic)
	tc.recovered = false
	finished := false
	defer func() {
		recovered := tc.recovered || run.recovered
		tc.recovered = outer
		tc.inline = tc.inline[:len(tc.inline)-1]
		var how Outcome
		switch {
		case finished && run.skipped:
		case finished && recovered:
			c.inline.panicked.Add(1)
			how = Panicked
		case finished:
			c.inline.ran.Add(1)
			how = Ran
		default:
			if r := recover(); r != nil {
				c.inline.panicked.Add(1)
				e.panicked(ch, &PanicError{Value: r, Stack: debug.Stack()})
				how = Panicked
				break
			}
			if tc.dropped { // it yielded, and Close dropped the parent's re-entry
				c.dropped.Add(1)
				how = DroppedOnClose
				break
			}
			c.inline.goexited.Add(1) // runtime.Goexit goes on unwinding the parent
			how = Goexited
		}
		e.ended(ch, t, how)
	}()
	t.Run(inlineContext{Context: ctx, run: run})
	finished = true
}

// helper returns the task context of the calling goroutine if it runs a
// task of this pool, which then runs the children it finds no room for
// itself; or nil.
func (e *engine) helper(ctx context.Context) *taskContext {
	if tc := taskOf(ctx); tc != nil && tc.e == e {
		return tc
	}
	return nil
}

// InTask reports whether the calling goroutine runs a task of b's pool
// (holding a worker, or inside a Yield's wait), whatever context it holds.
// A channel's blocking submit asks it before it waits for room: a task that
// waits for room that only tasks can free may wait for ever, so such a
// task runs the task it submits itself (RunInTask). It costs a lookup, so
// ask it only when there is no room.
func (b Bits) InTask() bool {
	return b.e != nil && b.e.helper(context.Background()) != nil
}

// RunInTask runs t on the calling goroutine, in the place of the pool task
// that goroutine runs, for a channel's blocking submit called from a task
// that found no room (see InTask): the "help while you wait" rule of
// Group.Go. t needs no unit of Config.Limit: it runs in its parent's place
// (a channel that took one for it gives it back with Refund). It is counted in
// the channel's Stats like a worker's run (Ran, Panicked or Goexited). Its
// context is the calling task's, so its waits yield that task's worker. A
// panic is recovered and goes to the task's Future or Group, or to the
// pool's panic handler, not to the caller; runtime.Goexit ends t and then
// the calling task, whose goroutine it unwinds.
//
// Call Hold(1) with the channel's lock held, in the hold in which the
// submit saw Closed report false, and Unhold(1) after RunInTask (or
// RunHere) returned: Close, and a removal of the channel, then report only
// once t ended (see Hold).
//
// It reports whether it ran t: false, running nothing, if the calling
// goroutine runs no task of b's pool, if the channel has a cap
// (ChannelParams.MaxRunning, MaxInFlight) with no slot free, or if b
// belongs to no pool.
func (b Bits) RunInTask(t Task) bool {
	if b.e == nil || t == nil {
		return false
	}
	ch := b.e.channelOf(b)
	if ch < 0 {
		return false
	}
	tc := b.e.helper(context.Background())
	if tc == nil || !b.e.inlineSlot(ch) {
		return false
	}
	b.e.track(ch) // within the channel's Hold: counted whatever a removal does
	b.e.runInline(tc, ch, tc, t)
	return true
}
