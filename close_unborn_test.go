package smartpool_test

import (
	"context"
	"sync"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/stretchr/testify/require"
)

// A task queued in a complete-on-close channel before any worker exists, by
// a submitter that is descheduled before it wakes the pool, still runs when
// Close comes first: workers start on first need, so the closer must start
// one rather than finish with the task queued and nobody to run it.
func TestClose_TaskQueuedBeforeAnyWorkerRuns(t *testing.T) {
	c := &lateWaker{queued: make(chan struct{}, 1), gate: make(chan struct{})}
	o, err := smartpool.New[string](&behavior{workers: 2, levels: [][]ch{{{key: "a", c: c, coc: true}}}})
	require.NoError(t, err)
	ran := make(chan struct{})
	submitted := make(chan error, 1)
	go func() { submitted <- o.Pool().Submit("a", func(context.Context) { close(ran) }) }()
	fzRecv(t, c.queued, "the task queued")

	r := closeWithin(t, o, long)
	require.Equal(t, uint64(1), r.Total().Ran, "Close finished without running the queued task")
	fzRecv(t, ran, "the task ran")

	close(c.gate) // the submitter wakes a pool that has finished
	require.NoError(t, fzRecv(t, submitted, "the late wake-up of a finished pool returning"))
}

// lateWaker is a one-queue channel whose Push queues the task, then waits for
// gate before it wakes the pool: a submitter descheduled between the two.
type lateWaker struct {
	mu     sync.Mutex
	q      []smartpool.Task
	b      smartpool.Bits
	queued chan struct{} // one send per Push that queued
	gate   chan struct{} // Push wakes the pool once it is closed
}

func (l *lateWaker) Queues() int { return 1 }

func (l *lateWaker) Attach(b smartpool.Bits) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Attached() && b.Attached() {
		return smartpool.ErrAttached
	}
	l.b = b
	return nil
}

func (l *lateWaker) Push(t smartpool.Task) error {
	l.mu.Lock()
	if l.b.Closed() {
		l.mu.Unlock()
		return smartpool.ErrClosed
	}
	b := l.queueLocked(t)
	l.mu.Unlock()
	l.queued <- struct{}{}
	<-l.gate
	b.Wake(1)
	return nil
}

func (l *lateWaker) Requeue(t smartpool.Task) error {
	l.mu.Lock()
	b := l.queueLocked(t)
	l.mu.Unlock()
	b.Wake(1)
	return nil
}

func (l *lateWaker) queueLocked(t smartpool.Task) smartpool.Bits {
	l.q = append(l.q, t)
	if len(l.q) == 1 {
		l.b.Set(0)
	}
	return l.b
}

func (l *lateWaker) Poll(int) smartpool.Task {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.q) == 0 {
		return nil
	}
	t := l.q[0]
	l.q = l.q[1:]
	if len(l.q) == 0 {
		l.b.Clear(0)
	}
	return t
}

func (l *lateWaker) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.q)
}

func (l *lateWaker) Close(drop bool) []smartpool.Task {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.b.Closing() || !drop {
		return nil
	}
	ts := l.q
	l.q = nil
	l.b.Clear(0)
	return ts
}
