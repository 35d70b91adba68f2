// Command custom-scheduler shows how to write your own scheduling policy and
// plug it into a pool.
//
// The policy, everyNth, is strict priority with a safety valve: a worker
// serves the highest level that has work, except that every nth task it looks
// for comes from the lowest level that has work, so background work keeps
// moving however busy the foreground is. It implements scheduler.Scheduler
// (validation and one picker per worker) and scheduler.Picker (the decision,
// made from a snapshot of which levels have work).
//
// The program runs the same load twice, a burst of interactive tasks and a
// few background tasks on two workers: first with the built-in
// scheduler.HighestFirst, where background work waits until the interactive
// burst is over, then with everyNth, where it runs alongside. Run it with
//
//	go run ./examples/custom-scheduler
package main

import (
	"context"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/scheduler"
)

// everyNth is the custom policy: HighestFirst, but every nth pick of each
// worker goes to the lowest level with work.
type everyNth struct{ n int }

// Start validates the policy for a pool with the given number of levels.
func (s everyNth) Start(levels int) error {
	if s.n < 2 {
		return fmt.Errorf("%w: everyNth needs n >= 2, got %d", scheduler.ErrBadPolicy, s.n)
	}
	return nil
}

// NewPicker returns one worker's picker. Each worker counts its own picks,
// so pickers share nothing and need no synchronization.
func (s everyNth) NewPicker() scheduler.Picker { return &nthPicker{n: s.n} }

type nthPicker struct{ n, picks int }

// Pick returns the highest level with work (the lowest set bit of avail), or
// on every nth call the lowest level with work (the highest set bit). It
// never reads the clock.
func (p *nthPicker) Pick(avail uint64, _ func() time.Time) int {
	p.picks++
	if p.picks%p.n == 0 {
		return 63 - bits.LeadingZeros64(avail)
	}
	return bits.TrailingZeros64(avail)
}

type lane int

const (
	interactive lane = iota // level 0, the highest
	background              // level 1
)

// twoLanes is the pool's behavior: one FIFO channel per level.
type twoLanes struct {
	sched scheduler.Scheduler
	chans [2]*channels.FIFO
}

func (b *twoLanes) Config() smartpool.Config[lane] {
	return smartpool.Config[lane]{
		Workers:  2,
		Schedule: b.sched,
		Levels:   [][]smartpool.ChannelParams[lane]{{{Key: interactive}}, {{Key: background}}},
	}
}

func (b *twoLanes) Channel(k lane) smartpool.Channel { return b.chans[k] }
func (b *twoLanes) Followup(k lane) lane             { return k }

const (
	interactiveTasks = 300
	backgroundTasks  = 10
	taskCost         = time.Millisecond
)

// run pushes the load through a pool using sched and reports how many
// interactive tasks had finished when the first and the last background task
// started.
func run(name string, sched scheduler.Scheduler) error {
	b := &twoLanes{sched: sched, chans: [2]*channels.FIFO{channels.NewFIFO(), channels.NewFIFO()}}
	pool, err := smartpool.New[lane](b)
	if err != nil {
		return err
	}
	var interactiveDone atomic.Int64
	var mu sync.Mutex
	var seen []int64 // interactive tasks finished when each background task started
	var wg sync.WaitGroup
	wg.Add(interactiveTasks + backgroundTasks)
	for range interactiveTasks {
		err = b.chans[interactive].Submit(func(context.Context) {
			time.Sleep(taskCost) // stands for real work
			interactiveDone.Add(1)
			wg.Done()
		})
		if err != nil {
			return err
		}
	}
	for range backgroundTasks {
		err = b.chans[background].Submit(func(context.Context) {
			mu.Lock()
			seen = append(seen, interactiveDone.Load())
			mu.Unlock()
			time.Sleep(taskCost)
			wg.Done()
		})
		if err != nil {
			return err
		}
	}
	start := time.Now()
	wg.Wait()
	elapsed := time.Since(start)
	report, err := pool.Close(context.Background())
	if err != nil {
		return err
	}
	fmt.Printf("%-13s %d tasks ran in %v; background tasks started after %d (first) to %d (last) of %d interactive tasks had finished\n",
		name+":", report.Total().Ran, elapsed.Round(10*time.Millisecond), seen[0], seen[len(seen)-1], interactiveTasks)
	return nil
}

func main() {
	fmt.Printf("2 workers, %d interactive tasks (level 0) and %d background tasks (level 1), %v each.\n\n",
		interactiveTasks, backgroundTasks, taskCost)
	if err := run("HighestFirst", scheduler.HighestFirst()); err != nil {
		fmt.Println("error:", err)
		return
	}
	if err := run("everyNth(4)", everyNth{n: 4}); err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("\nHighestFirst starves background work until the interactive burst is over;")
	fmt.Println("everyNth gives it one pick in four, so it finishes early at a small cost to the burst.")
}
