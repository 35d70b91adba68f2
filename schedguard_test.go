package smartpool_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/scheduler"
)

// faultySched is a user's scheduler whose hooks panic where told to.
type faultySched struct {
	startPanics, newPickerPanics, newPickerNil, pickPanics bool
}

func (s *faultySched) Start(int) error {
	if s.startPanics {
		panic("start exploded")
	}
	return nil
}

func (s *faultySched) NewPicker() scheduler.Picker {
	switch {
	case s.newPickerPanics:
		panic("newpicker exploded")
	case s.newPickerNil:
		return nil
	}
	return s
}

func (s *faultySched) Pick(avail uint64, _ func() time.Time) int {
	if s.pickPanics {
		panic("pick exploded")
	}
	return 0
}

// captureLog sends log/slog's default output to a buffer for the test.
func captureLog(t *testing.T) *syncBuffer {
	t.Helper()
	buf := new(syncBuffer)
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return buf
}

// A scheduler hook that panics is recovered and logged, and the workers serve
// the highest level with work: every task of both levels runs.
func TestScheduler_PanickingHooksDoNotKillThePool(t *testing.T) {
	for name, s := range map[string]*faultySched{
		"Pick":          {pickPanics: true},
		"NewPicker":     {newPickerPanics: true},
		"NewPicker nil": {newPickerNil: true},
	} {
		t.Run(name, func(t *testing.T) {
			logs := captureLog(t)
			b := &behavior{workers: 2, sched: s, levels: [][]ch{{fifo("hi")}, {fifo("lo")}}}
			o := start(t, b)
			var wg sync.WaitGroup
			for i := range 100 {
				wg.Add(1)
				submit(t, o, []string{"hi", "lo"}[i%2], func(context.Context) { wg.Done() })
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			waitFor(t, done, "every task")
			r := closeWithin(t, o, long)
			require.Equal(t, uint64(100), r.Total().Ran)
			require.Contains(t, logs.String(), "scheduler")
		})
	}
}

// A Start that panics fails New with ErrConfig and starts nothing.
func TestScheduler_StartPanicFailsNew(t *testing.T) {
	b := &behavior{workers: 1, sched: &faultySched{startPanics: true}, levels: [][]ch{{fifo("a")}}}
	o, err := smartpool.New[string](b)
	require.Nil(t, o)
	require.ErrorIs(t, err, smartpool.ErrConfig)
	require.True(t, strings.Contains(err.Error(), "start exploded"), err.Error())
}

// Yield with a nil wait returns at once, outside a task and inside one,
// without yielding the worker.
func TestYield_NilWait(t *testing.T) {
	smartpool.Yield(context.Background(), nil)
	//lint:ignore SA1012 a nil context is part of the mistake under test
	smartpool.Yield(nil, nil)
	b := &behavior{workers: 1, levels: [][]ch{{fifo("a")}}}
	o := start(t, b)
	done := make(chan struct{})
	submit(t, o, "a", func(ctx context.Context) {
		smartpool.Yield(ctx, nil)
		close(done)
	})
	waitFor(t, done, "the task")
	r := closeWithin(t, o, long)
	require.Equal(t, uint64(1), r.Total().Ran)
	require.Zero(t, r.Total().Yielded)
}
