package smartpool_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// groupCase is one row of TestGroup_Semantics: a pool, then body, which
// drives a group and returns Wait's error.
type groupCase struct {
	name   string
	pool   func() *behavior
	body   func(t *testing.T, p *smartpool.Pool[string], env *groupEnv) error
	want   error // Wait's error (errors.Is); nil for none
	ran    int32 // tasks that ran to their end
	cancel uint64
}

// groupEnv is what a row shares with the checks after it.
type groupEnv struct {
	ran  atomic.Int32 // group tasks that ran to their end
	pins *gate        // pinning tasks on channel "pin"
}

func (e *groupEnv) done(context.Context) error { e.ran.Add(1); return nil }

// errNotCancelled is what a task returns when its context was not cancelled
// within long.
var errNotCancelled = errors.New("the task's context was not cancelled")

// cancelled waits for ctx to end, at most long.
func cancelled(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(long):
		return errNotCancelled
	}
}

// pin occupies n workers with tasks of channel "pin" until release.
func (e *groupEnv) pin(t *testing.T, p *smartpool.Pool[string], n int) {
	t.Helper()
	for range n {
		require.NoError(t, p.Submit("pin", e.pins.task("pin")))
	}
	e.pins.waitStarted(t, n)
}

func (e *groupEnv) release() { close(e.pins.release) }

// goIn runs f on its own goroutine and returns a channel closed when it
// returned.
func goIn(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	return done
}

// notYet reports whether done is still open: used only after the event that
// would have closed it, if it were going to close without waiting, had
// every chance to (the call under test returned already or is blocked).
func notYet(done <-chan struct{}) bool {
	select {
	case <-done:
		return false
	default:
		return true
	}
}

func oneLevel(workers int, cs ...ch) func() *behavior {
	return func() *behavior {
		return &behavior{workers: workers, levels: [][]ch{{fifo("pin")}, cs}}
	}
}

// Group semantics, as errgroup.WithContext and conc users expect them.
func TestGroup_Semantics(t *testing.T) {
	var bounded *channels.Bounded // the Bounded of the row that builds one
	cases := []groupCase{
		{
			name: "all succeed",
			pool: oneLevel(2, fifo("a")),
			body: func(t *testing.T, p *smartpool.Pool[string], env *groupEnv) error {
				return smartpool.Scope(context.Background(), p, func(g *smartpool.Group[string]) {
					for range 20 {
						g.Go("a", env.done)
					}
				})
			},
			ran: 20,
		},
		{
			name: "an error cancels the running siblings, with the error as cause",
			pool: oneLevel(3, fifo("a")),
			body: func(t *testing.T, p *smartpool.Pool[string], env *groupEnv) error {
				return smartpool.Scope(context.Background(), p, func(g *smartpool.Group[string]) {
					started := newGate()
					for range 2 {
						g.Go("a", func(ctx context.Context) error {
							started.started <- "sibling"
							if err := cancelled(ctx); err != nil {
								return err
							}
							if !errors.Is(context.Cause(ctx), errBoom) {
								return errors.New("cause is not the first error")
							}
							env.ran.Add(1)
							return ctx.Err()
						})
					}
					started.waitStarted(t, 2)
					g.Go("a", func(context.Context) error { return errBoom })
				})
			},
			want: errBoom,
			ran:  2,
		},
		{
			name: "the parent's cancellation reaches running tasks",
			pool: oneLevel(2, fifo("a")),
			body: func(t *testing.T, p *smartpool.Pool[string], env *groupEnv) error {
				ctx, cancel := context.WithCancel(context.Background())
				started := newGate()
				return smartpool.Scope(ctx, p, func(g *smartpool.Group[string]) {
					for range 2 {
						g.Go("a", func(ctx context.Context) error {
							started.started <- "task"
							if err := cancelled(ctx); err != nil {
								return err
							}
							env.ran.Add(1)
							return nil // a task that stops cleanly is no error
						})
					}
					started.waitStarted(t, 2)
					cancel()
				})
			},
			ran: 2,
		},
		{
			name: "queued tasks of a cancelled group are skipped and counted",
			pool: oneLevel(1, fifo("a")),
			body: func(t *testing.T, p *smartpool.Pool[string], env *groupEnv) error {
				env.pin(t, p, 1)
				ctx, cancel := context.WithCancel(context.Background())
				g := smartpool.NewGroup(ctx, p)
				for range 5 {
					g.Go("a", env.done)
				}
				cancel()
				env.release()
				return g.Wait(context.Background())
			},
			want:   context.Canceled,
			cancel: 5,
		},
		{
			name: "the first error skips the queued tasks",
			pool: oneLevel(1, fifo("a")),
			body: func(t *testing.T, p *smartpool.Pool[string], env *groupEnv) error {
				return smartpool.Scope(context.Background(), p, func(g *smartpool.Group[string]) {
					env.pin(t, p, 1)
					g.Go("a", func(context.Context) error { return errBoom })
					for range 4 {
						g.Go("a", env.done)
					}
					env.release()
				})
			},
			want:   errBoom,
			cancel: 4,
		},
		{
			name: "SetLimit bounds the tasks in flight",
			pool: oneLevel(4, fifo("a")),
			body: func(t *testing.T, p *smartpool.Pool[string], env *groupEnv) error {
				var now, most atomic.Int32
				err := smartpool.Scope(context.Background(), p, func(g *smartpool.Group[string]) {
					g.SetLimit(2)
					for range 20 {
						g.Go("a", func(ctx context.Context) error {
							n := now.Add(1)
							for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
							}
							_ = smartpool.Sleep(ctx, time.Millisecond) // overlap, if the limit let it
							now.Add(-1)
							env.ran.Add(1)
							return nil
						})
					}
				})
				if most.Load() > 2 {
					return errors.New("more than 2 tasks in flight")
				}
				return err
			},
			ran: 20,
		},
		{
			name: "Go waits for a unit of a full pool instead of failing",
			pool: func() *behavior {
				return &behavior{workers: 2, limit: 1, levels: [][]ch{{fifo("pin")}, {fifo("a")}}}
			},
			body: func(t *testing.T, p *smartpool.Pool[string], env *groupEnv) error {
				env.pin(t, p, 1) // holds the only unit
				g := smartpool.NewGroup(context.Background(), p)
				spawned := goIn(func() { g.Go("a", env.done) })
				eventually(t, func() bool { return p.Stats().Waiting == 1 })
				if !notYet(spawned) {
					return errors.New("Go returned without a unit")
				}
				env.release()
				waitFor(t, spawned, "Go to get a unit")
				return g.Wait(context.Background())
			},
			ran: 1,
		},
		{
			name: "Go waits for room in a full Bounded instead of failing",
			pool: func() *behavior {
				bounded = channels.NewBounded(1)
				return oneLevel(1, ch{key: "a", c: bounded, coc: true})()
			},
			body: func(t *testing.T, p *smartpool.Pool[string], env *groupEnv) error {
				env.pin(t, p, 1)
				g := smartpool.NewGroup(context.Background(), p)
				g.Go("a", env.done) // fills the channel
				spawned := goIn(func() { g.Go("a", env.done) })
				eventually(t, func() bool { return bounded.Waiting() == 1 })
				if !notYet(spawned) {
					return errors.New("Go returned with no room")
				}
				env.release()
				waitFor(t, spawned, "Go to get room")
				return g.Wait(context.Background())
			},
			ran: 2,
		},
		{
			name: "Go waiting for room gives up when the group's context ends",
			pool: oneLevel(2, fifo("a")),
			body: func(t *testing.T, p *smartpool.Pool[string], env *groupEnv) error {
				ctx, cancel := context.WithCancel(context.Background())
				g := smartpool.NewGroup(ctx, p)
				g.SetLimit(1)
				hold, started := make(chan struct{}), make(chan struct{})
				g.Go("a", func(context.Context) error { close(started); <-hold; env.ran.Add(1); return nil })
				waitFor(t, started, "the first task")
				spawned := goIn(func() { g.Go("a", env.done) })
				cancel()
				waitFor(t, spawned, "Go to give up")
				close(hold)
				return g.Wait(context.Background())
			},
			want: context.Canceled,
			ran:  1,
		},
		{
			name: "TryGo refuses at a full group, pool or channel and records nothing",
			pool: func() *behavior {
				return &behavior{workers: 1, limit: 2, levels: [][]ch{{fifo("pin")}, {{key: "a", c: channels.NewBounded(1), coc: true}, fifo("b")}}}
			},
			body: func(t *testing.T, p *smartpool.Pool[string], env *groupEnv) error {
				env.pin(t, p, 1) // one unit of 2
				g := smartpool.NewGroup(context.Background(), p)
				if !g.TryGo("a", env.done) { // the second unit; the channel is full
					return errors.New("TryGo refused with room")
				}
				if g.TryGo("b", env.done) {
					return errors.New("TryGo accepted at the pool's limit")
				}
				require.NoError(t, p.SetLimit(3))
				if g.TryGo("a", env.done) {
					return errors.New("TryGo accepted into a full Bounded")
				}
				g.SetLimit(1)
				if g.TryGo("b", env.done) {
					return errors.New("TryGo accepted at the group's limit")
				}
				env.release()
				return g.Wait(context.Background())
			},
			ran: 1,
		},
		{
			name: "the values of the group's context reach its tasks",
			pool: oneLevel(1, fifo("a")),
			body: func(t *testing.T, p *smartpool.Pool[string], env *groupEnv) error {
				type traceKey struct{}
				ctx := context.WithValue(context.Background(), traceKey{}, "trace-1")
				return smartpool.Scope(ctx, p, func(g *smartpool.Group[string]) {
					g.Go("a", func(ctx context.Context) error {
						if ctx.Value(traceKey{}) != "trace-1" {
							return errors.New("value lost")
						}
						env.ran.Add(1)
						return nil
					})
				})
			},
			ran: 1,
		},
		{
			name: "a submit error fails the group",
			pool: oneLevel(1, fifo("a")),
			body: func(t *testing.T, p *smartpool.Pool[string], env *groupEnv) error {
				g := smartpool.NewGroup(context.Background(), p)
				g.Go("nope", env.done)
				g.Go("a", nil)
				if g.TryGo("nope", env.done) {
					return errors.New("TryGo accepted an unknown key")
				}
				return g.Wait(context.Background())
			},
			want: smartpool.ErrUnknownKey,
		},
		{
			name: "Scope inside a task, one worker, SetLimit: the waits yield",
			pool: oneLevel(1, fifo("a")),
			body: func(t *testing.T, p *smartpool.Pool[string], env *groupEnv) error {
				bounded, cancel := context.WithTimeout(context.Background(), long)
				defer cancel()
				_, err := goF(smartpool.Go(p, "a", func(ctx context.Context) (int, error) {
					return 0, smartpool.Scope(ctx, p, func(g *smartpool.Group[string]) {
						g.SetLimit(2)
						for range 10 {
							g.Go("a", env.done)
						}
					})
				})).Wait(bounded)
				return err
			},
			ran: 10,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := start(t, c.pool())
			env := &groupEnv{pins: newGate()}
			err := c.body(t, o.Pool(), env)
			if c.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, c.want)
			}
			r := closeWithin(t, o, long)
			require.Equal(t, c.ran, env.ran.Load(), "tasks that ran")
			var cancelled uint64
			for _, k := range []string{"a", "b"} {
				if st, ok := r.Channel(k); ok {
					cancelled += st.Cancelled
				}
			}
			require.Equal(t, c.cancel, cancelled, "tasks cancelled")
		})
	}
}

// A Scope whose body panics cancels its group, waits for the tasks it
// spawned and panics on: no task outlives the scope.
func TestGroup_ScopeBodyPanics(t *testing.T) {
	o := start(t, &behavior{workers: 2, levels: [][]ch{{fifo("a")}}})
	var ended atomic.Bool
	started := make(chan struct{})
	func() {
		defer func() { require.Equal(t, "body", recover()) }()
		_ = smartpool.Scope(context.Background(), o.Pool(), func(g *smartpool.Group[string]) {
			g.Go("a", func(ctx context.Context) error {
				close(started)
				err := cancelled(ctx)
				ended.Store(true)
				return err
			})
			<-started
			panic("body")
		})
	}()
	require.True(t, ended.Load(), "Scope returned before its task ended")
}
