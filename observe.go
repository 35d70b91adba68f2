package smartpool

import "context"

// TaskObserver follows one task of a pool built with Config.Observe, from
// its submit to its end: the hook tracing is built on (the otel module
// makes each task a span with it), and the one to use for instrumentation
// of your own. Config.Observe returns one per task, on the submitting
// goroutine, at the moment of the submit; the pool then calls its methods
// in this order, each from the goroutine where the event happens, never two
// at once:
//
//	Start (once, if the task starts), then Yield and Resume in pairs (each
//	time the task waits without its worker: Yield, Sleep, Recv, Future.Wait,
//	Group.Wait, and the re-entry through its followup), then End, once.
//
// End is called exactly once, however the task ends: with its Outcome
// (Ran, Panicked with the *PanicError as err, Goexited, Cancelled with the
// cause its context or Handle.Cancel gave, or one of the drops: late,
// displaced, on close, by RemoveChannel), before its channel's OnEnd. A
// task that never starts gets End alone. A submit refused after Observe
// was called (a full channel, a context that ended) ends the TaskObserver
// with the zero Outcome and the submit's error before the submit returns,
// so every TaskObserver ends; some refusals come before Observe and call
// none (a closed pool or Config.Limit reached, on a submit without
// options).
//
// Why one interface and one Config field: the hook rides on the ending
// path every task already takes (the one OnEnd is called from), so a pool
// without an observer pays a nil check and nothing else, and both a tracer
// and a user's own counters need the same four moments. The moment of each
// event is when its method is called: read the clock there.
//
// Tasks a channel takes without a submit (a JetStream channel's messages)
// are not observed; a group's task its parent runs in its place (at the
// group's limit) is. The methods run on the pool's goroutines and must not
// block; a panic in Start panics the task, a panic in End goes where a
// panic in OnEnd goes (Config.PanicHandler).
type TaskObserver interface {
	// Start is called as the task starts, on the goroutine that runs it,
	// with the context the task would receive; the task runs with the
	// context Start returns (nil: ctx unchanged), which must derive from
	// ctx. Return a context carrying the task's span, so that what the
	// task starts is its child.
	Start(ctx context.Context) context.Context
	// Yield is called as the task gives its worker up to wait.
	Yield()
	// Resume is called as the task runs again after a Yield.
	Resume()
	// End is called once, as the task ends: see TaskObserver.
	End(o Outcome, err error)
}
