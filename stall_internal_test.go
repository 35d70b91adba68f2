package smartpool

import (
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/smartpool-go/smartpool/internal/engine"
	"github.com/smartpool-go/smartpool/source"
)

// unclosedPool is a behavior of one channel that never holds a task.
type unclosedPool struct{ c Channel }

func (b unclosedPool) Config() Config[int] {
	return Config[int]{Workers: 1, StallAfter: time.Millisecond, Levels: [][]ChannelParams[int]{{{Key: 0}}}}
}
func (b unclosedPool) Channel(int) Channel { return b.c }
func (b unclosedPool) Followup(k int) int  { return k }

// The watchdog's timer holds the pool only weakly: a pool dropped without
// Close is collected, and its timer stops with it.
func TestStall_DroppedPoolIsCollected(t *testing.T) {
	w := func() weak.Pointer[engine.Engine] {
		o, err := New[int](unclosedPool{c: newEmptyChannel()})
		if err != nil {
			t.Fatal(err)
		}
		return weak.Make(o.pool.e)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for w.Value() != nil {
		if time.Now().After(deadline) {
			t.Fatal("a pool dropped without Close was not collected within 10s")
		}
		runtime.GC()
		runtime.Gosched()
	}
}

// emptyChannel is a channel that refuses every task.
type emptyChannel struct{ source.Plug }

func newEmptyChannel() emptyChannel { return emptyChannel{source.NewPlug(emptySource{})} }

func (emptyChannel) Len() int { return 0 }

type emptySource struct{}

func (emptySource) Queues() int              { return 1 }
func (emptySource) Attach(source.Bits) error { return nil }
func (emptySource) Push(Task, Order) error   { return ErrClosed }
func (emptySource) Requeue(Task) error       { return ErrClosed }
func (emptySource) Poll(int) Task            { return nil }
func (emptySource) Close(bool) []Task        { return nil }
