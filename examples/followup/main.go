// Command followup shows tasks that wait without holding a worker.
//
// Two workers serve 200 jobs from a Backlog level. Each job computes a
// little, then waits 5 ms three times on simulated I/O. Waiting through
// smartpool.Sleep (built on Yield) gives the worker back, and when the wait
// is over the job re-enters through its followup channel, Resume, which sits
// on a higher level: the pool finishes jobs it started before it starts new
// ones. The same jobs waiting with time.Sleep hold their worker instead.
package main

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// Key names the channels.
type Key int

const (
	Resume  Key = iota // where yielded jobs come back: the higher level
	Backlog            // new jobs
)

// Jobs is the pool behavior.
type Jobs struct{ Resume, Backlog *channels.FIFO }

// Config puts Resume above Backlog; both complete on close.
func (j *Jobs) Config() smartpool.Config[Key] {
	return smartpool.Config[Key]{
		Workers: 2,
		Levels: [][]smartpool.ChannelParams[Key]{
			{{Key: Resume, CompleteOnClose: true}},
			{{Key: Backlog, CompleteOnClose: true}},
		},
	}
}

// Channel maps keys to channels.
func (j *Jobs) Channel(k Key) smartpool.Channel {
	if k == Resume {
		return j.Resume
	}
	return j.Backlog
}

// Followup sends every yielded job to Resume.
func (j *Jobs) Followup(Key) Key { return Resume }

const (
	jobs  = 200
	waits = 3
	io    = 5 * time.Millisecond
)

func main() {
	for _, yield := range []bool{true, false} {
		elapsed := run(yield)
		how := "smartpool.Sleep (yields)"
		if !yield {
			how = "time.Sleep (blocks)     "
		}
		fmt.Printf("%s: %d jobs × %d waits of %v on 2 workers in %v\n",
			how, jobs, waits, io, elapsed.Round(time.Millisecond))
	}
	fmt.Printf("ideal with every wait overlapped: about %v; fully serial on 2 workers: %v\n",
		waits*io, jobs*waits*io/2)
}

// run runs the jobs and returns the wall time.
func run(yield bool) time.Duration {
	j := &Jobs{Resume: channels.NewFIFO(), Backlog: channels.NewFIFO()}
	owned, err := smartpool.New[Key](j)
	if err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	began := time.Now()
	for range jobs {
		wg.Add(1)
		err := j.Backlog.Submit(func(ctx context.Context) {
			defer wg.Done()
			for range waits {
				spin(50 * time.Microsecond) // the job's own work
				if yield {
					_ = smartpool.Sleep(ctx, io)
				} else {
					time.Sleep(io)
				}
			}
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	wg.Wait()
	elapsed := time.Since(began)
	if _, err := owned.Close(context.Background()); err != nil {
		log.Fatal(err)
	}
	return elapsed
}

// spin burns CPU for about d.
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}
