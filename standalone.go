package smartpool

import (
	"fmt"

	"github.com/smartpool-go/smartpool/internal/standalone"
	"github.com/smartpool-go/smartpool/scheduler"
)

func init() { standalone.Attach = attachStandalone }

// attachStandalone attaches c to an engine that serves it with no workers
// and never starts (internal/standalone): its submits are admitted, its bits
// kept, and its Close may be called at any time.
func attachStandalone(x any) error {
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
	return c.Attach(Bits{e: e, n: n})
}
