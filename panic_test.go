package smartpool_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// panicLog collects what the panic handler receives.
type panicLog struct {
	mu     sync.Mutex
	panics []*smartpool.PanicError
	keys   []string
}

func (l *panicLog) handle(key string, p *smartpool.PanicError) {
	l.mu.Lock()
	l.panics = append(l.panics, p)
	l.keys = append(l.keys, key)
	l.mu.Unlock()
}

var errBoom = errors.New("boom")

func panickingTask(context.Context) { panic(fmt.Errorf("wrapped: %w", errBoom)) }

// D1 TestPanic_PoolSurvivesAndReports.
func TestPanic_PoolSurvivesAndReports(t *testing.T) {
	var log panicLog
	b := &behavior{workers: 1, onPanic: log.handle, levels: [][]ch{{fifo("a")}}}
	o := start(t, b)
	submit(t, o, "a", panickingTask)
	var ran atomic.Int32
	for range 100 {
		submit(t, o, "a", func(context.Context) { ran.Add(1) })
	}
	r := closeWithin(t, o, long)
	require.EqualValues(t, 100, ran.Load())
	require.Len(t, log.panics, 1)
	require.Equal(t, "a", log.keys[0])
	require.ErrorIs(t, log.panics[0], errBoom)
	require.Contains(t, string(log.panics[0].Stack), "panickingTask")
	require.Equal(t, uint64(1), r.Total().Panicked)
	require.Equal(t, uint64(100), r.Total().Ran)
}

// D2 TestPanic_AllWorkersPanicNoStall.
func TestPanic_AllWorkersPanicNoStall(t *testing.T) {
	for range scale(100) {
		var log panicLog
		b := &behavior{workers: 1, onPanic: log.handle, levels: [][]ch{{fifo("a")}}}
		o := start(t, b)
		for range 5 {
			submit(t, o, "a", panickingTask)
		}
		done := make(chan struct{})
		submit(t, o, "a", func(context.Context) { close(done) })
		waitFor(t, done, "the task after 5 panics")
		closeWithin(t, o, long)
		require.Len(t, log.panics, 5)
	}
}

// D3 TestPanic_KindsMatrix and D4 TestPanic_GoexitInTask: every kind of
// abnormal end is tallied exactly, workers survive, a second Close changes
// nothing.
func TestPanic_KindsMatrix(t *testing.T) {
	type custom struct{ n int }
	kinds := map[string]func(context.Context){
		"none":   func(context.Context) {},
		"string": func(context.Context) { panic("str") },
		"error":  panickingTask,
		"struct": func(context.Context) { panic(custom{7}) },
		"nilmap": func(context.Context) {
			var m map[int]int
			//lint:ignore SA5000 the panic is the point
			m[1] = 1
		},
		"index": func(context.Context) {
			var s []int
			_ = s[len(s)+1]
		},
		"nil":    func(context.Context) { panic(nil) },
		"goexit": func(context.Context) { runtime.Goexit() },
	}
	names := []string{"none", "string", "error", "struct", "nilmap", "index", "nil", "goexit"}
	for _, workers := range []int{1, 4, 10} {
		var log panicLog
		b := &behavior{workers: workers, onPanic: log.handle, levels: [][]ch{{fifo("a")}}}
		o := start(t, b)
		rng := seeded(t)
		want := map[string]int{}
		for range 25 {
			k := names[rng.IntN(len(names))]
			want[k]++
			submit(t, o, "a", kinds[k])
		}
		after := make(chan struct{})
		submit(t, o, "a", func(context.Context) { close(after) })
		waitFor(t, after, "a task after the matrix")
		r := closeWithin(t, o, long)
		tot := r.Total()
		require.Equal(t, uint64(want["none"]+1), tot.Ran)
		require.Equal(t, uint64(want["goexit"]), tot.Goexited)
		require.Equal(t, uint64(25-want["none"]-want["goexit"]), tot.Panicked)
		require.Len(t, log.panics, int(tot.Panicked))
		var nilErr *runtime.PanicNilError
		for _, p := range log.panics {
			if _, isNil := p.Value.(*runtime.PanicNilError); isNil {
				require.ErrorAs(t, p, &nilErr)
			}
		}
		again := closeWithin(t, o, long)
		require.Equal(t, r, again)
		require.Equal(t, workers, r.Workers)
	}
}

// D5 TestPanic_InHooks: a panicking panic handler and a panicking OnEnd
// (here for dropped tasks) are contained; the pool still closes with its
// ledger intact.
func TestPanic_InHooks(t *testing.T) {
	var ends, drops atomic.Int32
	b := &behavior{workers: 1,
		onPanic: func(string, *smartpool.PanicError) { panic("handler panics too") },
		levels: [][]ch{{fifo("pin")}, {{key: "d", c: channels.NewFIFO(), onEnd: func(_ smartpool.Task, o smartpool.Outcome) {
			ends.Add(1)
			if o == smartpool.DroppedOnClose {
				drops.Add(1)
			}
			panic("OnEnd panics")
		}}}},
	}
	o := start(t, b)
	g := newGate()
	submit(t, o, "pin", g.task("pin"))
	g.waitStarted(t, 1)
	submit(t, o, "pin", panickingTask)
	for range 3 {
		submit(t, o, "d", func(context.Context) {})
	}
	res := make(chan *smartpool.Report[string])
	go func() { res <- closeWithin(t, o, long) }()
	eventually(t, func() bool { return o.Pool().State() >= smartpool.Closing })
	close(g.release)
	r := <-res
	require.EqualValues(t, 3, drops.Load())
	require.EqualValues(t, 3, ends.Load(), "OnEnd once per task, each dropped on close")
	p, _ := r.Channel("pin")
	require.Equal(t, uint64(1), p.Ran)
	require.Equal(t, uint64(1), p.Panicked)
	d, _ := r.Channel("d")
	require.Equal(t, uint64(3), d.Dropped)
}

// D6 TestPanic_DuringDrain and D7 TestPanic_NotRethrownByShutdown.
func TestPanic_DuringDrain(t *testing.T) {
	for range scale(50) {
		var log panicLog
		b := &behavior{workers: 2, onPanic: log.handle, levels: [][]ch{{fifo("a")}}}
		o := start(t, b)
		for i := range 1000 {
			if i%10 == 0 {
				submit(t, o, "a", panickingTask)
			} else {
				submit(t, o, "a", func(context.Context) {})
			}
		}
		r := closeWithin(t, o, long)
		require.Equal(t, uint64(100), r.Total().Panicked)
		require.Equal(t, uint64(900), r.Total().Ran)
	}
}

// The default panic handler logs through log/slog; the test only checks it
// does not crash the process and the pool counts the panic.
func TestPanic_DefaultHandlerLogs(t *testing.T) {
	b := &behavior{workers: 1, levels: [][]ch{{fifo("a")}}}
	o := start(t, b)
	submit(t, o, "a", func(context.Context) { panic("logged") })
	r := closeWithin(t, o, long)
	require.Equal(t, uint64(1), r.Total().Panicked)
	pe := &smartpool.PanicError{Value: "x"}
	require.True(t, strings.Contains(pe.Error(), "x"))
	require.Nil(t, pe.Unwrap())
}
