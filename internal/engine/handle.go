package engine

import (
	"errors"

	"github.com/smartpool-go/smartpool/task"
)

// Handle is the engine side of a Handle: the task it holds and how to
// move it.
type Handle struct {
	c       *cancellable // the task, claimed once (cancel.go); nil: zero Handle
	queued  task.Task    // c as queued (perhaps timed): what the channel holds
	src     reorderer    // the channel, if it indexed the task; nil: it cannot reorder
	channel any          // the channel's key as boxed at New or AddChannel (chanInfo.name), for errors: a copy, so a slot reused after RemoveChannel does not rename it
}

// Cancel is Handle.Cancel.
func (h *Handle) Cancel() bool {
	if h.c == nil {
		return false
	}
	return h.c.cancelByHandle()
}

// Reorder asks the channel to move the task to key o. The channel's answer
// on the key comes first: for a task that left the queue (or was cancelled
// and waits there to be skipped) it is asked with no task, and answers
// Unordered(o) or ErrNotQueued.
//
// Its option errors name the channel, as a submit's do (Pool.named).
func (h *Handle) Reorder(o task.Order) error {
	switch {
	case h.c == nil:
		return task.ErrNotQueued
	case h.src == nil:
		return h.unmoved(o)
	}
	t := h.queued
	if h.c.state.Load() != queued {
		t = nil
	}
	if err := h.src.Reorder(t, o); err != nil {
		if oe := (*OptionError)(nil); errors.As(err, &oe) && oe.unordered {
			return h.unmoved(o) // in the Handle's words, not a submit option's
		}
		return WithChannel(h.channel, err)
	}
	return nil
}

// unmoved is the error of a Reprioritize (o has a priority) or SetDeadline
// on a channel that does not move its tasks by that key.
func (h *Handle) unmoved(o task.Order) error {
	if o.HasPriority {
		return &OptionError{channel: h.channel, What: "the channel does not move queued tasks by priority (Handle.Reprioritize)"}
	}
	return &OptionError{channel: h.channel, What: "the channel does not move queued tasks by deadline (Handle.SetDeadline)"}
}
