package engine

import (
	"github.com/smartpool-go/smartpool/scheduler"
	"github.com/smartpool-go/smartpool/task"
)

// NewStandalone returns the Bits to attach a channel of n queues to an
// engine that serves it with no workers and never starts (the channel test
// harness, internal/standalone): its submits are admitted, its bits kept, and
// its Close may be called at any time. If known, the engine knows c (counted
// by user) as its one channel, so that its submits given options
// (Bits.Submit), discards (Bits.Discard) and runs in the caller
// (Bits.RunHere) go through the pool's code as in a pool, with onEnd, if not
// nil, playing the channel's OnEnd.
func NewStandalone(c queue, user lener, known bool, onEnd func(task.Task, task.Outcome)) (Bits, error) {
	n := c.Queues()
	e, err := NewEngine([]int{n}, 0, scheduler.HighestFirst())
	if err != nil {
		return Bits{}, err
	}
	e.Standalone = true
	e.Stopped.Store(false)
	if !known {
		return Bits{E: e, N: n}, nil
	}
	e.Chans = []ChanInfo{{C: c, User: user, Queues: n, OnEnd: onEnd}}
	for q := range n {
		e.Queues = append(e.Queues, QueueRef{C: c, Local: q})
	}
	e.Timing = NewTiming(-1, 1) // untimed
	e.Timing.Link()
	e.Panicked = func(_ int, p *task.PanicError) { panic(p) } // no handler: the test sees it
	return Bits{E: e, N: n}, nil
}
