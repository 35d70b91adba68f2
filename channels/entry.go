package channels

import (
	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/source"
)

// entry says how a task reaches a channel, which decides what admits it.
type entry int

const (
	pushed    entry = iota // by the pool (Push): admitted by the pool already
	submitted              // by the channel's own submit method: admitted here
	requeued               // a yielded task re-entering: always accepted until dropped
)

// admitLocked applies the channel contract's admission rules, with the
// channel's lock held: a requeue is refused only once Close(true) emptied
// the channel (dropped) or while no pool holds the channel; any other entry
// whenever no running pool serves it (Bits.Closed); and a submitted task
// takes a unit of the pool's in-flight limit.
func (how entry) admitLocked(b source.Bits, dropped, closed bool) error {
	switch {
	case dropped:
		return smartpool.ErrClosed
	case how == requeued:
		if !b.Attached() {
			return b.Refusal() // a user's mistaken call: nothing would run it
		}
		return nil
	case closed || b.Closed():
		return b.Refusal()
	case how == submitted:
		return b.Admit(1)
	}
	return nil
}

// stamp lets the pool time the queue wait of a task the channel's own
// submit method queues (source.Bits.Stamp); the pool stamped the others.
func (how entry) stamp(b source.Bits, t smartpool.Task) smartpool.Task {
	if how != submitted {
		return t
	}
	return b.Stamp(t)
}
