package scheduler_test

import (
	"fmt"
	"time"

	"github.com/smartpool-go/smartpool/scheduler"
)

// A pool calls Start once and then Pick for every task a worker looks for.
// Here one picker is driven by hand, with a clock that moves 10 ms per pick,
// while all three levels have work.
func ExampleRoundRobin() {
	s := scheduler.RoundRobin(20*time.Millisecond, 10*time.Millisecond, 30*time.Millisecond)
	if err := s.Start(3); err != nil {
		fmt.Println(err)
		return
	}
	p := s.NewPicker()
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var now time.Time
	clock := func() time.Time { return now }
	var seq []int
	for i := range 9 {
		now = start.Add(time.Duration(i) * 10 * time.Millisecond)
		seq = append(seq, p.Pick(0b111, clock))
	}
	fmt.Println(seq)
	// Level 1 runs out of work during its turn: level 2 takes over at once.
	fmt.Println(p.Pick(0b101, clock))
	// Output:
	// [0 0 1 2 2 2 0 0 1]
	// 2
}

func ExampleWeighted() {
	s := scheduler.Weighted(1, 2, 3)
	if err := s.Start(3); err != nil {
		fmt.Println(err)
		return
	}
	p := s.NewPicker()
	pick := func(avail uint64, n int) []int {
		seq := make([]int, n)
		for i := range seq {
			seq[i] = p.Pick(avail, time.Now)
		}
		return seq
	}
	fmt.Println(pick(0b111, 12))
	// Level 2 has no work: levels 0 and 1 share 1:2.
	fmt.Println(pick(0b011, 6))
	// Output:
	// [2 1 0 2 1 2 2 1 0 2 1 2]
	// [1 0 1 1 0 1]
}

func ExampleHighestFirst() {
	s := scheduler.HighestFirst()
	if err := s.Start(3); err != nil {
		fmt.Println(err)
		return
	}
	p := s.NewPicker()
	fmt.Println(p.Pick(0b110, time.Now), p.Pick(0b100, time.Now), p.Pick(0b111, time.Now))
	// Output: 1 2 0
}

// Start rejects a policy that does not fit the pool, with an error wrapping
// ErrBadPolicy.
func ExampleScheduler_Start() {
	err := scheduler.Weighted(1, 2).Start(3)
	fmt.Println(err)
	// Output: scheduler: bad policy: Weighted has 2 weights for 3 levels, want one per level
}
