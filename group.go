package smartpool

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"

	"go.uber.org/atomic"

	"github.com/smartpool-go/smartpool/internal/gid"
)

// Group is a scope of tasks spawned into a pool's channels, in the manner of
// errgroup.WithContext and conc's context pools. Create one with NewGroup, or
// use Scope.
//
// Context: every task receives a context derived from the one given to
// NewGroup. Its values (trace IDs, a deadline stored as a value) reach the
// task, and so do its deadline and cancellation. It is cancelled when that
// context ends, when a task of the group fails (returns an error, panics,
// calls runtime.Goexit or is dropped), when the pool's Close gives up
// waiting, and when Wait returns; context.Cause gives the first error. It
// also carries the pool's task handle, so Yield, Sleep, Recv and waits on a
// Future or another Group work in the task as in any task.
//
// Cancellation: a task still queued when the group's context is cancelled
// never runs; the pool counts it in ChannelStats.Cancelled. Go on a group
// whose context is done queues nothing and counts nothing.
//
// Errors: Wait returns once every task has ended, with the first error in
// this order of events: a task's error; a panic, as *PanicError (every later
// panic goes to the pool's panic handler, Config.PanicHandler, so none is
// lost; each is counted in ChannelStats.Panicked); ErrGoexit; ErrDropped for
// a task Close dropped; a submit error (ErrClosed, ErrUnknownKey,
// ErrNilTask); or the context's error, when a task was skipped or a Go gave
// up waiting because the context given to NewGroup ended.
//
// Room: SetLimit bounds the group's tasks in flight (queued, running or
// yielded), as errgroup's SetLimit bounds its goroutines. Go needs room in
// the group, a unit of the pool's in-flight limit (Config.Limit) and room in
// a full channels.Bounded; TryGo never waits for any of them.
//
// Spawning from inside the group never deadlocks. errgroup's crawler, where
// every task spawns its children with Go under SetLimit, hangs once the
// tasks holding the group's places all wait in Go for a place. Here a task
// that finds no room never waits for it: it runs the child itself, at once,
// on its own goroutine and in its own place, and Go returns when the child
// ended (the fork-join "help while you wait" rule). At the group's limit
// this holds for a task of the group (its goroutine runs one of the group's
// tasks, directly or so inline); at the pool's in-flight limit and at a full
// Bounded, for any task of the pool. The parent does not run while its child
// does, so no limit is exceeded: at most the limit of the group's functions
// run at once, counting a parent waiting for its inline child as not
// running. A child run inline is counted in its channel's ChannelStats like
// any other (Ran, Panicked, Goexited), and its outcome is recorded as any
// child's: an error or a panic (as *PanicError, never reaching the parent)
// becomes the group's error and cancels it. runtime.Goexit in it ends the
// parent as well, since it unwinds the goroutine both run on: the group
// records ErrGoexit. Inline, a child keeps no priority of its own: it runs
// at its parent's place, not in its channel's queue.
//
// Any other caller (the goroutine that owns the group, a task outside it at
// the group's limit) waits in Go for room while the group's context lasts,
// as errgroup's Go does. Waiting from inside a pool task yields the worker
// (see Yield), so a Group is safe at any pool size, including one worker
// waiting on its own children: Wait yields with the context it is given,
// Go with the group's.
//
// A Group is safe for concurrent use and must not be copied. It is used
// once: Go after Wait returned finds the group's context cancelled.
type Group[K comparable] struct {
	p      *Pool[K]
	ctx    context.Context // the tasks' context; read-only
	cancel context.CancelCauseFunc
	stop   func() bool  // unregisters the group's cancel on the pool's base context
	err    atomic.Error // the first error; set once, by compare-and-swap from nil

	mu      sync.Mutex
	pending int           // tasks spawned and not ended; guarded by mu
	limit   int           // SetLimit's bound on pending, 0 for none; guarded by mu
	idle    chan struct{} // closed when pending drops to 0 while someone waits; guarded by mu
	room    chan struct{} // closed when pending drops or the limit changes while a Go waits; guarded by mu
	// inline counts, by goroutine (gid), the group's tasks running there
	// other than the task a worker polled (those ownTask finds through the
	// goroutine's task context): tasks run inline by a parent (help.go) or
	// by a channel on a submitting goroutine. Each task adds and removes its
	// own goroutine's count, on that goroutine; guarded by mu.
	inline map[uintptr]int
}

// NewGroup returns an empty Group spawning into p, whose tasks' context
// derives from ctx (see Group). A nil ctx means context.Background().
func NewGroup[K comparable](ctx context.Context, p *Pool[K]) *Group[K] {
	if ctx == nil {
		ctx = context.Background()
	}
	gctx, cancel := context.WithCancelCause(ctx)
	g := &Group[K]{p: p, ctx: gctx, cancel: cancel}
	base := p.e.base // cancelled when a Close gives up waiting, and when the pool has closed
	g.stop = context.AfterFunc(base, func() { cancel(context.Cause(base)) })
	return g
}

// Scope runs body with a new Group of p whose tasks' context derives from
// ctx, then waits for every task body spawned and returns the first error
// (see Group). It waits for the tasks even after ctx ended: they see their
// context cancelled and queued ones are skipped, so nothing outlives the
// scope. If body panics, Scope cancels the group, waits for its tasks and
// panics on.
func Scope[K comparable](ctx context.Context, p *Pool[K], body func(g *Group[K])) error {
	if ctx == nil {
		ctx = context.Background()
	}
	g := NewGroup(ctx, p)
	wait := context.WithoutCancel(ctx) // keeps the task handle: a scope inside a task yields
	returned := false
	defer func() {
		if !returned {
			g.cancel(errScopePanicked)
			_ = g.Wait(wait)
		}
	}()
	body(g)
	returned = true
	return g.Wait(wait)
}

// errScopePanicked is the cause of a scope's context when its body panicked.
var errScopePanicked = errors.New("smartpool: scope body panicked")

// SetLimit bounds the number of the group's tasks in flight (queued, running
// or yielded) to n, as errgroup's SetLimit does; n <= 0 removes the bound.
// Unlike errgroup's, it may be called at any time: a raised bound lets
// waiting Go calls in at once; a lowered one stops nothing that was
// spawned. A task of the group that calls Go at the limit runs the child
// itself in its own place instead of waiting (see Group), so tasks that
// spawn tasks never deadlock on the limit, whatever n.
func (g *Group[K]) SetLimit(n int) {
	g.mu.Lock()
	g.limit = max(n, 0)
	g.wakeRoomLocked()
	g.mu.Unlock()
}

// Go submits fn to the channel named key. If there is no room (see Group),
// a task of the group (at the group's limit) or of the pool (at the pool's
// in-flight limit or a full channels.Bounded) runs fn itself, in its own
// place, and Go returns once fn ended; any other caller waits until there is
// room or the group's context ends. A submit error (ErrNilTask, ErrClosed,
// ErrUnknownKey, ErrFull from a full channel that cannot wait), or the
// context's error if it ends first, becomes the group's error if it is the
// first, and fn is not run.
func (g *Group[K]) Go(key K, fn func(ctx context.Context) error) {
	g.spawn(key, fn, true)
}

// TryGo submits fn to the channel named key only if there is room at once:
// in the group (SetLimit), in the pool's in-flight limit and in the
// channel. It reports whether fn was queued, like errgroup's TryGo; it
// never waits and never runs fn itself, from a task of the group or not. A
// refusal for lack of room leaves the group as it was, so the caller may try
// again; any other refusal (ErrNilTask, ErrClosed, ErrUnknownKey, the
// group's context ended) also becomes the group's error and cancels it, so
// false with the group's context still live means "no room".
func (g *Group[K]) TryGo(key K, fn func(ctx context.Context) error) bool {
	return g.spawn(key, fn, false)
}

// errNoRoom is enter's refusal when the group is at its limit.
var errNoRoom = errors.New("no room in the group")

func (g *Group[K]) spawn(key K, fn func(ctx context.Context) error, wait bool) bool {
	ch, ok := g.p.index[key]
	switch {
	case fn == nil:
		g.fail(ErrNilTask)
		return false
	case !ok:
		g.fail(unknownKey(key))
		return false
	}
	help, err := g.enter(ch, wait)
	switch {
	case err == errNoRoom:
		return false
	case err != nil:
		g.fail(err)
		return false
	case help:
		g.help(ch, fn)
		return true
	}
	t := &groupTask[K]{g: g, fn: fn, ch: ch}
	err = g.p.e.submitContext(g.ctx, ch, t, submitMode{wait: wait, room: wait})
	switch {
	case err == nil:
		return true
	case !wait && errors.Is(err, ErrFull):
		g.leave()
	default:
		g.fail(err)
		g.leave()
	}
	return false
}

// enter takes a place for a new task under the group's limit. At the limit,
// it refuses with errNoRoom unless wait; it reports help, taking no place,
// to a caller that runs a task of the group, which then runs the new task
// itself (see Group); any other caller waits for a place until the group's
// context ends.
func (g *Group[K]) enter(ch int, wait bool) (help bool, err error) {
	g.mu.Lock()
	tried := false // to help: a capped channel may have no slot (help.go)
	for g.limit > 0 && g.pending >= g.limit {
		if !wait {
			g.mu.Unlock()
			return false, errNoRoom
		}
		if !tried && g.ownTaskLocked() {
			tried = true
			g.mu.Unlock()
			if g.p.e.inlineSlot(ch) {
				return true, nil
			}
			g.mu.Lock()
			continue
		}
		if g.room == nil {
			g.room = make(chan struct{})
		}
		room := g.room
		g.mu.Unlock()
		if err := g.ctx.Err(); err != nil {
			return false, err
		}
		Yield(g.ctx, func() {
			select {
			case <-room:
			case <-g.ctx.Done():
			}
		})
		if err := g.ctx.Err(); err != nil {
			return false, err
		}
		g.mu.Lock()
	}
	g.pending++
	g.mu.Unlock()
	return false, nil
}

// ownTaskLocked reports whether the calling goroutine runs a task of the
// group: the task a worker polled for it, or one it runs inline (inline).
// Called with mu held.
func (g *Group[K]) ownTaskLocked() bool {
	if g.inline[gid.Current()] > 0 {
		return true
	}
	tc := g.p.e.helper(g.ctx)
	if tc == nil {
		return false
	}
	gt, ok := userTask(tc.task).(*groupTask[K])
	return ok && gt.g == g
}

// help runs fn, a child spawned by a task of the group at the group's
// limit, on the calling goroutine in that task's place (see Group): it
// takes no place, unit or slot of its own. Like any Go, it queues nothing
// once the group's context ended or the pool's Close started.
func (g *Group[K]) help(ch int, fn func(ctx context.Context) error) {
	e := g.p.e
	err := g.ctx.Err()
	if err == nil && e.stopped.Load() {
		err = ErrClosed
	}
	if err != nil {
		if e.chans[ch].capped {
			e.release(ch) // the slot inlineSlot took
		}
		g.fail(err)
		return
	}
	t := &groupTask[K]{g: g, fn: fn, ch: ch, shared: true}
	if tc := e.helper(g.ctx); tc != nil {
		e.runInline(tc, ch, tc, t) // gives the slot back
		return
	}
	if e.chans[ch].capped {
		defer e.release(ch)
	}
	e.runHere(ch, context.Background(), t) // a guest of a goroutine outside the pool (Bits.RunHere)
}

// enterInline counts t in inline if the calling goroutine runs it as
// another task's guest rather than as the task a worker polled, and returns
// the goroutine's gid for leaveInline, or 0. It runs on t's goroutine.
func (g *Group[K]) enterInline(ctx context.Context, t *groupTask[K]) uintptr {
	if tc := taskOf(ctx); tc != nil && userTask(tc.task) == Task(t) {
		return 0 // ownTaskLocked finds it through the task context
	}
	id := gid.Current()
	g.mu.Lock()
	if g.inline == nil {
		g.inline = make(map[uintptr]int)
	}
	g.inline[id]++
	g.mu.Unlock()
	return id
}

func (g *Group[K]) leaveInline(id uintptr) {
	g.mu.Lock()
	if g.inline[id]--; g.inline[id] == 0 {
		delete(g.inline, id)
	}
	g.mu.Unlock()
}

// Wait blocks until every spawned task has ended, then cancels the group's
// context and returns the first error (see Group); or it returns ctx.Err()
// if ctx ends first, and the group goes on. From a pool task, pass its
// context: the wait then yields the worker.
func (g *Group[K]) Wait(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	g.mu.Lock()
	if g.pending != 0 {
		if g.idle == nil {
			g.idle = make(chan struct{})
		}
		idle := g.idle
		g.mu.Unlock()
		Yield(ctx, func() {
			select {
			case <-idle:
			case <-ctx.Done():
			}
		})
		select {
		case <-idle:
		default:
			return ctx.Err()
		}
	} else {
		g.mu.Unlock()
	}
	g.stop()
	g.cancel(nil)
	return g.err.Load()
}

// fail records err as the group's error if it is the first, and then
// cancels the group's context with it; it reports whether err was first.
func (g *Group[K]) fail(err error) bool {
	if err == nil || !g.err.CompareAndSwap(nil, err) {
		return false
	}
	g.cancel(err)
	return true
}

// leave ends one spawned task (its outcome recorded by fail before).
func (g *Group[K]) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending--
	g.wakeRoomLocked()
	if g.pending == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

func (g *Group[K]) wakeRoomLocked() {
	if g.room != nil {
		close(g.room)
		g.room = nil
	}
}

// groupTask runs one function of a group and records its outcome.
type groupTask[K comparable] struct {
	g      *Group[K]
	fn     func(ctx context.Context) error
	ch     int          // the channel it was spawned into: a later panic is reported as its
	shared bool         // run inline in its parent's place at the group's limit: it took no place, so it leaves none
	ctx    groupContext // the context fn receives; written by Run
}

// groupContext is the context a group's task receives: the group's
// (deadline, cancellation, values) with the pool's task handle of the run,
// so that Yield finds the task that runs, not the one that made the group.
type groupContext struct {
	context.Context                 // the group's
	task            context.Context // the context the worker passed to Run
}

// Value returns the run's task handle for the pool's key and the group
// context's value for any other.
func (c *groupContext) Value(key any) any {
	if key == (taskKey{}) {
		return c.task.Value(key)
	}
	return c.Context.Value(key)
}

func (t *groupTask[K]) Run(ctx context.Context) {
	g := t.g
	t.ctx = groupContext{Context: g.ctx, task: ctx}
	guest := g.enterInline(ctx, t)
	finished := false
	var err error
	defer func() {
		var r any
		if !finished {
			r = recover()
		}
		if guest != 0 {
			g.leaveInline(guest)
		}
		switch {
		case finished:
			g.fail(err)
		case r != nil:
			recoveredPanic(ctx)
			pe := &PanicError{Value: r, Stack: debug.Stack()}
			if !g.fail(pe) {
				g.p.e.panicked(t.ch, pe) // the group reports its first error only
			}
		default:
			if tc := taskOf(ctx); tc != nil && tc.dropped {
				g.fail(ErrDropped)
			} else {
				g.fail(ErrGoexit)
			}
		}
		if !t.shared {
			g.leave()
		}
	}()
	err = t.fn(&t.ctx)
	finished = true
}

// dropped resolves a task the pool dropped before it ran.
func (t *groupTask[K]) dropped() {
	t.g.fail(ErrDropped)
	t.g.leave()
}

// cancelled resolves a task skipped because the group's context ended.
func (t *groupTask[K]) cancelled(err error) {
	t.g.fail(err)
	t.g.leave()
}
