package source

import (
	"fmt"

	"github.com/smartpool-go/smartpool/internal/engine"
	"github.com/smartpool-go/smartpool/internal/standalone"
	"github.com/smartpool-go/smartpool/task"
)

// The engine attaches a channel through engine.Attach, and the channels'
// tests attach one to a pool-less harness through internal/standalone: both
// need the Bits only this package makes. Cold paths, set once here.
func init() {
	engine.Attach = func(src any, b engine.Bits) error { return src.(Source).Attach(Bits{b}) }
	standalone.Attach = func(c any) error { return attachStandalone(c, false, nil) }
	standalone.AttachOnEnd = func(c, onEnd any) error { return attachStandalone(c, true, onEnd) }
}

// attachStandalone attaches channel x to an engine that serves it with no
// workers and never starts (engine.NewStandalone); onEnd, if not nil, is a
// func(task.Task, task.Outcome) playing the channel's OnEnd.
func attachStandalone(x any, known bool, onEnd any) error {
	ch, ok := x.(Channel)
	if !ok {
		return fmt.Errorf("smartpool: standalone: %T is not a Channel", x)
	}
	c := SourceOf(ch)
	if c == nil {
		return fmt.Errorf("smartpool: standalone: %T holds no Source", x)
	}
	var end func(task.Task, task.Outcome)
	if onEnd != nil {
		if end, ok = onEnd.(func(task.Task, task.Outcome)); !ok {
			return fmt.Errorf("smartpool: standalone: onEnd is a %T, not a func(Task, Outcome)", onEnd)
		}
	}
	b, err := engine.NewStandalone(c, ch, known, end)
	if err != nil {
		return err
	}
	return c.Attach(Bits{b})
}
