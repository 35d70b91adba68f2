package smartpool_test

import (
	"context"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/stretchr/testify/require"
)

// A task queued in a complete-on-close channel before any worker exists, by
// a submitter that is descheduled before it wakes the pool, still runs when
// Close comes first: workers start on first need, so the closer must start
// one rather than finish with the task queued and nobody to run it.
func TestClose_TaskQueuedBeforeAnyWorkerRuns(t *testing.T) {
	queued, gate := make(chan struct{}, 1), make(chan struct{})
	c := plugForgetful(&forgetful{beforeWake: func() { queued <- struct{}{}; <-gate }})
	o, err := smartpool.New[string](&behavior{workers: 2, levels: [][]ch{{{key: "a", c: c, coc: true}}}})
	require.NoError(t, err)
	ran := make(chan struct{})
	submitted := make(chan error, 1)
	go func() { submitted <- o.Pool().Submit("a", func(context.Context) { close(ran) }) }()
	fzRecv(t, queued, "the task queued")

	r := closeWithin(t, o, long)
	require.Equal(t, uint64(1), r.Total().Ran, "Close finished without running the queued task")
	fzRecv(t, ran, "the task ran")

	close(gate) // the submitter wakes a pool that has finished
	require.NoError(t, fzRecv(t, submitted, "the late wake-up of a finished pool returning"))
}
