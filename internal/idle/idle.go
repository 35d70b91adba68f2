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
	next []atomic.Int32 // next[i]: number+1 of the worker below i (0: none)
}

// New returns an empty stack for workers 0..n-1.
func New(n int) *Stack { return &Stack{next: make([]atomic.Int32, n)} }

// Empty reports whether no worker is on the stack.
func (s *Stack) Empty() bool { return uint32(s.head.Load()) == 0 }

// Push puts worker i on the stack. i must not be on it already.
func (s *Stack) Push(i int) {
	for {
		old := s.head.Load()
		s.next[i].Store(int32(uint32(old)))
		if s.head.CompareAndSwap(old, (old>>32+1)<<32|uint64(i+1)) {
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
		below := uint64(uint32(s.next[top-1].Load()))
		if s.head.CompareAndSwap(old, (old>>32+1)<<32|below) {
			return int(top - 1)
		}
	}
}
