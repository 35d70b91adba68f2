package smartpool

import (
	"context"

	"github.com/smartpool-go/smartpool/internal/engine"
)

// Yield runs wait without holding a worker: called from a pool task's
// goroutine, it gives the task's worker back to the pool while wait runs,
// then re-enters the pool through the followup channel of the channel the
// task came from, and returns once a worker has picked the task up again.
// The pool keeps Workers workers busy meanwhile. Use it around anything
// that blocks: I/O, a lock, a timer, another task's result.
//
// The calling goroutine decides, not ctx: a task that passes
// context.Background() or a request's context yields as surely as one that
// passes its own (Yield itself does not use ctx; Sleep, Recv, Future.Wait
// and a Group's waits end early when it ends). Called from a channel's
// OnEnd or the panic handler on the worker that ran the task, it gives that
// worker back for good: the callback finishes beside the pool's workers. On
// any other goroutine (one the task started, any goroutine outside the
// pool), and from inside another Yield's wait, Yield just calls wait: there
// is no worker to give back. Sleep, Recv, Future.Wait and a Group's waits
// behave the same.
//
// If the pool's Close starts while the task waits and the task came from a
// channel that does not complete on close, the task is dropped when wait
// returns: Yield does not return, the pool counts it as dropped and passes
// it to the channel's OnEnd, and then the task's deferred calls run (as
// with runtime.Goexit). Tasks of
// complete-on-close channels always resume, and Close waits for them.
//
// A nil wait has nothing to wait for: Yield returns at once, without giving
// the worker back.
func Yield(ctx context.Context, wait func()) {
	if wait != nil {
		engine.YieldFor(ctx, wait)
	}
}
