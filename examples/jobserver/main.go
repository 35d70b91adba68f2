// Command jobserver is a job server on one pool: three levels of jobs with
// deadlines (interactive, standard, batch), each job cancellable by its
// client while it waits, late jobs dropped, and exact books kept by one
// callback per channel, checked against the pool's report at the end.
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

var levels = []string{"interactive", "standard", "batch"}

// books counts every job's ending by level and outcome; OnEnd feeds it.
type books struct {
	mu     sync.Mutex
	counts map[string]map[smartpool.Outcome]int
}

func (b *books) onEnd(level string) func(smartpool.Task, smartpool.Outcome) {
	return func(_ smartpool.Task, o smartpool.Outcome) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.counts[level][o]++
	}
}

func main() {
	b := &books{counts: map[string]map[smartpool.Outcome]int{}}
	var ls smartpool.Levels[string]
	for _, l := range levels {
		b.counts[l] = map[smartpool.Outcome]int{}
		ls = append(ls, []smartpool.LevelChannel[string]{{
			Key: l, Channel: channels.NewDeadline(channels.DropLate()), OnEnd: b.onEnd(l),
			CompleteOnClose: l != "batch", // batch jobs left at shutdown are dropped
		}})
	}
	owned, err := smartpool.New(ls.With(smartpool.Config[string]{
		Workers:      2,
		PanicHandler: func(string, *smartpool.PanicError) {}, // counted in the books as Panicked
	}))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	pool := owned.Pool()

	rng, submitted := rand.New(rand.NewPCG(1, 2)), 0
	for i := range 600 {
		level := levels[rng.IntN(len(levels))]
		due := time.Now().Add(time.Duration(2+rng.IntN(40)) * time.Millisecond)
		client, cancel := context.WithCancel(context.Background())
		err := pool.Submit(level, func(ctx context.Context) {
			if i%97 == 0 {
				panic("a bad job")
			}
			time.Sleep(200 * time.Microsecond) // the job's work: more than two workers keep up with, so a backlog builds
		}, smartpool.WithDeadline(due), smartpool.WithContext(client))
		if err != nil {
			fmt.Println("submit:", err)
		} else {
			submitted++
		}
		if i%10 == 0 {
			cancel() // the client gave up: the job never runs if it still waits
		} else {
			defer cancel()
		}
		if i%20 == 19 {
			time.Sleep(time.Millisecond) // the next clients arrive
		}
	}

	report, err := owned.Close(context.Background())
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	exact, total := true, 0
	for _, l := range levels {
		c, _ := report.Channel(l)
		got := b.counts[l]
		fmt.Printf("%-12s ran %3d  panicked %d  cancelled %2d  late %3d  dropped on close %3d\n",
			l, got[smartpool.Ran], got[smartpool.Panicked], got[smartpool.Cancelled],
			got[smartpool.DroppedLate], got[smartpool.DroppedOnClose])
		for _, n := range got {
			total += n
		}
		exact = exact && uint64(got[smartpool.Ran]) == c.Ran && uint64(got[smartpool.Panicked]) == c.Panicked &&
			uint64(got[smartpool.Cancelled]) == c.Cancelled &&
			uint64(got[smartpool.DroppedLate]+got[smartpool.DroppedOnClose]) == c.Dropped
	}
	exact = exact && total == submitted
	fmt.Printf("%d jobs submitted, %d endings; the books match the pool's report: %v\n", submitted, total, exact)
	if !exact {
		os.Exit(1)
	}
}
