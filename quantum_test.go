package smartpool_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Config.Quantum: with two busy queues in a level and one worker, a quantum
// of 1 takes one task per queue per turn; one of 4 lets the queue a batch
// was taken from keep its turn for 4 tasks in a row. The default decides by
// the tasks' length: a whole batch (MaxQuantum) while they are short, one
// task per turn once the worker's clock found them long.
func TestQuantum_TasksInARow(t *testing.T) {
	for _, c := range []struct {
		quantum int
		long    bool // the worker ran long tasks just before
		prefix  string
	}{
		{0, false, "a1 a2 a3 a4 a5 a6 a7 a8 b1"},
		{0, true, "b1 a1 b2 a2"}, // the warm-up ran a's tasks: b's turn comes first
		{1, false, "a1 b1 a2 b2"},
		{4, false, "a1 a2 a3 a4 b1"},
	} {
		t.Run(fmt.Sprintf("Quantum=%d/long=%v", c.quantum, c.long), func(t *testing.T) {
			o := start(t, &behavior{workers: 1, idle: -1, quantum: c.quantum, levels: [][]ch{{fifo("gate")}, {fifo("a"), fifo("b")}}})
			if c.long {
				// More than the 16 tasks between two readings of the
				// worker's clock, each longer than the 6.25 µs it calls
				// long: the work is simulated, not a synchronisation.
				var warm sync.WaitGroup
				for range 40 {
					warm.Add(1)
					submit(t, o, "a", func(context.Context) { time.Sleep(50 * time.Microsecond); warm.Done() })
				}
				warm.Wait()
			}
			g := newGate()
			submit(t, o, "gate", g.task("gate")) // the only worker is busy while both queues fill
			g.waitStarted(t, 1)
			var mu sync.Mutex
			var order []string
			var ran sync.WaitGroup
			for _, key := range []string{"a", "b"} {
				for i := range 8 {
					ran.Add(1)
					name := fmt.Sprintf("%s%d", key, i+1)
					submit(t, o, key, func(context.Context) {
						mu.Lock()
						order = append(order, name)
						mu.Unlock()
						ran.Done()
					})
				}
			}
			close(g.release)
			ran.Wait()
			got := strings.Join(order, " ")
			require.True(t, strings.HasPrefix(got, c.prefix), "run order %q, want it to start with %q", got, c.prefix)
		})
	}
}
