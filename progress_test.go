package smartpool_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// crawl is the errgroup crawler: every page spawns two children until
// depth, each through spawn, and never waits for them. It counts the pages
// that ran and the most that ran user code at once (a page waiting in spawn
// does not count).
type crawl struct {
	depth  int
	spawn  func(fn func(ctx context.Context) error)
	check  func() error // called by every page as it starts, if set
	ran    atomic.Int32
	all    chan struct{} // closed by the last page to end
	active atomic.Int32
	most   atomic.Int32
	bad    atomic.Value // the first error check returned
}

func (c *crawl) pages() int32 { return 1<<(c.depth+1) - 1 }

func (c *crawl) enter() {
	n := c.active.Add(1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
}

func (c *crawl) page(d int) func(ctx context.Context) error {
	return func(context.Context) error {
		c.enter()
		if c.check != nil {
			if err := c.check(); err != nil {
				c.bad.CompareAndSwap(nil, err)
			}
		}
		if d < c.depth {
			for range 2 {
				c.active.Add(-1)
				c.spawn(c.page(d + 1))
				c.enter()
			}
		}
		c.active.Add(-1)
		if c.ran.Add(1) == c.pages() {
			close(c.all)
		}
		return nil
	}
}

// withinLong waits for done for at most long. On a hang it dumps every
// goroutine, calls unstick (which must let the stuck tasks end) and fails.
func withinLong(t *testing.T, done <-chan struct{}, what string, unstick func()) {
	t.Helper()
	select {
	case <-done:
		return
	case <-time.After(long):
	}
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	unstick()
	t.Fatalf("%s hung for %v\n%s", what, long, buf.String())
}

// The errgroup crawler shape (depth 5, two children a page) never hangs, at
// every wait for room a task can reach, on a one- and a two-worker pool, and
// keeps every limit: the group's, the pool's in-flight limit, a full
// Bounded's capacity, the workers.
func TestProgress_Crawler(t *testing.T) {
	type shape struct {
		name  string
		limit int // Config.Limit
		run   func(t *testing.T, p *smartpool.Pool[string], bnd *channels.Bounded, c *crawl, ctx context.Context) (wait func() error)
		most  int // the most pages running user code at once, at most (and at most the workers)
	}
	shapes := []shape{
		{
			name: "Group.Go under SetLimit(2)",
			run: func(t *testing.T, p *smartpool.Pool[string], _ *channels.Bounded, c *crawl, ctx context.Context) func() error {
				g := smartpool.NewGroup(ctx, p)
				g.SetLimit(2)
				c.spawn = func(fn func(context.Context) error) { g.Go("a", fn) }
				g.Go("a", c.page(0))
				return func() error { return g.Wait(context.Background()) }
			},
			most: 2,
		},
		{
			name:  "Group.Go at Config.Limit 2",
			limit: 2,
			run: func(t *testing.T, p *smartpool.Pool[string], _ *channels.Bounded, c *crawl, ctx context.Context) func() error {
				g := smartpool.NewGroup(ctx, p)
				c.spawn = func(fn func(context.Context) error) { g.Go("a", fn) }
				g.Go("a", c.page(0))
				return func() error { return g.Wait(context.Background()) }
			},
			most: 2,
		},
		{
			name:  "WithContext at Config.Limit 2",
			limit: 2,
			run: func(t *testing.T, p *smartpool.Pool[string], _ *channels.Bounded, c *crawl, ctx context.Context) func() error {
				var failed atomic.Value
				c.spawn = func(fn func(context.Context) error) {
					if err := p.Submit("a", func(ctx context.Context) { _ = fn(ctx) }, smartpool.WithContext(ctx)); err != nil {
						failed.CompareAndSwap(nil, err)
					}
				}
				c.spawn(c.page(0))
				return func() error {
					select {
					case <-c.all:
					case <-ctx.Done(): // the test gave up: withinLong fails it
						return ctx.Err()
					}
					err, _ := failed.Load().(error)
					return err
				}
			},
			most: 2,
		},
		{
			name: "Bounded(2).Submit",
			run: func(t *testing.T, p *smartpool.Pool[string], bnd *channels.Bounded, c *crawl, ctx context.Context) func() error {
				var failed atomic.Value
				c.spawn = func(fn func(context.Context) error) {
					if err := bnd.Submit(func(ctx context.Context) { _ = fn(ctx) }, smartpool.WithContext(ctx)); err != nil {
						failed.CompareAndSwap(nil, err)
					}
				}
				c.check = func() error {
					if n := bnd.Len(); n > 2 {
						return fmt.Errorf("the Bounded holds %d tasks", n)
					}
					return nil
				}
				c.spawn(c.page(0))
				return func() error {
					select {
					case <-c.all:
					case <-ctx.Done(): // the test gave up: withinLong fails it
						return ctx.Err()
					}
					err, _ := failed.Load().(error)
					return err
				}
			},
			most: 2,
		},
		{
			name:  "Group.Go into a Bounded(1) under SetLimit(2) at Config.Limit 3",
			limit: 3,
			run: func(t *testing.T, p *smartpool.Pool[string], _ *channels.Bounded, c *crawl, ctx context.Context) func() error {
				g := smartpool.NewGroup(ctx, p)
				g.SetLimit(2)
				c.spawn = func(fn func(context.Context) error) { g.Go("b1", fn) }
				g.Go("b1", c.page(0))
				return func() error { return g.Wait(context.Background()) }
			},
			most: 2,
		},
	}
	for _, s := range shapes {
		for _, workers := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/%d workers", s.name, workers), func(t *testing.T) {
				bnd := channels.NewBounded(2)
				o := start(t, &behavior{workers: workers, limit: s.limit, levels: [][]ch{{fifo("a"),
					{key: "b", c: bnd, coc: true}, {key: "b1", c: channels.NewBounded(1), coc: true}}}})
				p := o.Pool()
				c := &crawl{depth: 5, all: make(chan struct{})}
				if s.limit > 0 {
					c.check = func() error {
						if n := p.Stats().Admitted; n > s.limit {
							return fmt.Errorf("%d units admitted, limit %d", n, s.limit)
						}
						return nil
					}
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				wait := s.run(t, p, bnd, c, ctx)
				var err error
				withinLong(t, goIn(func() { err = wait() }), "the crawl", cancel)
				require.NoError(t, err)
				require.Equal(t, c.pages(), c.ran.Load(), "pages that ran")
				require.LessOrEqual(t, c.most.Load(), int32(min(s.most, workers)), "pages running at once")
				if bad, ok := c.bad.Load().(error); ok {
					t.Fatal(bad)
				}
				r := closeWithin(t, o, long)
				tot := r.Total()
				require.Equal(t, uint64(c.pages()), tot.Ran, "tasks counted as ran")
				require.Zero(t, tot.Panicked+tot.Goexited+tot.Dropped+tot.Cancelled, "tasks counted otherwise")
			})
		}
	}
}

// inlineAtLimit runs body as the only task of a one-place group on a
// one-worker pool, so that every Go body makes is at the group's limit and
// runs inline, and returns Wait's error and the close report.
func inlineAtLimit(t *testing.T, onPanic func(string, *smartpool.PanicError), body func(ctx context.Context, g *smartpool.Group[string]) error) (*smartpool.Report[string], error) {
	t.Helper()
	o := start(t, &behavior{workers: 1, onPanic: onPanic, levels: [][]ch{{fifo("a"), fifo("c")}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := smartpool.NewGroup(ctx, o.Pool())
	g.SetLimit(1)
	g.Go("a", func(ctx context.Context) error { return body(ctx, g) })
	var err error
	withinLong(t, goIn(func() { err = g.Wait(context.Background()) }), "the group", cancel)
	return closeWithin(t, o, long), err
}

// A child run inline at the group's limit ends as any child: its error and
// its panic become the group's (the parent goes on, its context cancelled),
// runtime.Goexit ends the parent too (ErrGoexit); each is counted in the
// child's channel, and a panic the group reports reaches the handler too,
// once.
func TestProgress_InlineOutcomes(t *testing.T) {
	var handled atomic.Int32
	onPanic := func(string, *smartpool.PanicError) { handled.Add(1) }
	counts := func(r *smartpool.Report[string], key string) [3]uint64 {
		c, _ := r.Channel(key)
		return [3]uint64{c.Ran, c.Panicked, c.Goexited}
	}

	t.Run("error", func(t *testing.T) {
		var after error
		r, err := inlineAtLimit(t, onPanic, func(ctx context.Context, g *smartpool.Group[string]) error {
			g.Go("c", func(context.Context) error { return errBoom })
			after = context.Cause(ctx) // Go returned once the child ended
			return nil
		})
		require.ErrorIs(t, err, errBoom)
		require.ErrorIs(t, after, errBoom, "the parent's context after the child failed")
		require.Equal(t, [3]uint64{1, 0, 0}, counts(r, "c"))
		require.Equal(t, [3]uint64{1, 0, 0}, counts(r, "a"))
	})
	t.Run("panic", func(t *testing.T) {
		went := false
		r, err := inlineAtLimit(t, onPanic, func(ctx context.Context, g *smartpool.Group[string]) error {
			g.Go("c", func(context.Context) error { panic("child") })
			went = true
			return nil
		})
		var pe *smartpool.PanicError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, "child", pe.Value)
		require.True(t, went, "the parent went on after its child panicked")
		require.Equal(t, [3]uint64{0, 1, 0}, counts(r, "c"))
		require.Equal(t, [3]uint64{1, 0, 0}, counts(r, "a"), "the parent is not counted as panicked")
		require.Equal(t, int32(1), handled.Load(), "panics handed to the handler")
	})
	t.Run("runtime.Goexit", func(t *testing.T) {
		went := false
		r, err := inlineAtLimit(t, onPanic, func(ctx context.Context, g *smartpool.Group[string]) error {
			g.Go("c", func(context.Context) error { runtimeGoexit(); return nil })
			went = true
			return nil
		})
		require.ErrorIs(t, err, smartpool.ErrGoexit)
		require.False(t, went, "the parent went on after its inline child called runtime.Goexit")
		require.Equal(t, [3]uint64{0, 0, 1}, counts(r, "c"))
		require.Equal(t, [3]uint64{0, 0, 1}, counts(r, "a"))
	})
	t.Run("TryGo never runs inline", func(t *testing.T) {
		var tried bool
		ran := false
		r, err := inlineAtLimit(t, onPanic, func(ctx context.Context, g *smartpool.Group[string]) error {
			tried = g.TryGo("c", func(context.Context) error { ran = true; return nil })
			return nil
		})
		require.NoError(t, err)
		require.False(t, tried || ran, "TryGo at the limit")
		require.Equal(t, [3]uint64{}, counts(r, "c"))
	})
	t.Run("nested inline children", func(t *testing.T) {
		var depth atomic.Int32
		r, err := inlineAtLimit(t, onPanic, func(ctx context.Context, g *smartpool.Group[string]) error {
			var spawn func(d int32) func(context.Context) error
			spawn = func(d int32) func(context.Context) error {
				return func(context.Context) error {
					depth.Store(max(depth.Load(), d))
					if d < 4 {
						g.Go("c", spawn(d+1))
					}
					return nil
				}
			}
			return spawn(0)(ctx)
		})
		require.NoError(t, err)
		require.Equal(t, int32(4), depth.Load())
		require.Equal(t, [3]uint64{4, 0, 0}, counts(r, "c"))
	})
}

// A task of the pool that is not a task of the group still gets its child
// run inline at the pool's limit; that child is then a task of the group:
// at the group's limit, which it fills, its own Go runs inline too, instead
// of waiting for the place it holds.
func TestProgress_InlineChildIsTaskOfItsGroup(t *testing.T) {
	o := start(t, &behavior{workers: 1, limit: 1, levels: [][]ch{{fifo("a"), fifo("c")}}})
	p := o.Pool()
	var ran atomic.Int32
	f := goF(smartpool.Go(p, "a", func(ctx context.Context) (int, error) { // holds the only unit
		return 0, smartpool.Scope(ctx, p, func(g *smartpool.Group[string]) {
			g.SetLimit(1)
			g.Go("c", func(context.Context) error { // no unit: inline, in the group's only place
				ran.Add(1)
				g.Go("c", func(context.Context) error { ran.Add(1); return nil }) // the group is full
				return nil
			})
		})
	}))
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	_, err := f.Wait(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		t.Fatalf("the task hung\n%s", buf.String())
	}
	require.NoError(t, err)
	require.Equal(t, int32(2), ran.Load())
}

// A Future's task run inline at the pool's limit resolves its Future with
// its panic, the parent that ran it is counted as ran, not panicked, and
// the panic handler hears of the child's panic once, under its channel.
func TestProgress_InlineFuturePanic(t *testing.T) {
	handled := make(chan string, 2)
	o := start(t, &behavior{workers: 1, limit: 1, onPanic: func(key string, _ *smartpool.PanicError) { handled <- key },
		levels: [][]ch{{fifo("a"), fifo("c")}}})
	p := o.Pool()
	outer := goF(smartpool.Go(p, "a", func(ctx context.Context) (error, error) {
		task, f := smartpool.NewFuture(func(context.Context) (int, error) { panic("child") })
		if err := p.SubmitTask("c", task, smartpool.WithContext(ctx)); err != nil {
			return nil, err
		}
		_, err := f.Wait(ctx)
		return err, nil
	}))
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	childErr, err := outer.Wait(ctx)
	require.NoError(t, err)
	var pe *smartpool.PanicError
	require.ErrorAs(t, childErr, &pe)
	r := closeWithin(t, o, long)
	a, _ := r.Channel("a")
	c, _ := r.Channel("c")
	require.Equal(t, [2]uint64{1, 0}, [2]uint64{a.Ran, a.Panicked}, "the parent")
	require.Equal(t, [2]uint64{0, 1}, [2]uint64{c.Ran, c.Panicked}, "the child")
	close(handled)
	var keys []string
	for k := range handled {
		keys = append(keys, k)
	}
	require.Equal(t, []string{"c"}, keys, "the panic handler's calls")
}
