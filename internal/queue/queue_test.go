package queue

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestModel checks Queue against a slice under random pushes and pops that
// cross segment boundaries many times.
func TestModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var q Queue[int]
	var model []int
	next := 0
	for range 200_000 {
		if rng.IntN(100) < 52 {
			q.Push(next)
			model = append(model, next)
			next++
		} else {
			v, ok := q.Pop()
			require.Equal(t, len(model) > 0, ok)
			if ok {
				require.Equal(t, model[0], v)
				model = model[1:]
			}
		}
		require.Equal(t, len(model), q.Len())
	}
	require.Equal(t, model, q.Drain())
	require.Zero(t, q.Len())
	_, ok := q.Pop()
	require.False(t, ok)
}

// Popped slots are zeroed: the queue keeps no reference to what it gave out.
func TestNoRetention(t *testing.T) {
	var q Queue[*int]
	for i := range 3 * segSize {
		q.Push(&i)
	}
	for range 3*segSize - 1 {
		q.Pop()
	}
	for s := q.head; s != nil; s = s.next {
		for i, v := range s.vals {
			if s == q.head && i == q.first {
				continue
			}
			require.Nil(t, v)
		}
	}
}

func BenchmarkPushPop(b *testing.B) {
	var q Queue[any]
	v := any(1)
	b.ReportAllocs()
	for range b.N {
		q.Push(v)
		q.Pop()
	}
}

func BenchmarkBurst(b *testing.B) {
	var q Queue[any]
	v := any(1)
	b.ReportAllocs()
	for range b.N {
		for range 1000 {
			q.Push(v)
		}
		for range 1000 {
			q.Pop()
		}
	}
}

// TestTwoLockModel checks TwoLock against a slice, single-threaded, across
// many segment boundaries and spare reuse.
func TestTwoLockModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var q TwoLock[int]
	var model []int
	next := 0
	for range 200_000 {
		if rng.IntN(100) < 52 {
			q.Push(next)
			model = append(model, next)
			next++
		} else {
			v, ok, left := q.Pop()
			require.Equal(t, len(model) > 0, ok)
			if ok {
				require.Equal(t, model[0], v)
				model = model[1:]
			}
			require.Equal(t, len(model), left)
		}
		require.Equal(t, len(model), q.Len())
	}
	require.Equal(t, model, q.Drain())
	require.Zero(t, q.Len())
}

// TestTwoLockConcurrent pushes from one goroutine (under a tail lock) while
// two pop (under a head lock): every value comes out once, in order per
// consumer's view of the global order.
func TestTwoLockConcurrent(t *testing.T) {
	var q TwoLock[int]
	var tail, head sync.Mutex
	const n = 200_000
	done := make(chan []int, 2)
	var got atomic.Int64
	for range 2 {
		go func() {
			var seen []int
			for got.Load() < n {
				head.Lock()
				v, ok, _ := q.Pop()
				head.Unlock()
				if ok {
					seen = append(seen, v)
					got.Add(1)
				}
			}
			done <- seen
		}()
	}
	for i := range n {
		tail.Lock()
		q.Push(i)
		tail.Unlock()
	}
	all := make([]bool, n)
	for range 2 {
		seen := <-done
		for i, v := range seen {
			require.False(t, all[v], "value %d popped twice", v)
			all[v] = true
			if i > 0 {
				require.Less(t, seen[i-1], v, "a consumer saw values out of order")
			}
		}
	}
	require.Zero(t, q.Len())
}
