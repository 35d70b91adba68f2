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
	e, err := newEngine([]int{n}, 0, scheduler.HighestFirst())
	if err != nil {
		return Bits{}, err
	}
	e.standalone = true
	e.stopped.Store(false)
	if !known {
		return Bits{e: e, n: n}, nil
	}
	e.Chans = []chanInfo{{c: c, user: user, queues: n, onEnd: onEnd}}
	for q := range n {
		e.queues = append(e.queues, queueRef{c: c, local: q})
	}
	e.timing = newTiming(-1, 1) // untimed
	e.timing.link()
	e.panicked = func(_ int, p *task.PanicError) { panic(p) } // no handler: the test sees it
	return Bits{e: e, n: n}, nil
}
