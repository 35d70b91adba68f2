package engine

import "github.com/smartpool-go/smartpool/task"

// # Tasks that end outside the queue and the workers
//
// A removal reports a channel once its Len reads 0 and then held reads 0
// (reshape.go, "Reshaping", 3), so a task of the channel must be in its
// queue or counted in held at every instant. Workers count what they take.
// Two other kinds of task leave a channel's queue, or never enter it, and
// end elsewhere:
//
//   - a task the channel takes out under its lock and ends after releasing
//     it: a displaced oldest task it passes to Bits.Discard;
//   - a task a submit runs on its caller instead of queueing it:
//     Bits.RunInTask and Bits.RunHere for a channel's own submit, and the
//     pool's help-while-you-wait runs for its by-key and group submits
//     (help.go).
//
// Each is counted in held from before it leaves the queue's view until it
// ended (after OnEnd):
//
//   - A channel calls Bits.Hold under its lock, in the same hold of the lock
//     in which its submit saw Bits.Closed report false or it took the task
//     out, and Bits.Unhold once Discard or the run returned. A removal
//     stores Closed before it calls the channel's Close, which takes the
//     lock, and reads held after that: either the submit saw Closed and
//     refused, or its Hold is counted when the removal reads held.
//   - The pool's own inline runs have no channel lock to order them: they
//     add one to held and then load chanInfo.removal (holdUnlessRemoving), all
//     sequentially consistent, as the removal stores removal and then loads
//     held. Either the run sees the removal and its submit returns
//     ErrClosed, as the channel's would, or the removal sees the run in
//     held.
//
// Bits.RunInTask and Bits.RunHere also count their run themselves, from
// its start, so that a channel that forgets Hold leaves only the moment
// between its unlock and the run uncounted. A Discard called from Poll or
// PollBatch (channels.Deadline's DropLate) needs none of this: the worker
// counted its poll in held before it called it. A pool without
// Config.Spare tracks nothing: each of these costs it one branch.

// Hold is source.Bits.Hold, whose documentation is the channel author's.
func (b Bits) Hold(n int) {
	if b.e == nil || n <= 0 {
		return
	}
	if b.e.share() { // fails only once the pool finished, or before it started
		b.e.holds.Add(1)
	}
	if ch := b.tracked(); ch >= 0 {
		b.e.Chans[ch].held.Add(int64(n))
	}
}

// Unhold is source.Bits.Unhold, whose documentation is the channel author's.
func (b Bits) Unhold(n int) {
	if b.e == nil || n <= 0 {
		return
	}
	if ch := b.tracked(); ch >= 0 {
		b.e.Chans[ch].held.Add(-int64(n))
	}
	for h := b.e.holds.Load(); h > 0; h = b.e.holds.Load() {
		if b.e.holds.CompareAndSwap(h, h-1) {
			b.e.exit() // last: Close may report once live reaches zero
			return
		}
	}
}

// tracked returns b's channel index in a pool with Config.Spare, or -1.
func (b Bits) tracked() int {
	if b.att == nil || b.e == nil { // no reshaping: nothing counts held
		return -1
	}
	ch := b.e.channelOf(b)
	if ch < 0 || !b.e.Chans[ch].tracked {
		return -1
	}
	return ch
}

// track counts in held a task of channel ch run on its caller by a channel
// that holds it already (Hold) or that runs it anyway (RunInTask, RunHere).
func (e *Engine) track(ch int) {
	if c := &e.Chans[ch]; c.tracked {
		c.held.Add(1)
	}
}

// HoldUnlessRemoving counts one in channel ch's held, unless a removal of
// ch started: it then reports false, holding nothing, and the caller
// refuses with ErrClosed. It holds a task that one of the pool's submits is
// about to run on its caller (help.go), or a by-key submit waiting for room
// in ch (keyPin.holdInstead). The load of removal comes after the add (see
// above).
func (e *Engine) HoldUnlessRemoving(ch int) bool {
	c := &e.Chans[ch]
	if !c.tracked {
		return true
	}
	c.held.Add(1)
	if c.removal.Load() == 0 {
		return true
	}
	c.held.Add(-1)
	return false
}

// claimInline prepares the run inline of a task of channel ch by the task
// the calling goroutine runs (help.go): it counts the run in held
// (holdUnlessRemoving) and takes a running slot of a capped channel (inlineSlot).
// It returns ErrClosed, taking nothing, once a removal of ch started; and
// false, taking nothing, if the channel's cap has no slot free, so that
// the caller waits as any other would. runInline gives both back.
func (e *Engine) claimInline(ch int) (bool, error) {
	if !e.HoldUnlessRemoving(ch) {
		return false, task.ErrClosed
	}
	if !e.InlineSlot(ch) {
		e.untrack(ch)
		return false, nil
	}
	return true, nil
}
