package smartpool_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/stretchr/testify/require"
)

// conc's own tests of ResultPool, ResultErrorPool and ResultContextPool
// (github.com/sourcegraph/conc, pool/result*_test.go), ported onto Results
// where we adopt their semantics. Where ours differ on purpose the port
// says how: a failed task keeps its slot, holding the zero value (conc
// drops it), so len(values) is always the number of Go calls; conc's
// WithErrors (every error, nothing cancelled) is CollectErrors; conc's
// WithCancelOnError and WithFirstError together are our default mode.
// conc's sleeps, used there to order two tasks, are replaced by waits on the
// event itself.

var (
	errConc1 = errors.New("err1")
	errConc2 = errors.New("err2")
)

// concPool returns a pool with a channel "a" served by workers workers.
func concPool(t *testing.T, workers int) *smartpool.Pool[string] {
	return start(t, oneLevel(workers, fifo("a"))()).Pool()
}

// busy is the work of conc's limit tests (a millisecond's sleep there):
// long enough for tasks to overlap, with no sleep.
func busy() {
	for range 200 {
		runtime.Gosched()
	}
}

// conc: TestResultGroup/basic, with the order kept: no sort.
func TestResultsConc_Basic(t *testing.T) {
	g := smartpool.NewResults[int](context.Background(), concPool(t, 4))
	var expected []int
	for i := range 100 {
		expected = append(expected, i)
		g.Go("a", func(context.Context) (int, error) { return i, nil })
	}
	res, err := g.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, expected, res)
}

// conc: TestResultGroup/limit, TestResultErrorGroup/limit and
// TestResultContextPool/limit: WithMaxGoroutines is SetLimit.
func TestResultsConc_Limit(t *testing.T) {
	for _, limit := range []int{1, 10, 100} {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			g := smartpool.NewResults[int](context.Background(), concPool(t, 8))
			g.SetLimit(limit)
			var current atomic.Int64
			taskCount := limit * 10
			expected := make([]int, taskCount)
			for i := range taskCount {
				expected[i] = i
				g.Go("a", func(context.Context) (int, error) {
					defer current.Add(-1)
					if cur := current.Add(1); cur > int64(limit) {
						return 0, fmt.Errorf("expected no more than %d concurrent tasks, saw %d", limit, cur)
					}
					busy()
					return i, nil
				})
			}
			res, err := g.Wait(context.Background())
			require.NoError(t, err)
			require.Equal(t, expected, res)
			require.Equal(t, int64(0), current.Load())
		})
	}
}

// conc: TestResultErrorGroup/"wait returns no error if no errors" and
// TestResultContextPool/"behaves the same as ErrorGroup".
func TestResultsConc_NoErrors(t *testing.T) {
	g := smartpool.NewResults[int](context.Background(), concPool(t, 2))
	g.Go("a", func(context.Context) (int, error) { return 1, nil })
	res, err := g.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, []int{1}, res)
}

// conc: TestResultErrorGroup/"wait error if func returns error": the
// errored value is dropped, its slot holds the zero value.
func TestResultsConc_Error(t *testing.T) {
	for _, collect := range []bool{false, true} {
		t.Run(fmt.Sprint("collect=", collect), func(t *testing.T) {
			g := smartpool.NewResults[int](context.Background(), concPool(t, 2))
			if collect {
				g.CollectErrors()
			}
			g.Go("a", func(context.Context) (int, error) { return 7, errConc1 })
			res, err := g.Wait(context.Background())
			require.Equal(t, []int{0}, res)
			require.ErrorIs(t, err, errConc1)
		})
	}
}

// conc: TestResultErrorGroup/"wait error is all returned errors" (its
// default, our CollectErrors).
func TestResultsConc_AllErrors(t *testing.T) {
	g := smartpool.NewResults[int](context.Background(), concPool(t, 2))
	g.CollectErrors()
	g.Go("a", func(context.Context) (int, error) { return 1, errConc1 })
	g.Go("a", func(context.Context) (int, error) { return 2, nil })
	g.Go("a", func(context.Context) (int, error) { return 3, errConc2 })
	res, err := g.Wait(context.Background())
	require.Equal(t, []int{0, 2, 0}, res)
	require.ErrorIs(t, err, errConc1)
	require.ErrorIs(t, err, errConc2)
}

// conc: TestResultErrorGroup/WithFirstError and
// TestResultContextPool/WithFirstError: only the first error is returned.
// conc orders the two errors with a sleep; here the later task waits for
// the cancellation the first error causes.
func TestResultsConc_FirstError(t *testing.T) {
	g := smartpool.NewResults[int](context.Background(), concPool(t, 2))
	started := make(chan struct{})
	g.Go("a", func(ctx context.Context) (int, error) {
		close(started)
		if err := cancelled(ctx); err != nil {
			return 0, err
		}
		return 0, errConc1
	})
	<-started
	g.Go("a", func(context.Context) (int, error) { return 0, errConc2 })
	res, err := g.Wait(context.Background())
	require.Equal(t, []int{0, 0}, res)
	require.ErrorIs(t, err, errConc2)
	require.NotErrorIs(t, err, errConc1)
}

// conc: TestResultContextPool/"context cancel propagates".
func TestResultsConc_ContextCancelPropagates(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	g := smartpool.NewResults[int](ctx, concPool(t, 2))
	started := make(chan struct{})
	g.Go("a", func(ctx context.Context) (int, error) {
		close(started)
		<-ctx.Done()
		return 1, ctx.Err()
	})
	<-started
	cancel()
	res, err := g.Wait(context.Background())
	require.Equal(t, []int{0}, res)
	require.ErrorIs(t, err, context.Canceled)
}

// conc: TestResultContextPool/WithCancelOnError: the error cancels the
// sibling, which returns the context's error. conc joins both; in our
// default mode Wait returns the first, the cause of the cancellation.
func TestResultsConc_CancelOnError(t *testing.T) {
	g := smartpool.NewResults[int](context.Background(), concPool(t, 2))
	var sibling atomic.Value
	g.Go("a", func(ctx context.Context) (int, error) {
		if err := cancelled(ctx); err != nil {
			return 0, err
		}
		sibling.Store(context.Cause(ctx))
		return 0, ctx.Err()
	})
	g.Go("a", func(context.Context) (int, error) { return 0, errConc1 })
	res, err := g.Wait(context.Background())
	require.Equal(t, []int{0, 0}, res)
	require.ErrorIs(t, err, errConc1)
	require.ErrorIs(t, sibling.Load().(error), errConc1)
}

// conc: TestResultContextPool/"WithCancelOnError and panic": the panic
// cancels both siblings. conc's Wait panics again; ours returns the panic
// as *PanicError.
func TestResultsConc_CancelOnPanic(t *testing.T) {
	g := smartpool.NewResults[int](context.Background(), concPool(t, 3))
	var cancelledTasks atomic.Int64
	for range 2 {
		g.Go("a", func(ctx context.Context) (int, error) {
			if err := cancelled(ctx); err != nil {
				return 0, err
			}
			cancelledTasks.Add(1)
			return 0, ctx.Err()
		})
	}
	g.Go("a", func(context.Context) (int, error) { panic("abort!") })
	res, err := g.Wait(context.Background())
	var pe *smartpool.PanicError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "abort!", pe.Value)
	require.Equal(t, []int{0, 0, 0}, res)
	require.EqualValues(t, 2, cancelledTasks.Load())
}

// conc: TestResultContextPool/"no WithCancelOnError" (our CollectErrors):
// an error cancels nothing. conc races a 10 ms timer against the
// cancellation; here the limit of 1 makes the second task start after the
// first one's error was recorded.
func TestResultsConc_ErrorCancelsNothing(t *testing.T) {
	g := smartpool.NewResults[int](context.Background(), concPool(t, 2))
	g.CollectErrors()
	g.SetLimit(1)
	g.Go("a", func(context.Context) (int, error) { return 0, errConc1 })
	g.Go("a", func(ctx context.Context) (int, error) { return 5, ctx.Err() })
	res, err := g.Wait(context.Background())
	require.Equal(t, []int{0, 5}, res)
	require.NotErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, errConc1)
}
