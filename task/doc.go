// Package task holds the words every reader of smartpool shares: what a
// task is (Task, Func, Unwrapper), the key a channel orders it by (Order),
// how it ended (Outcome, PanicError), and the errors the pool and its
// channels return.
//
// Programs that use a pool need not import it: the smartpool package
// re-exports each of these names (smartpool.Task is task.Task), so the two
// are the same type and the same error values. Channel authors (package
// source) and the pool's engine import task directly. It imports nothing of
// smartpool, so every other package can stand on it.
package task
