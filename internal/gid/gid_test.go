package gid

import (
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A goroutine sees one identifier all its life, and no two live goroutines
// see the same one.
func TestCurrent_StablePerGoroutineDistinctAcross(t *testing.T) {
	for name, id := range map[string]func() uintptr{"Current": Current, "fromStack": fromStack} {
		t.Run(name, func(t *testing.T) { testIdentifier(t, id) })
	}
}

func testIdentifier(t *testing.T, Current func() uintptr) {
	const n = 64
	ids := make([]uintptr, n)
	var started, stop sync.WaitGroup
	started.Add(n)
	stop.Add(1)
	var done sync.WaitGroup
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			ids[i] = Current()
			started.Done()
			stop.Wait() // alive while the others read theirs
			grow(64)    // a grown (moved) stack keeps the identifier
			if Current() != ids[i] {
				t.Errorf("goroutine %d: identifier changed", i)
			}
		}()
	}
	started.Wait()
	stop.Done()
	done.Wait()
	seen := map[uintptr]bool{Current(): true}
	for i, id := range ids {
		if id == 0 || seen[id] {
			t.Fatalf("goroutine %d: identifier %#x is zero or shared", i, id)
		}
		seen[id] = true
	}
}

//go:noinline
func grow(n int) int {
	var pad [256]byte
	if n == 0 {
		return int(pad[0])
	}
	return grow(n-1) + int(pad[n%256])
}

func BenchmarkCurrent(b *testing.B) {
	for b.Loop() {
		_ = Current()
	}
}

func BenchmarkFromStack(b *testing.B) {
	for b.Loop() {
		_ = fromStack()
	}
}
