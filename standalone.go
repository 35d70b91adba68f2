package smartpool

import (
	"fmt"

	"github.com/smartpool-go/smartpool/internal/standalone"
	"github.com/smartpool-go/smartpool/scheduler"
)

func init() {
	standalone.Attach = func(c any) error { return attachStandalone(c, nil) }
	standalone.AttachOnEnd = attachStandalone
}

// attachStandalone attaches c to an engine that serves it with no workers
// and never starts (internal/standalone): its submits are admitted, its bits
// kept, and its Close may be called at any time. With onEnd, a
// func(Task, Outcome), the engine knows c as its one channel, so that the
// tasks c discards end as in a pool: passed to onEnd with why.
func attachStandalone(x, onEnd any) error {
	ch, ok := x.(Channel)
	if !ok {
		return fmt.Errorf("smartpool: standalone: %T is not a Channel", x)
	}
	c := SourceOf(ch)
	if c == nil {
		return fmt.Errorf("smartpool: standalone: %T holds no Source", x)
	}
	n := c.Queues()
	e, err := newEngine([]int{n}, 0, scheduler.HighestFirst())
	if err != nil {
		return err
	}
	e.standalone = true
	e.stopped.Store(false)
	if onEnd != nil {
		end, ok := onEnd.(func(Task, Outcome))
		if !ok {
			return fmt.Errorf("smartpool: standalone: onEnd is a %T, not a func(Task, Outcome)", onEnd)
		}
		e.chans = []chanInfo{{c: c, user: ch, queues: n, onEnd: end}}
		e.panicked = func(_ int, p *PanicError) { panic(p) } // no handler: the test sees it
		for q := range n {
			e.queues = append(e.queues, queueRef{c: c, local: q})
		}
	}
	return c.Attach(Bits{e: e, n: n})
}
