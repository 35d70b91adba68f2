package smartpool_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Config.Quantum: with two busy queues in a level and one worker, the
// default rotation takes one task per queue per turn; a quantum of 4 lets
// the queue a batch was taken from keep its turn for 4 tasks in a row.
func TestQuantum_TasksInARow(t *testing.T) {
	for _, c := range []struct {
		quantum int
		prefix  string
	}{
		{0, "a1 b1 a2 b2"},
		{1, "a1 b1 a2 b2"},
		{4, "a1 a2 a3 a4 b1"},
	} {
		t.Run(fmt.Sprintf("Quantum=%d", c.quantum), func(t *testing.T) {
			o := start(t, &behavior{workers: 1, idle: -1, quantum: c.quantum, levels: [][]ch{{fifo("gate")}, {fifo("a"), fifo("b")}}})
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
