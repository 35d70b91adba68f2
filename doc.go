// Package smartpool is a worker pool with priorities: tasks arrive through
// named channels grouped into levels, and a pluggable scheduler decides which
// level a free worker serves.
//
// A program declares a PoolBehavior: its channels (FIFO, Deadline, Priority,
// Multi from the channels package, or its own), the levels they sit in
// (highest first), what each does at Close (complete or drop), and where a
// task that yielded re-enters. New validates it once and starts the workers.
//
//	type Key int
//	const (Realtime Key = iota; Backlog)
//
//	type Game struct{ Realtime, Backlog *channels.FIFO }
//
//	func (g *Game) Config() smartpool.Config[Key] {
//		return smartpool.Config[Key]{Levels: [][]smartpool.ChannelParams[Key]{
//			{{Key: Realtime, CompleteOnClose: true}},
//			{{Key: Backlog}},
//		}}
//	}
//	func (g *Game) Channel(k Key) smartpool.Channel { ... }
//	func (g *Game) Followup(from Key) Key          { return Realtime }
//
//	owned, err := smartpool.New[Key](&Game{channels.NewFIFO(), channels.NewFIFO()})
//	err = game.Realtime.Submit(func(ctx context.Context) { ... })
//	report, err := owned.Close(ctx)
//
// # How a worker finds work
//
// Every queue has one bit in an atomic availability bitfield and every level
// a summary bit, so a worker chooses a level and decides to sleep with one
// atomic load, and no global lock is taken on submit, pick or run (see
// internal/avail for the availability-bit protocol and park.go for the
// sleep/wake protocol without lost wake-ups).
//
// # Waiting without a worker
//
// A task that waits calls Yield (or Sleep, Recv, Future.Wait, Group.Wait,
// which are built on it): its worker goes back to the pool while it waits,
// and it re-enters through its followup channel, so tasks can wait on tasks
// at any pool size without deadlock.
//
// # Closing
//
// OwnedPool.Close stops admission, runs every queued and yielded task of
// complete-on-close channels, drops and reports the rest, and returns a
// Report once every worker has exited.
//
// # Panics
//
// A task's panic is recovered; the worker carries on, and the value and
// stack go to Config.PanicHandler (default: log/slog), or to the task's
// Future or Group. runtime.Goexit in a task is survived too.
package smartpool
