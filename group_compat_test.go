package smartpool_test

// The behaviours of golang.org/x/sync/errgroup's and
// github.com/sourcegraph/conc/pool's test suites, written anew for Group
// from their documented behaviour. Where Group differs on purpose (a panic
// is an error, *PanicError, rather than re-raised by Wait; SetLimit may be
// called at any time) the case says so and checks Group's rule instead.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/stretchr/testify/require"
)

var errOne, errTwo = errors.New("group test: one"), errors.New("group test: two")

// compatPool returns a pool of four workers with one FIFO channel, "a".
func compatPool(t *testing.T) *smartpool.Pool[string] {
	return start(t, &behavior{workers: 4, levels: [][]ch{{fifo("a")}}}).Pool()
}

// waitOn is g.Wait bounded by long: a hang fails the test.
func waitOn(t *testing.T, g *smartpool.Group[string]) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	err := g.Wait(ctx)
	if ctx.Err() != nil {
		t.Fatalf("Wait did not return within %v", long)
	}
	return err
}

func returns(err error) func(context.Context) error {
	return func(context.Context) error { return err }
}

// errgroup's suite: zero group reuse, WithContext, TryGo, the Go limit and
// the cancel cause.
func TestGroup_Errgroup(t *testing.T) {
	t.Run("reuse keeps the first error", func(t *testing.T) {
		// errgroup's zero Group: Go then Wait, again and again; every Wait
		// returns the first error of the group's life.
		for _, errs := range [][]error{{}, {nil}, {errOne}, {errOne, nil}, {errOne, nil, errTwo}, {nil, errOne, nil}} {
			g := smartpool.NewGroup(context.Background(), compatPool(t))
			var first error
			for i, err := range errs {
				g.Go("a", returns(err))
				if first == nil {
					first = err
				}
				require.Equal(t, first, waitOn(t, g), "after Go %d of %v", i+1, errs)
			}
		}
	})
	t.Run("WithContext: the first error, and the context done after Wait", func(t *testing.T) {
		for _, c := range []struct {
			errs []error
			want error
		}{{nil, nil}, {[]error{nil}, nil}, {[]error{errOne}, errOne}, {[]error{errOne, nil}, errOne}} {
			g := smartpool.NewGroup(context.Background(), compatPool(t))
			ctx := g.Context()
			for _, err := range c.errs {
				g.Go("a", returns(err))
			}
			require.Equal(t, c.want, waitOn(t, g))
			require.Error(t, ctx.Err(), "the group's context is not done after Wait")
		}
	})
	t.Run("TryGo at, under and after the limit, and SetLimit(0)", func(t *testing.T) {
		const n = 42
		g := smartpool.NewGroup(context.Background(), compatPool(t))
		g.SetLimit(n)
		release := make(chan struct{})
		fn := func(context.Context) error { <-release; return nil }
		for i := range n {
			require.True(t, g.TryGo("a", fn), "TryGo %d under the limit", i)
		}
		require.False(t, g.TryGo("a", fn), "TryGo at the limit")
		close(release)
		require.NoError(t, waitOn(t, g))
		require.True(t, g.TryGo("a", fn), "TryGo after Wait: the group is reused")
		require.NoError(t, waitOn(t, g))

		g.SetLimit(1)
		hold := make(chan struct{})
		require.True(t, g.TryGo("a", func(context.Context) error { <-hold; return nil }))
		require.False(t, g.TryGo("a", fn), "TryGo at a limit of 1")
		close(hold)
		require.NoError(t, waitOn(t, g))

		g.SetLimit(0) // errgroup: every call blocks, TryGo fails
		for range 1 << 10 {
			require.False(t, g.TryGo("a", fn), "TryGo at SetLimit(0)")
		}
		require.NoError(t, waitOn(t, g))
	})
	t.Run("Go limit", func(t *testing.T) {
		const limit = 10
		g := smartpool.NewGroup(context.Background(), start(t, &behavior{workers: 16, levels: [][]ch{{fifo("a")}}}).Pool())
		g.SetLimit(limit)
		var active atomic.Int32
		for range 1<<10 + 1 {
			g.Go("a", func(context.Context) error {
				if n := active.Add(1); n > limit {
					return fmt.Errorf("saw %d active tasks; want at most %d", n, limit)
				}
				runtime.Gosched() // lets other tasks start meanwhile
				active.Add(-1)
				return nil
			})
		}
		require.NoError(t, waitOn(t, g))
	})
	t.Run("TryGo: the cause of the group's context", func(t *testing.T) {
		for _, c := range []struct {
			errs []error
			want error
		}{{nil, nil}, {[]error{nil}, nil}, {[]error{errOne}, errOne}, {[]error{errOne, nil}, errOne}} {
			g := smartpool.NewGroup(context.Background(), compatPool(t))
			ctx := g.Context()
			for _, err := range c.errs {
				g.TryGo("a", returns(err))
			}
			require.Equal(t, c.want, waitOn(t, g))
			cause := c.want
			if cause == nil {
				cause = context.Canceled
			}
			require.Equal(t, cause, context.Cause(ctx))
		}
	})
	t.Run("parallel results", func(t *testing.T) {
		// errgroup's parallel example: each task writes its own slot.
		g := smartpool.NewGroup(context.Background(), compatPool(t))
		results := make([]string, 3)
		for i, q := range []string{"web", "image", "video"} {
			g.Go("a", func(context.Context) error { results[i] = q + " result"; return nil })
		}
		require.NoError(t, waitOn(t, g))
		require.Equal(t, []string{"web result", "image result", "video result"}, results)
	})
}

// conc's pool suite: Pool, ErrorPool and ContextPool cases. conc's
// defaults (all errors, nothing cancelled) are Group's CollectErrors;
// conc's WithFailFast is Group's default.
func TestGroup_Conc(t *testing.T) {
	collecting := func(t *testing.T) *smartpool.Group[string] {
		g := smartpool.NewGroup(context.Background(), compatPool(t))
		g.CollectErrors()
		return g
	}
	t.Run("basic", func(t *testing.T) {
		g := collecting(t)
		var n atomic.Int64
		for range 100 {
			g.Go("a", func(context.Context) error { n.Add(1); return nil })
		}
		require.NoError(t, waitOn(t, g))
		require.Equal(t, int64(100), n.Load())
	})
	t.Run("is reusable", func(t *testing.T) {
		g := collecting(t)
		var n atomic.Int64
		for round := 1; round <= 2; round++ {
			for range 10 {
				g.Go("a", func(context.Context) error { n.Add(1); return nil })
			}
			require.NoError(t, waitOn(t, g))
			require.Equal(t, int64(10*round), n.Load())
		}
	})
	t.Run("no error", func(t *testing.T) {
		g := collecting(t)
		g.Go("a", returns(nil))
		require.NoError(t, waitOn(t, g))
	})
	t.Run("an error", func(t *testing.T) {
		g := collecting(t)
		g.Go("a", returns(errOne))
		require.ErrorIs(t, waitOn(t, g), errOne)
	})
	t.Run("every error", func(t *testing.T) {
		g := collecting(t)
		g.Go("a", returns(errOne))
		g.Go("a", returns(nil))
		g.Go("a", returns(errTwo))
		err := waitOn(t, g)
		require.ErrorIs(t, err, errOne)
		require.ErrorIs(t, err, errTwo)
	})
	t.Run("a panic is an error (conc re-panics in Wait)", func(t *testing.T) {
		g := collecting(t)
		for i := range 10 {
			g.Go("a", func(context.Context) error {
				if i == 5 {
					panic("fatal")
				}
				return nil
			})
		}
		var pe *smartpool.PanicError
		require.ErrorAs(t, waitOn(t, g), &pe)
		require.Equal(t, "fatal", pe.Value)
	})
	t.Run("panics do not exhaust the workers", func(t *testing.T) {
		g := collecting(t)
		for range 20 {
			g.Go("a", func(context.Context) error { panic("boom") })
		}
		err := waitOn(t, g)
		joined, ok := err.(interface{ Unwrap() []error })
		require.True(t, ok, "Wait returned %v, not every error joined", err)
		var n int
		for _, e := range joined.Unwrap() {
			var pe *smartpool.PanicError
			require.ErrorAs(t, e, &pe)
			n++
		}
		require.Equal(t, 20, n, "every panic is one of the errors")
		g.Go("a", returns(nil))
		require.NoError(t, waitOn(t, g), "the pool still runs tasks")
	})
	t.Run("reuse: each Wait returns its own round's errors", func(t *testing.T) {
		g := collecting(t)
		g.Go("a", returns(errOne))
		first := waitOn(t, g)
		require.ErrorIs(t, first, errOne)
		g.Go("a", returns(errTwo))
		second := waitOn(t, g)
		require.ErrorIs(t, second, errTwo)
		require.NotErrorIs(t, second, errOne)
		require.NotErrorIs(t, first, errTwo)
	})
	for _, limit := range []int{1, 10, 100} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			g := smartpool.NewGroup(context.Background(), start(t, &behavior{workers: 8, levels: [][]ch{{fifo("a")}}}).Pool())
			g.CollectErrors()
			g.SetLimit(limit)
			var cur atomic.Int64
			for range 100 {
				g.Go("a", func(context.Context) error {
					if n := cur.Add(1); n > int64(limit) {
						return fmt.Errorf("%d tasks at once, want at most %d", n, limit)
					}
					runtime.Gosched()
					cur.Add(-1)
					return nil
				})
			}
			require.NoError(t, waitOn(t, g))
			require.Zero(t, cur.Load())
		})
	}
	t.Run("context cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		g := smartpool.NewGroup(ctx, compatPool(t))
		g.CollectErrors()
		started := make(chan struct{})
		g.Go("a", func(ctx context.Context) error { close(started); return waitDone(ctx) })
		waitFor(t, started, "the task")
		cancel()
		require.ErrorIs(t, waitOn(t, g), context.Canceled)
	})
	t.Run("context timed out", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		g := smartpool.NewGroup(ctx, compatPool(t))
		g.CollectErrors()
		g.Go("a", waitDone)
		require.ErrorIs(t, waitOn(t, g), context.DeadlineExceeded)
	})
	t.Run("return before the context ends", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), long)
		defer cancel()
		g := smartpool.NewGroup(ctx, compatPool(t))
		g.CollectErrors()
		g.Go("a", returns(nil))
		require.NoError(t, waitOn(t, g))
	})
	t.Run("cancel on error (conc's WithCancelOnError, Group's default)", func(t *testing.T) {
		g := smartpool.NewGroup(context.Background(), compatPool(t))
		started := make(chan struct{})
		var cause error
		g.Go("a", func(ctx context.Context) error {
			close(started)
			err := waitDone(ctx)
			cause = context.Cause(ctx)
			return err
		})
		waitFor(t, started, "the sibling")
		g.Go("a", returns(errOne))
		require.ErrorIs(t, waitOn(t, g), errOne)
		require.Equal(t, errOne, cause, "the sibling's context was cancelled by the error")
	})
	t.Run("no cancel on error (conc's default, CollectErrors)", func(t *testing.T) {
		p := compatPool(t)
		g := smartpool.NewGroup(context.Background(), p)
		g.CollectErrors()
		started, release := make(chan struct{}), make(chan struct{})
		var siblingCancelled atomic.Bool
		g.Go("a", func(ctx context.Context) error {
			close(started)
			<-release
			siblingCancelled.Store(ctx.Err() != nil) // the error must not have cancelled it
			return nil
		})
		waitFor(t, started, "the sibling")
		g.Go("a", returns(errOne))
		// The erring task's Run recorded its error before the pool counted it.
		eventually(t, func() bool { s, _ := p.Stats().Channel("a"); return s.Ran == 1 })
		close(release)
		err := waitOn(t, g)
		require.ErrorIs(t, err, errOne)
		require.NotErrorIs(t, err, context.Canceled)
		require.False(t, siblingCancelled.Load(), "the error cancelled the sibling")
	})
	t.Run("first error only (conc's WithFirstError, Group's default)", func(t *testing.T) {
		g := smartpool.NewGroup(context.Background(), compatPool(t))
		first := make(chan struct{})
		g.Go("a", func(context.Context) error { defer close(first); return errOne })
		g.Go("a", func(ctx context.Context) error {
			<-first
			<-ctx.Done() // cancelled by errOne once recorded: no sleep needed
			return errTwo
		})
		err := waitOn(t, g)
		require.ErrorIs(t, err, errOne)
		require.NotErrorIs(t, err, errTwo)
	})
	t.Run("fail fast (conc's WithFailFast, Group's default)", func(t *testing.T) {
		g := smartpool.NewGroup(context.Background(), compatPool(t))
		g.Go("a", returns(errOne))
		g.Go("a", waitDone)
		err := waitOn(t, g)
		require.ErrorIs(t, err, errOne)
		require.NotErrorIs(t, err, context.Canceled)
	})
	t.Run("cancel on error and panic", func(t *testing.T) {
		g := smartpool.NewGroup(context.Background(), compatPool(t))
		var cancelled atomic.Int64
		started := make(chan struct{}, 2)
		for range 2 {
			g.Go("a", func(ctx context.Context) error {
				started <- struct{}{}
				err := waitDone(ctx)
				cancelled.Add(1)
				return err
			})
		}
		<-started
		<-started
		g.Go("a", func(context.Context) error { panic("abort!") })
		var pe *smartpool.PanicError
		require.ErrorAs(t, waitOn(t, g), &pe)
		require.EqualValues(t, 2, cancelled.Load())
	})
}

// waitDone waits for ctx to end, at most long, and returns its error.
func waitDone(ctx context.Context) error {
	if err := cancelled(ctx); err != nil {
		return err
	}
	return ctx.Err()
}

// SetLimit(0) blocks every Go from outside the group's tasks, as
// errgroup's does, until the limit is raised or the group's context ends; a
// task of the group spawning at 0 runs the child itself and never hangs; a
// negative limit removes the bound.
func TestGroup_SetLimitZero(t *testing.T) {
	t.Run("Go from outside waits until SetLimit raises the bound", func(t *testing.T) {
		g := smartpool.NewGroup(context.Background(), compatPool(t))
		g.SetLimit(0)
		var ran atomic.Bool
		spawned := goIn(func() { g.Go("a", func(context.Context) error { ran.Store(true); return nil }) })
		require.False(t, g.TryGo("a", returns(nil)), "TryGo at 0")
		select {
		case <-spawned:
			t.Fatal("Go returned at SetLimit(0)")
		case <-time.After(50 * time.Millisecond): // a bounded check that it waits
		}
		g.SetLimit(1)
		waitFor(t, spawned, "Go after SetLimit(1)")
		require.NoError(t, waitOn(t, g))
		require.True(t, ran.Load())
	})
	t.Run("Go from outside gives up when the context ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		g := smartpool.NewGroup(ctx, compatPool(t))
		g.SetLimit(0)
		spawned := goIn(func() { g.Go("a", returns(nil)) })
		cancel()
		waitFor(t, spawned, "Go after the context ended")
		require.ErrorIs(t, waitOn(t, g), context.Canceled)
	})
	t.Run("a task of the group spawning at 0 runs its children itself", func(t *testing.T) {
		g := smartpool.NewGroup(context.Background(), compatPool(t))
		var ran atomic.Int32
		started, release := make(chan struct{}), make(chan struct{})
		g.Go("a", func(context.Context) error {
			close(started)
			<-release
			for range 3 {
				g.Go("a", func(context.Context) error { ran.Add(1); return nil })
			}
			return nil
		})
		waitFor(t, started, "the parent")
		g.SetLimit(0)
		close(release)
		require.NoError(t, waitOn(t, g))
		require.EqualValues(t, 3, ran.Load())
	})
	t.Run("a negative limit removes the bound", func(t *testing.T) {
		g := smartpool.NewGroup(context.Background(), compatPool(t))
		g.SetLimit(0)
		g.SetLimit(-1)
		release := make(chan struct{})
		for range 100 {
			require.True(t, g.TryGo("a", func(context.Context) error { <-release; return nil }))
		}
		close(release)
		require.NoError(t, waitOn(t, g))
	})
}

// Context is the tasks' context, errgroup.WithContext's second result: it
// carries the parent's values, is cancelled by the first error with it as
// cause, and after a clean Wait the next round gets a live one.
func TestGroup_Context(t *testing.T) {
	type key struct{}
	parent := context.WithValue(context.Background(), key{}, "v")
	g := smartpool.NewGroup(parent, compatPool(t))
	ctx := g.Context()
	require.Equal(t, "v", ctx.Value(key{}))
	require.NoError(t, ctx.Err())
	seen := make(chan context.Context, 1)
	g.Go("a", func(taskCtx context.Context) error {
		seen <- g.Context()
		return waitDone(ctx) // closes over the group's context, errgroup-style
	})
	require.Same(t, ctx, <-seen, "a task sees the round's context")
	g.Go("a", returns(errOne))
	require.ErrorIs(t, waitOn(t, g), errOne)
	require.Equal(t, errOne, context.Cause(ctx))
	require.Same(t, ctx, g.Context(), "a failed group keeps its cancelled context")

	g2 := smartpool.NewGroup(parent, compatPool(t))
	first := g2.Context()
	g2.Go("a", returns(nil))
	require.NoError(t, waitOn(t, g2))
	require.ErrorIs(t, first.Err(), context.Canceled, "Wait cancels the round's context")
	next := g2.Context()
	require.NoError(t, next.Err(), "the next round's context is live")
	var got context.Context
	g2.Go("a", func(ctx context.Context) error { got = g2.Context(); return nil })
	require.NoError(t, waitOn(t, g2))
	require.Same(t, next, got)
}
