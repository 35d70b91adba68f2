// Package smartpool is a worker pool with priorities: tasks arrive through
// named channels grouped into levels, and a pluggable scheduler decides which
// level a free worker serves.
//
// The smallest pool lists its channels in a Levels value, a ready-made
// PoolBehavior:
//
//	jobs := channels.NewFIFO()
//	owned, err := smartpool.New(smartpool.Levels[string]{{{Key: "jobs", Channel: jobs, CompleteOnClose: true}}})
//	err = jobs.Submit(func(ctx context.Context) { work() })
//	report, err := owned.Close(ctx) // runs what jobs still holds, then reports
//
// A real program declares its own PoolBehavior: its channels (FIFO,
// Deadline, Priority, Multi, Bounded or Keyed from the channels package, or
// its own Channel), the levels they sit in (highest first), what each does
// at Close (complete or drop), where a task that yielded re-enters, and the
// rest of Config (workers, scheduler, in-flight limit, caps, drop
// callbacks, panic handler). New validates it once and opens the pool.
//
//	type Key int
//
//	const (
//		Realtime Key = iota
//		Backlog
//	)
//
//	type Game struct{ Realtime, Backlog *channels.FIFO }
//
//	func (g *Game) Config() smartpool.Config[Key] {
//		return smartpool.Config[Key]{Levels: [][]smartpool.ChannelParams[Key]{
//			{{Key: Realtime, CompleteOnClose: true}},
//			{{Key: Backlog}},
//		}}
//	}
//
//	func (g *Game) Channel(k Key) smartpool.Channel {
//		if k == Realtime {
//			return g.Realtime
//		}
//		return g.Backlog
//	}
//
//	func (g *Game) Followup(from Key) Key { return Realtime }
//
//	game := &Game{Realtime: channels.NewFIFO(), Backlog: channels.NewFIFO()}
//	owned, err := smartpool.New[Key](game)
//	err = game.Realtime.Submit(func(ctx context.Context) { tick() })
//	err = owned.Pool().Submit(Backlog, func(ctx context.Context) { bake() })
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
// complete-on-close channels, drops the queued tasks of the other channels,
// and returns a Report once every worker has exited. Every dropped task,
// whatever dropped it (Close, a late deadline, a displaced oldest task, a
// yielded task of a dropping channel that comes back after Close), is
// counted and passed once to its channel's ChannelParams.OnDrop. A yielded
// task of a dropping channel still waiting when Close returns is dropped
// when its wait ends: the report counts it in Yielded, and later Stats in
// Dropped.
//
// # Panics
//
// A task's panic is recovered; the worker carries on, and the value and
// stack go to Config.PanicHandler (default: Config.Logger at error level),
// or to the task's Future, or become its Group's error if it is the first
// (later ones go to the handler). Every panic is counted in Stats as
// Panicked. runtime.Goexit in a task is survived and counted too. A panic in
// a custom scheduler is recovered and logged, and the worker serves the
// highest level with work from then on.
package smartpool
