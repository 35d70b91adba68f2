package smartpool

import (
	"context"

	"github.com/smartpool-go/smartpool/internal/engine"
)

// Yield runs wait without holding a worker: called from a pool task's
// goroutine, it gives the task's worker back while wait runs, then re-enters
// through the followup channel of the task's channel, and returns once a
// worker picked the task up again. Use it around anything that blocks: I/O,
// a lock, a timer, another task's result. Sleep, Recv, Future.Wait and a
// Group's waits are built on it.
//
// The calling goroutine decides, not ctx (context.Background() yields as
// surely). From OnEnd or the panic handler on the worker that ran the task,
// it gives that worker back for good; on any other goroutine, and inside
// another Yield's wait, it just calls wait. A nil wait returns at once.
//
// If Close starts while the task of a dropping channel waits, Yield does
// not return: the task is dropped (counted, OnEnd) and its deferred calls
// run, as with runtime.Goexit. Complete-on-close tasks resume.
func Yield(ctx context.Context, wait func()) {
	if wait != nil {
		engine.YieldFor(ctx, wait)
	}
}
