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

// fifo is what the model test sees of Queue and TwoLock: pop reports the
// value, whether there was one, and (-1 if unknown) how many were left.
type fifo struct {
	push  func(int)
	pop   func() (v int, ok bool, left int)
	len   func() int
	drain func() []int
}

// checkModel runs q against a slice under random pushes and pops that cross
// segment boundaries many times.
func checkModel(t *testing.T, q fifo) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var model []int
	next := 0
	for range 200_000 {
		if rng.IntN(100) < 52 {
			q.push(next)
			model = append(model, next)
			next++
		} else {
			v, ok, left := q.pop()
			require.Equal(t, len(model) > 0, ok)
			if ok {
				require.Equal(t, model[0], v)
				model = model[1:]
			}
			if left >= 0 { // a lower bound, 0 only if nothing is left (TwoLock.Pop)
				require.LessOrEqual(t, left, len(model))
				require.Equal(t, len(model) == 0, left == 0)
			}
		}
		require.Equal(t, len(model), q.len())
	}
	require.Equal(t, model, q.drain())
	require.Zero(t, q.len())
}

// TestModel checks Queue against a slice.
func TestModel(t *testing.T) {
	var q Queue[int]
	checkModel(t, fifo{q.Push, func() (int, bool, int) { v, ok := q.Pop(); return v, ok, -1 }, q.Len, q.Drain})
	_, ok := q.Pop()
	require.False(t, ok)
}

// TestTwoLockModel checks TwoLock against a slice, single-threaded, across
// segment boundaries and spare reuse.
func TestTwoLockModel(t *testing.T) {
	var q TwoLock[int]
	checkModel(t, fifo{q.Push, q.Pop, q.Len, q.Drain})
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
