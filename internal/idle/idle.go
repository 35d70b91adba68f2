// Package idle is the lock-free stack of parked workers.
//
// Workers are numbered 0..n-1. Only a worker pushes itself, and only when it
// is not already on the stack; anyone may pop. The head word packs the top
// worker's number plus one (0: empty) in the low 32 bits and a counter in the
// high 32 bits that every push and pop bumps, so that a pop whose view of the
// top is stale (the top was popped and pushed back meanwhile) fails its
// compare-and-swap instead of corrupting the list (the ABA problem).
package idle

import "sync/atomic"

// Stack is a Treiber stack of worker numbers. Its methods are safe for
// concurrent use.
type Stack struct {
	head atomic.Uint64
	n    atomic.Int32 // workers on the stack: one more after each push, one less after each pop
	// next[i]: number+1 of the worker below i (0: none), in chunks that Grow
	// allocates before worker i first pushes; a chunk is never replaced.
	// Chunks are allocated on demand, so a stack for many workers costs
	// only what the workers that exist need.
	next [MaxWorkers / chunk]atomic.Pointer[[chunk]atomic.Int32]
}

// MaxWorkers bounds the worker numbers a Stack holds.
const MaxWorkers = 1 << 16

const chunk = 1024

// New returns an empty stack for workers 0..n-1.
func New(n int) *Stack {
	s := new(Stack)
	s.Grow(n)
	return s
}

// Grow makes room for workers 0..n-1 (n <= MaxWorkers).
func (s *Stack) Grow(n int) {
	for c := 0; c*chunk < n; c++ {
		if s.next[c].Load() == nil {
			s.next[c].CompareAndSwap(nil, new([chunk]atomic.Int32)) // a concurrent Grow may have won
		}
	}
}

func (s *Stack) below(i int) *atomic.Int32 { return &s.next[i/chunk].Load()[i%chunk] }

// Empty reports whether no worker is on the stack.
func (s *Stack) Empty() bool { return uint32(s.head.Load()) == 0 }

// Len returns how many workers are on the stack: exact when no push or pop
// is in progress, off by the ones in progress otherwise (a hint for
// heuristics, never for the protocol).
func (s *Stack) Len() int { return int(s.n.Load()) }

// Push puts worker i on the stack. i must not be on it already.
func (s *Stack) Push(i int) {
	for {
		old := s.head.Load()
		s.below(i).Store(int32(uint32(old)))
		if s.head.CompareAndSwap(old, (old>>32+1)<<32|uint64(i+1)) {
			s.n.Add(1)
			return
		}
	}
}

// Pop removes and returns the top worker, or -1 if the stack is empty.
func (s *Stack) Pop() int {
	for {
		old := s.head.Load()
		top := uint32(old)
		if top == 0 {
			return -1
		}
		below := uint64(uint32(s.below(int(top - 1)).Load()))
		if s.head.CompareAndSwap(old, (old>>32+1)<<32|below) {
			s.n.Add(-1)
			return int(top - 1)
		}
	}
}
