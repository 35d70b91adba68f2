package smartpool

import (
	"fmt"

	"github.com/smartpool-go/smartpool/internal/engine"
	"github.com/smartpool-go/smartpool/internal/standalone"
	"github.com/smartpool-go/smartpool/scheduler"
)

func init() {
	standalone.Attach = func(c any) error { return attachStandalone(c, false, nil) }
	standalone.AttachOnEnd = func(c, onEnd any) error { return attachStandalone(c, true, onEnd) }
}

// attachStandalone attaches c to an engine that serves it with no workers
// and never starts (internal/standalone): its submits are admitted, its bits
// kept, and its Close may be called at any time. If known, the engine knows
// c as its one channel, so that c's submits given options (Bits.Submit),
// discards (Bits.Discard) and runs in the caller (Bits.RunHere) go through
// the pool's code as in a pool; onEnd, if not nil, is then a
// func(Task, Outcome) playing ChannelParams.OnEnd.
func attachStandalone(x any, known bool, onEnd any) error {
	ch, ok := x.(Channel)
	if !ok {
		return fmt.Errorf("smartpool: standalone: %T is not a Channel", x)
	}
	c := SourceOf(ch)
	if c == nil {
		return fmt.Errorf("smartpool: standalone: %T holds no Source", x)
	}
	n := c.Queues()
	e, err := engine.NewEngine([]int{n}, 0, scheduler.HighestFirst())
	if err != nil {
		return err
	}
	e.Standalone = true
	e.Stopped.Store(false)
	if !known {
		return c.Attach(engine.Bits{E: e, N: n})
	}
	var end func(Task, Outcome)
	if onEnd != nil {
		if end, ok = onEnd.(func(Task, Outcome)); !ok {
			return fmt.Errorf("smartpool: standalone: onEnd is a %T, not a func(Task, Outcome)", onEnd)
		}
	}
	e.Chans = []engine.ChanInfo{{C: c, User: ch, Queues: n, OnEnd: end}}
	for q := range n {
		e.Queues = append(e.Queues, engine.QueueRef{C: c, Local: q})
	}
	e.Timing = engine.NewTiming(-1, 1) // untimed
	e.Timing.Link()
	e.Panicked = func(_ int, p *PanicError) { panic(p) } // no handler: the test sees it
	return c.Attach(engine.Bits{E: e, N: n})
}
