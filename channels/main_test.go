package channels_test

import (
	"context"
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/internal/standalone"
	"github.com/smartpool-go/smartpool/source"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var seedFlag = flag.Uint64("seed", 0, "seed of the randomised model tests (0: pick one)")

// newRand returns a PCG-backed generator and logs its seed if the test
// fails, so that a failure can be replayed with -seed.
func newRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay with: go test -run '^%s$' -seed %d", t.Name(), seed)
		}
	})
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// idTask is a task that only names itself; model tests compare IDs.
type idTask int

func (idTask) Run(context.Context) {}

// idOf returns the ID of a task Poll returned, or -1 for nil.
func idOf(t testing.TB, task smartpool.Task) int {
	t.Helper()
	if task == nil {
		return -1
	}
	id, ok := task.(idTask)
	if !ok {
		t.Fatalf("polled a %T, want idTask", task)
	}
	return int(id)
}

// waitOrFail waits for ch, failing loudly after a generous bound instead of
// hanging the test binary.
func waitOrFail(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// served attaches c to a standalone harness (internal/standalone): a channel
// refuses every task until a pool serves it, and its unit tests drive it
// without one, submitting, polling and closing it as the pool would.
func served[C smartpool.Channel](c C) C {
	if err := standalone.Attach(c); err != nil {
		panic(err)
	}
	return c
}

// src returns c's Source: the unit tests drive a channel as the pool does.
func src(c smartpool.Channel) source.Source { return source.SourceOf(c) }

// servedEnds is served by a harness that knows c as its channel, as a pool
// does: c's submits given options go through the pool's code, and onEnd,
// if not nil, plays the pool's smartpool.ChannelParams.OnEnd.
func servedEnds[C smartpool.Channel](c C, onEnd func(smartpool.Task, smartpool.Outcome)) C {
	if err := standalone.AttachOnEnd(c, onEnd); err != nil {
		panic(err)
	}
	return c
}

// pushOf returns the by-key submit of c: its Source's Push, default order.
func pushOf(c smartpool.Channel) func(smartpool.Task) error {
	return func(t smartpool.Task) error { return src(c).Push(t, smartpool.Order{}) }
}

// submitTaskOf returns b's SubmitTask without options: it never waits.
func submitTaskOf(b *channels.Bounded) func(smartpool.Task) error {
	return func(t smartpool.Task) error { return b.SubmitTask(t) }
}
