package smartpool

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"

	"github.com/smartpool-go/smartpool/internal/engine"
	"github.com/smartpool-go/smartpool/internal/gid"
)

// Group is a scope of tasks spawned into a pool's channels, in the manner of
// errgroup.WithContext and conc's context pools. Create one with NewGroup,
// or use Scope. It is safe for concurrent use and must not be copied; as
// with errgroup, a Go that starts a round must happen before the Wait that
// ends it.
//
// Context: every task receives a context derived from the one given to
// NewGroup (Context returns it), with its values, deadline and
// cancellation, and the pool's task handle (so Yield and the waits work in
// it). It is cancelled when that context ends, when a task fails (an
// error, a panic, runtime.Goexit, a drop; not with CollectErrors), when
// the pool's Close gives up waiting, and when Wait returns; context.Cause
// gives the first error. A task still queued then never runs (counted
// Cancelled); Go on a done group queues nothing. A task's Handle
// (WithHandle) cancels it alone, as context.Canceled.
//
// Errors: by default, as errgroup's, the first error cancels the group and
// Wait returns it once every task has ended: a task's error, a panic (as
// *PanicError; every panic also goes to Config.PanicHandler), ErrGoexit,
// ErrDropped, a submit error, or the context's error. With CollectErrors,
// as conc's default, no error cancels anything and Wait returns them all.
//
// Room: SetLimit bounds the group's tasks in flight (queued, running or
// yielded), as errgroup's SetLimit bounds its goroutines. Go also needs a
// unit of Config.Limit and room in a full channels.Bounded; TryGo never
// waits for any of them.
//
// Spawning from inside never deadlocks, where errgroup's crawler does: a
// task of the group (or, at the pool's limit or a full Bounded, any task of
// the pool) that finds no room runs the child itself, at once, in its own
// place, and Go returns when the child ended ("help while you wait"). No
// limit is exceeded: the parent does not run meanwhile. The child counts in
// its channel's stats and its outcome is the group's as any child's;
// inline, it keeps no priority of its own. Any other caller waits in Go
// for room while the group's context lasts; from a pool task the wait
// yields the worker (see Yield), so a Group is safe at any pool size.
//
// Reuse: Wait ends a round and cancels its context; the next Go starts a
// round with a new context, unless the round failed in the default mode:
// then, as in errgroup, the first error stays and every Wait returns it.
// With CollectErrors each Wait returns its own round's errors.
type Group[K comparable] struct {
	p      *Pool[K]
	parent context.Context // NewGroup's; each round's context derives from it

	mu      sync.Mutex
	r       *round        // the round in progress, or the last one; guarded by mu
	collect bool          // CollectErrors was called; guarded by mu
	pending int           // tasks spawned and not ended; guarded by mu
	limit   int           // SetLimit's bound on pending, -1 for none; guarded by mu
	idle    chan struct{} // closed when pending drops to 0 while someone waits; guarded by mu
	room    chan struct{} // closed when pending drops or the limit changes while a Go waits; guarded by mu
	// inline counts, by goroutine (gid), the group's tasks running there
	// other than the task a worker polled (those ownTask finds through the
	// goroutine's task context): tasks run inline by a parent (internal/engine/help.go) or
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
	g := &Group[K]{p: p, parent: ctx, limit: -1}
	g.r = g.newRound()
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
			g.current().cancel(errScopePanicked)
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
// or yielded) to n, as errgroup's SetLimit does: a negative n removes the
// bound, and 0, as in errgroup, leaves no room: every Go from outside the
// group's tasks waits (TryGo reports false) until SetLimit raises the
// bound or the group's context ends, where errgroup's would wait for ever.
// Unlike errgroup's, it may be called at any time: a raised bound lets
// waiting Go calls in at once; a lowered one stops nothing that was
// spawned, so SetLimit(0) pauses the group's spawning from outside. A task
// of the group that calls Go at the limit runs the child itself in its own
// place instead of waiting (see Group), so tasks that spawn tasks never
// deadlock on the limit, whatever n, 0 included.
func (g *Group[K]) SetLimit(n int) {
	g.mu.Lock()
	g.limit = max(n, -1)
	g.wakeRoomLocked()
	g.mu.Unlock()
}

// Go submits fn to the channel named key. Without room (see Group), a task
// of the group, or of the pool at its limit or a full Bounded, runs fn
// itself and Go returns once fn ended; any other caller waits for room
// while the group's context lasts. A submit error, or the context's error,
// becomes the group's error and fn does not run. opts work as Submit's;
// WithContext is refused with ErrOption, since a group's tasks live by its
// context; a Handle's Cancel ends fn as if it returned context.Canceled.
func (g *Group[K]) Go(key K, fn func(ctx context.Context) error, opts ...Option) {
	g.spawn(key, fn, fn, true, opts)
}

// TryGo submits fn to the channel named key only if there is room at once:
// in the group (SetLimit), in the pool's in-flight limit and in the
// channel. It reports whether fn was queued, like errgroup's TryGo; it
// never waits and never runs fn itself, from a task of the group or not. A
// refusal for lack of room leaves the group as it was, so the caller may try
// again; any other refusal (ErrNilTask, ErrClosed, ErrUnknownKey, the
// group's context ended) also becomes the group's error and cancels it, so
// false with the group's context still live means "no room".
// opts are Go's; WithHandle(&h) fills h exactly when TryGo reports true (it
// never runs fn itself).
func (g *Group[K]) TryGo(key K, fn func(ctx context.Context) error, opts ...Option) bool {
	return g.spawn(key, fn, fn, false, opts)
}

// errNoRoom is enter's refusal when the group is at its limit.
var errNoRoom = errors.New("no room in the group")

// spawn is Go (wait) and TryGo; origin is the function the unread log
// names (internal/engine/unread.go): fn, or the one a Results wraps in fn.
func (g *Group[K]) spawn(key K, fn func(ctx context.Context) error, origin any, wait bool, opts []Option) bool {
	var t *groupTask[K]
	pin := g.p.e.PinKey(func() (int, error) { // see "Reshaping", 6 (internal/engine/reshape.go), and keyPin
		i, err := g.p.find(key)
		if t != nil {
			t.ch = i // found again after submitContext's wait for a unit: t is pushed there next
		}
		return i, err
	})
	defer pin.Unpin()
	ch, err := pin.Find()
	switch {
	case fn == nil:
		g.failed(g.current(), -1, origin, ErrNilTask)
		return false
	case err != nil:
		g.failed(g.current(), -1, origin, err) // the error names the key
		return false
	}
	so, err := engine.Gather(Order{}, opts)
	if err == nil && so.Ctx != nil {
		err = &engine.OptionError{What: "WithContext in Group.Go: a group's tasks live by the group's context"}
	}
	if err != nil {
		g.failed(g.current(), ch, origin, g.p.named(key, err))
		return false
	}
	r, ch, help, err := g.enter(ch, wait, &pin)
	switch {
	case err == errNoRoom:
		return false
	case errors.Is(err, ErrClosed): // its channel was removed while it waited for room
		g.failed(r, -1, origin, err)
		return false
	case err != nil:
		g.failContext(r, err)
		return false
	case help:
		g.help(r, ch, fn, origin, &pin)
		return true
	}
	t = &groupTask[K]{g: g, r: r, fn: fn, origin: origin, ch: ch}
	err = g.p.named(key, g.p.e.SubmitContext(r.ctx, ch, t, engine.SubmitMode{Order: so.Order, Wait: wait, Room: wait, Handle: so.Handle}, &pin))
	switch {
	case err == nil:
		return true
	case !wait && errors.Is(err, ErrFull):
		g.leave()
	case r.ctx.Err() != nil && errors.Is(err, r.ctx.Err()):
		g.failContext(r, err)
		g.leave()
	default:
		g.failed(r, ch, origin, err) // refused: ErrFull, ErrClosed, a bad option
		g.leave()
	}
	return false
}

// enter takes a place for a new task under the group's limit, in the round
// it returns (starting one if the last has ended). At the limit, it refuses
// with errNoRoom unless wait; it reports help, taking no place, to a caller
// that runs a task of the group, which then runs the new task itself (see
// Group); any other caller waits for a place until the round's context
// ends: unpinned (see keyPin), so it returns ch, the index of the caller's
// channel, found again after a wait, or ErrClosed if it was removed.
func (g *Group[K]) enter(ch int, wait bool, pin *engine.KeyPin) (r *round, _ int, help bool, err error) {
	g.mu.Lock()
	r = g.roundLocked()
	tried := false // to help: a capped channel may have no slot (internal/engine/help.go)
	for g.limit >= 0 && g.pending >= g.limit {
		if !wait {
			g.mu.Unlock()
			return r, ch, false, errNoRoom
		}
		if !tried && g.ownTaskLocked(r.ctx) {
			tried = true
			g.mu.Unlock()
			if g.p.e.InlineSlot(ch) {
				return r, ch, true, nil
			}
			g.mu.Lock()
			continue
		}
		if g.room == nil {
			g.room = make(chan struct{})
		}
		room := g.room
		g.mu.Unlock()
		if err := r.ctx.Err(); err != nil {
			return r, ch, false, err
		}
		if ch, err = pin.Unpinned(ch, func() error {
			Yield(r.ctx, func() {
				select {
				case <-room:
				case <-r.ctx.Done():
				}
			})
			return r.ctx.Err()
		}); err != nil {
			return r, ch, false, err
		}
		tried = false // a capped channel's slot may have come free meanwhile
		g.mu.Lock()
	}
	g.pending++
	g.mu.Unlock()
	return r, ch, false, nil
}

// ownTaskLocked reports whether the calling goroutine runs a task of the
// group: the task a worker polled for it, or one it runs inline (inline).
// Called with mu held.
func (g *Group[K]) ownTaskLocked(ctx context.Context) bool {
	if g.inline[gid.Current()] > 0 {
		return true
	}
	tc := g.p.e.Helper(ctx)
	if tc == nil {
		return false
	}
	gt, ok := engine.UserTask(tc.Task).(*groupTask[K])
	return ok && gt.g == g
}

// help runs fn, a child spawned by a task of the group at the group's
// limit, on the calling goroutine in that task's place (see Group): it
// takes no place, unit or slot of its own. Like any Go, it queues nothing
// once the round's context ended or the pool's Close started. The run
// counts in ch's held, in place of pin, the caller's (see keyPin).
func (g *Group[K]) help(r *round, ch int, fn func(ctx context.Context) error, origin any, pin *engine.KeyPin) {
	e := g.p.e
	err := r.ctx.Err()
	if err == nil && (e.Stopping() || !e.HoldUnlessRemoving(ch)) { // a removal of ch started (internal/engine/hold.go)
		err = ErrClosed
	}
	if err == nil {
		pin.HeldInline() // held in ch until the run ends: no other removal waits for it
	}
	if err != nil {
		if e.Chans[ch].Capped {
			e.Release(ch) // the slot inlineSlot took
		}
		if err == ErrClosed {
			g.fail(r, err)
		} else {
			g.failContext(r, err)
		}
		return
	}
	t := &groupTask[K]{g: g, r: r, fn: fn, origin: origin, ch: ch, shared: true}
	if tc := e.Helper(r.ctx); tc != nil {
		e.RunInline(tc, ch, tc, e.Observed(r.ctx, ch, t)) // gives the slot back
		return
	}
	if e.Chans[ch].Capped {
		defer e.Release(ch)
	}
	e.RunHere(ch, context.Background(), e.Observed(r.ctx, ch, t)) // a guest of a goroutine outside the pool (Bits.RunHere)
}

// enterInline counts t in inline if the calling goroutine runs it as
// another task's guest rather than as the task a worker polled, and returns
// the goroutine's gid for leaveInline, or 0. It runs on t's goroutine.
func (g *Group[K]) enterInline(ctx context.Context, t *groupTask[K]) uintptr {
	if tc := engine.TaskOf(ctx); tc != nil && engine.UserTask(tc.Task) == Task(t) {
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

// Wait blocks until every spawned task has ended, then ends the round: it
// cancels the round's context and returns its first error, or with
// CollectErrors all its errors (see Group). It returns ctx.Err() instead if
// ctx ends first, and the round goes on. Called from a pool task's
// goroutine, whatever ctx, the wait yields the worker (see Yield). A
// failure no Wait reads is logged at Warn once the Group is collected or
// the pool has closed.
func (g *Group[K]) Wait(ctx context.Context) error { return g.wait(ctx, nil) }

// wait is Wait; if the round ends, it calls end with mu held, before the
// round's context is cancelled, so that Results takes the round's values
// in the same step that ends it (see Results).
func (g *Group[K]) wait(ctx context.Context, end func()) error {
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
		g.mu.Lock()
	}
	r := g.r
	r.ended = true
	if end != nil {
		end()
	}
	g.mu.Unlock()
	r.stop()
	r.cancel(nil)
	err := r.result()
	r.read()
	return err
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
	r      *round // the round it belongs to
	fn     func(ctx context.Context) error
	origin any          // the function the unread log names: fn, or the user's function a Results wrapped in fn
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
	started         context.Context // what Config.Observe's TaskObserver.Start returned, looked up first; nil without
}

// Value returns the run's task handle for the pool's key and the group
// context's value for any other, the observer's values first.
func (c *groupContext) Value(key any) any {
	if key == (engine.TaskKey{}) {
		return c.task.Value(key)
	}
	if c.started != nil {
		if v := c.started.Value(key); v != nil {
			return v
		}
	}
	return c.Context.Value(key)
}

// RunObserved runs t for a pool with an observer: its function's context
// looks values up in started first (engine.ObservedRunner).
func (t *groupTask[K]) RunObserved(ctx, started context.Context) {
	t.run(ctx, started)
}

func (t *groupTask[K]) Run(ctx context.Context) { t.run(ctx, nil) }

func (t *groupTask[K]) run(ctx, started context.Context) {
	g := t.g
	t.ctx = groupContext{Context: t.r.ctx, task: ctx, started: started}
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
			g.failed(t.r, t.ch, t.origin, err)
		case r != nil:
			pe := &PanicError{Value: r, Stack: debug.Stack()}
			recoveredPanic(ctx, pe)
			g.failed(t.r, t.ch, t.origin, pe)
		default:
			if tc := engine.TaskOf(ctx); tc != nil && tc.Dropped {
				g.fail(t.r, ErrDropped)
			} else {
				g.failed(t.r, t.ch, t.origin, ErrGoexit)
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
func (t *groupTask[K]) Dropped() {
	t.g.fail(t.r, ErrDropped)
	t.g.leave()
}

// cancelled resolves a task skipped because the round's context ended.
func (t *groupTask[K]) Cancelled(err error) {
	t.g.failContext(t.r, err)
	t.g.leave()
}

// CancelledByHandle resolves a task a Handle cancelled before it started:
// as if fn had returned context.Canceled without running (see WithHandle).
// It is the task's own error, so unlike the context's (failContext) each
// cancelled task records one, in CollectErrors mode too.
func (t *groupTask[K]) CancelledByHandle() {
	t.g.fail(t.r, context.Canceled)
	t.g.leave()
}
