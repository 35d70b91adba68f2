package idle

import (
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLIFO(t *testing.T) {
	s := New(3)
	require.True(t, s.Empty())
	require.Equal(t, -1, s.Pop())
	s.Push(0)
	s.Push(2)
	s.Push(1)
	require.False(t, s.Empty())
	require.Equal(t, 3, s.Len())
	require.Equal(t, []int{1, 2, 0, -1}, []int{s.Pop(), s.Pop(), s.Pop(), s.Pop()})
	require.Zero(t, s.Len(), "a failed Pop counts nothing")
}

// TestConcurrent has each of n goroutines push itself and wait to be popped,
// many times, while poppers race: every push is matched by exactly one pop.
func TestConcurrent(t *testing.T) {
	const n, rounds = 8, 500
	s := New(n)
	woken := make([]chan struct{}, n)
	for i := range woken {
		woken[i] = make(chan struct{}, 1)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				s.Push(i)
				<-woken[i]
			}
		}()
	}
	done := make(chan struct{})
	var pops sync.WaitGroup
	counts := make([][]int, 2)
	for p := range 2 {
		counts[p] = make([]int, n)
		pops.Add(1)
		go func() {
			defer pops.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if i := s.Pop(); i >= 0 {
					counts[p][i]++
					woken[i] <- struct{}{}
				} else {
					runtime.Gosched()
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	pops.Wait()
	for i := range n {
		require.Equal(t, rounds, counts[0][i]+counts[1][i], "worker %d", i)
	}
	require.True(t, s.Empty())
	require.Zero(t, s.Len(), "every push and pop counted once")
}

// Grow makes room for workers beyond the first chunk while others keep
// pushing and popping.
func TestGrow(t *testing.T) {
	s := New(1)
	s.Push(0)
	s.Grow(5000)
	s.Push(4999)
	s.Push(1024)
	for _, want := range []int{1024, 4999, 0, -1} {
		if got := s.Pop(); got != want {
			t.Fatalf("Pop = %d, want %d", got, want)
		}
	}
}
