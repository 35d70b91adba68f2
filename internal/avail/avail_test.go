package avail

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNewRejectsTooMany(t *testing.T) {
	_, err := New([]int{MaxQueues + 1})
	require.ErrorIs(t, err, ErrTooMany)
	_, err = New(make([]int, MaxLevels+1))
	require.ErrorIs(t, err, ErrTooMany)
	f, err := New([]int{MaxQueues / 2, MaxQueues / 2})
	require.NoError(t, err)
	require.Equal(t, 2, f.Levels())
}

// TestModel checks Set, Clear and Next against a plain set of queue numbers,
// single goroutine, on layouts that cross word boundaries.
func TestModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	layout := []int{1, 64, 65, 200, 3}
	f, err := New(layout)
	require.NoError(t, err)
	set, blocked := map[int]bool{}, map[int]bool{}
	for range 20000 {
		q := rng.IntN(len(f.queues))
		switch {
		case rng.IntN(4) == 0 && blocked[q]:
			f.Unblock(q)
			delete(blocked, q)
		case rng.IntN(4) == 0:
			f.Block(q)
			blocked[q] = true
		case set[q]:
			f.Clear(q)
			delete(set, q)
		default:
			f.Set(q)
			set[q] = true
		}
		require.Equal(t, blocked[q], f.Blocked(q))
		eligible := func(q int) bool { return set[q] && !blocked[q] }
		for l := range layout {
			first, n := f.LevelRange(l)
			any := false
			for i := range n {
				any = any || eligible(first+i)
			}
			if !any {
				f.Tidy(l) // Set on a blocked queue may leave a spurious summary bit
			}
			require.Equal(t, any, f.Summary()&(1<<l) != 0, "level %d summary", l)
			from := rng.IntN(n)
			want := -1
			for i := range n {
				j := (from + i) % n
				if eligible(first + j) {
					want = j
					break
				}
			}
			require.Equal(t, want, f.Next(l, from), "Next(%d, %d)", l, from)
		}
	}
}

// TestSummaryNeverLost hammers one level from several goroutines, each owning
// its own queues (as channels do), and checks the protocol's invariant once
// they are quiescent: the summary bit is set if and only if a word is not
// zero (after Tidy has dropped any spurious bit).
func TestSummaryNeverLost(t *testing.T) {
	for range 50 {
		f, err := New([]int{130})
		require.NoError(t, err)
		var wg sync.WaitGroup
		for g := range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 1))
				on := map[int]bool{}
				for range 2000 {
					q := g*26 + rng.IntN(26)
					if on[q] {
						f.Clear(q)
					} else {
						f.Set(q)
					}
					on[q] = !on[q]
				}
			}()
		}
		wg.Wait()
		busy := f.Next(0, 0) >= 0
		if busy {
			require.Equal(t, uint64(1), f.Summary(), "work present but summary clear")
		} else {
			f.Tidy(0)
			require.Zero(t, f.Summary(), "summary set with no work after Tidy")
		}
	}
}

func BenchmarkSetClear(b *testing.B) {
	f, _ := New([]int{1})
	b.ReportAllocs()
	for range b.N {
		f.Set(0)
		f.Clear(0)
	}
}

func BenchmarkNext(b *testing.B) {
	for _, n := range []int{1, 64, 4096} {
		f, _ := New([]int{n})
		f.Set(n - 1)
		b.Run("queues="+itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				_ = f.Next(0, i%n)
			}
		})
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
