package scheduler

import (
	"fmt"
	"math/bits"
	"time"
)

// HighestFirst returns the strict-priority policy: a free worker always serves
// the highest level that has work; inside a level the pool serves the
// channels in rotation.
//
// It is the policy of a pool with no Schedule, and a pool given it
// explicitly behaves and performs the same (StrictPriority).
//
// It starves lower levels by design: as long as a higher level has work, a
// lower level gets no worker (running tasks are never preempted). Use
// RoundRobin or Weighted when every level must progress.
func HighestFirst() Scheduler { return highestFirst{} }

type highestFirst struct{}

func (highestFirst) Start(levels int) error { return checkLevels(levels) }
func (highestFirst) NewPicker() Picker      { return highestFirst{} }

func (highestFirst) Pick(avail uint64, _ func() time.Time) int { return bits.TrailingZeros64(avail) }

// PicksHighestFirst declares the policy to the pool (StrictPriority).
func (highestFirst) PicksHighestFirst() bool { return true }

func checkLevels(levels int) error {
	if levels < 1 || levels > MaxLevels {
		return fmt.Errorf("%w: %d levels, want 1 to %d", ErrBadPolicy, levels, MaxLevels)
	}
	return nil
}
