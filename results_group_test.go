package smartpool_test

import (
	"context"
	"sync"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/stretchr/testify/require"
)

// A task of the group that spawns at the limit runs the child itself, so
// a tree of spawns finishes at limit 1 with a single worker, and every
// value lands in the slot of its Go: a parent's Go comes before its
// children's.
func TestResults_HelpWhileYouWaitKeepsOrder(t *testing.T) {
	p := start(t, oneLevel(1, fifo("a"))()).Pool()
	g := smartpool.NewResults[int](context.Background(), p)
	g.SetLimit(1)
	g.Go("a", func(ctx context.Context) (int, error) {
		for i := range 3 {
			g.Go("a", func(context.Context) (int, error) { return 10 + i, nil }) // runs inline: Go returns after it
		}
		return 1, nil
	})
	res, err := g.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, []int{1, 10, 11, 12}, res)
}

// Go from several goroutines: each value is in the slot its Go took, and
// the calls of one goroutine keep their order.
func TestResults_ConcurrentGo(t *testing.T) {
	p := start(t, oneLevel(4, fifo("a"))()).Pool()
	g := smartpool.NewResults[[2]int](context.Background(), p)
	const senders, each = 4, 200
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				g.Go("a", func(context.Context) ([2]int, error) { return [2]int{s, i}, nil })
			}
		})
	}
	wg.Wait()
	res, err := g.Wait(context.Background())
	require.NoError(t, err)
	require.Len(t, res, senders*each)
	next := make([]int, senders)
	for _, v := range res {
		require.Equal(t, next[v[0]], v[1], "goroutine %d's values out of order", v[0])
		next[v[0]]++
	}
}

// A refused Go (nil function, unknown key) keeps its slot, zero, and its
// error is the group's; with CollectErrors the other tasks still run.
func TestResults_RefusedGoKeepsItsSlot(t *testing.T) {
	p := start(t, oneLevel(2, fifo("a"))()).Pool()
	g := smartpool.NewResults[int](context.Background(), p)
	g.CollectErrors()
	g.Go("a", func(context.Context) (int, error) { return 1, nil })
	g.Go("a", nil)
	g.Go("nowhere", func(context.Context) (int, error) { return 3, nil })
	g.Go("a", func(context.Context) (int, error) { return 4, nil })
	res, err := g.Wait(context.Background())
	require.Equal(t, []int{1, 0, 0, 4}, res)
	require.ErrorIs(t, err, smartpool.ErrNilTask)
	require.ErrorIs(t, err, smartpool.ErrUnknownKey)
}

// Rounds: each Wait returns its own round's values; a Wait whose context
// ends first returns nothing and the round goes on; after a failed round
// in the default mode the error stays and no later task runs.
func TestResults_Rounds(t *testing.T) {
	p := start(t, oneLevel(2, fifo("a"))()).Pool()
	g := smartpool.NewResults[int](context.Background(), p)

	g.Go("a", func(context.Context) (int, error) { return 1, nil })
	res, err := g.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, []int{1}, res)

	res, err = g.Wait(context.Background())
	require.NoError(t, err)
	require.Nil(t, res, "a round without Go")

	release := make(chan struct{})
	g.Go("a", func(context.Context) (int, error) { <-release; return 2, nil })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err = g.Wait(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, res)
	g.Go("a", func(context.Context) (int, error) { return 3, nil }) // same round
	close(release)
	res, err = g.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, []int{2, 3}, res)

	g.Go("a", func(context.Context) (int, error) { return 0, errBoom })
	res, err = g.Wait(context.Background())
	require.ErrorIs(t, err, errBoom)
	require.Equal(t, []int{0}, res)

	ran := false
	g.Go("a", func(context.Context) (int, error) { ran = true; return 4, nil })
	res, err = g.Wait(context.Background())
	require.ErrorIs(t, err, errBoom, "the failed round's error stays")
	require.Equal(t, []int{0}, res)
	require.False(t, ran)
}

// With CollectErrors, each round starts afresh: its own values and errors.
func TestResults_CollectRounds(t *testing.T) {
	p := start(t, oneLevel(2, fifo("a"))()).Pool()
	g := smartpool.NewResults[string](context.Background(), p)
	g.CollectErrors()
	g.Go("a", func(context.Context) (string, error) { return "x", errBoom })
	g.Go("a", func(context.Context) (string, error) { return "y", nil })
	res, err := g.Wait(context.Background())
	require.ErrorIs(t, err, errBoom)
	require.Equal(t, []string{"", "y"}, res)
	g.Go("a", func(context.Context) (string, error) { return "z", nil })
	res, err = g.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, []string{"z"}, res)
}

// The tasks' context is the group's: Context returns it, the first error
// cancels it with that error as cause, and queued tasks are then skipped,
// their slots zero.
func TestResults_FirstErrorSkipsQueued(t *testing.T) {
	p := start(t, oneLevel(1, fifo("a"))()).Pool()
	g := smartpool.NewResults[int](context.Background(), p)
	ctx := g.Context()
	queued := make(chan struct{})
	ran := false
	g.Go("a", func(context.Context) (int, error) {
		<-queued
		return 1, errBoom
	})
	g.Go("a", func(context.Context) (int, error) { ran = true; return 2, nil })
	g.Go("a", func(context.Context) (int, error) { ran = true; return 3, nil })
	close(queued)
	res, err := g.Wait(context.Background())
	require.ErrorIs(t, err, errBoom)
	require.ErrorIs(t, context.Cause(ctx), errBoom)
	require.Equal(t, []int{0, 0, 0}, res)
	require.False(t, ran)
}

// A TryGo that finds no room gives its slot back: the round's values have
// none for it, and later slots are not shifted onto the wrong task.
func TestResults_TryGo(t *testing.T) {
	p := start(t, oneLevel(2, fifo("a"))()).Pool()
	g := smartpool.NewResults[int](context.Background(), p)
	g.SetLimit(1)
	release := make(chan struct{})
	require.True(t, g.TryGo("a", func(context.Context) (int, error) { <-release; return 1, nil }))
	require.False(t, g.TryGo("a", func(context.Context) (int, error) { return 2, nil }), "no room at the limit")
	done := goIn(func() { g.Go("a", func(context.Context) (int, error) { return 3, nil }) }) // waits for room
	close(release)
	waitFor(t, done, "Go finding room")
	g.SetLimit(-1)
	require.False(t, g.TryGo("nowhere", func(context.Context) (int, error) { return 4, nil }))
	res, err := g.Wait(context.Background())
	require.ErrorIs(t, err, smartpool.ErrUnknownKey)
	require.Equal(t, []int{1, 3}, res)
}
