package engine

import (
	"sync"
	"sync/atomic"

	"github.com/smartpool-go/smartpool/task"
)

// # Batch polls
//
// A worker whose run buffer is empty polls a BatchPoller channel for several
// tasks at once (fill): it runs the first and keeps the others in its buffer,
// so a backlog costs one channel lock per batch instead of one per task. The
// channel hands over at most batchMax tasks and at most its queue's length
// divided by the worker count, rounded up, so that the other workers find
// work too (a batch leaves a queue of two or more tasks non-empty, its bit
// set, and the wake-up chain going).
//
// Priorities and the rotation survive: the buffer is the front of its queue.
// Before each task the worker chooses a level and a queue as if that queue's
// bit were set, and takes from the buffer only when it chooses that queue
// (worker.search); so a higher level's task, or another queue's turn in the
// level, comes first, as without the buffer, and an urgent task waits at
// most for the task already running.
// Buffered tasks are still queued: Stats counts them in Queued, the drop rule
// applies to them when Close has started (the worker drops them as it takes
// them, like a task it polled), and a cancelled one is skipped when it comes
// up. A worker parks, exits, retires or goes idle without a goroutine only
// with an empty buffer: it runs (or drops) what it took before anything
// else, so no buffered task is stranded, though the summary does not show
// it. Idle workers add parallelism: before parking, a worker steals the
// older half of a sibling's buffer (steal).
//
// Waking for buffered tasks: a task may block until another has started,
// and the other may wait in the blocked task's worker's buffer; a sibling
// must then not sleep. So buffered tasks are work to the sleep and wake-up
// protocol (park.go): e.buffered counts the non-empty buffers, the worker
// that makes a buffer non-empty counts it and then wakes an idle worker (as
// a submitter sets a bit and then wakes), and a worker that parks reads it
// with the summary after it registered as idle (hasWork). A woken worker
// finds the queue empty and steals.
//
// Claims: state packs head, end and the global queue number the tasks came
// from; slots [head, end) hold tasks nobody has claimed. The owner takes one
// task by a compare-and-swap of head+1, a thief half of them by one of head+k,
// so no task is taken twice. Slots are written by the owner's fill (a batch
// poll, or the rest of what it stole), under mu, and cleared by whoever
// claimed them: the owner clears its own without mu, a thief copies and
// clears its claims under mu. The owner fills only an empty buffer, and
// takes mu to do it: so a fill waits out a thief still copying slots it
// claimed, and no thief can claim while the fill writes (there is nothing to
// claim until the fill publishes the new state). A thief holds mu from its
// load of state to its compare-and-swap, so a fill cannot recycle the state
// it read. The model internal/model/buffer.pml checks these claims, the
// drop rule and the wake-ups.

// batchMax is the run buffer's size: large enough that a backlog costs a
// channel lock per eight tasks, small enough that a sibling idles little
// behind a worker's long task before it steals.
const batchMax = 8

// runBuffer holds tasks a worker polled in one batch and has not run yet.
// Owner: the goroutine carrying the worker; thieves: other workers' goroutines.
type runBuffer struct {
	state atomic.Uint64        // head | end<<8 | queue<<16: see "Claims"
	mu    sync.Mutex           // held by the owner's fill and by thieves
	tasks [batchMax]task.Task  // see "Claims" for who writes which slot
	keys  [batchMax]task.Order // the tasks' keys, for an OrderedPoller's queue; written with the tasks
}

func packState(head, end, queue int) uint64 {
	return uint64(head) | uint64(end)<<8 | uint64(queue)<<16
}

func unpackState(s uint64) (head, end, queue int) {
	return int(s & 0xff), int(s >> 8 & 0xff), int(s >> 16)
}

// buffered returns how many tasks the buffer holds and the queue they came
// from; any goroutine may call it.
func (b *runBuffer) buffered() (n, queue int) {
	h, end, q := unpackState(b.state.Load())
	return end - h, q
}

// batches reports whether the pool polls a BatchPoller channel in batches:
// only one of the lowest level, which has no level below it whose tasks
// could start while its own wait in a worker's buffer; and not a capped
// one, whose cap reserves a slot per task polled.
func batches(capped bool, level, levels int) bool {
	return !capped && level == levels-1
}

// empty reports whether the buffer holds no task; any goroutine may call it.
func (b *runBuffer) empty() bool {
	n, _ := b.buffered()
	return n == 0
}

// fill polls queue q by a batch poll into w's empty buffer, keeps the tasks
// after the first and returns the first (nil if the queue was empty). Owner
// only.
func (w *Worker) fill(qi int, q *queueRef) task.Task {
	b := &w.buf
	var keys []task.Order
	if q.ordered != nil {
		keys = b.keys[:]
	}
	// The workers that may poll it: those created, up to the count (more
	// are created while the queue keeps work, which a batch leaves).
	share := max(min(int(w.e.target.Load()), int(w.e.born.Load())), 1)
	b.mu.Lock()
	n := min(q.batch.PollBatch(q.local, b.tasks[:], keys, share), batchMax)
	if c := &w.e.Chans[q.ch]; c.tracked && n > 1 {
		c.held.Add(int64(n - 1)) // buffered tasks are held (reshape.go); pollLevel counted the first
	}
	var t task.Task
	if n > 0 {
		t, b.tasks[0] = b.tasks[0], nil
		if keys != nil {
			w.order = b.keys[0]
		}
		if n > 1 {
			b.state.Store(packState(1, n, qi))
		}
	}
	b.mu.Unlock()
	if n > 1 {
		w.e.bufferFilled()
	}
	return t
}

// bufferFilled follows a store that made a buffer non-empty: it counts the
// buffer, then wakes an idle worker, which may steal (see "Waking for
// buffered tasks"), as a submitter sets a bit and then wakes.
func (e *Engine) bufferFilled() {
	e.buffered.Add(1)
	e.wake()
}

// takeBuffered takes the oldest task of w's buffer; nil if it is empty. Owner
// only.
func (w *Worker) takeBuffered() (task.Task, *queueRef) {
	b := &w.buf
	for {
		s := b.state.Load()
		h, end, qi := unpackState(s)
		if h >= end {
			return nil, nil
		}
		if !b.state.CompareAndSwap(s, s+1) {
			continue // a thief claimed some
		}
		if h+1 == end {
			w.e.buffered.Add(-1) // this claim emptied it
		}
		t := b.tasks[h]
		b.tasks[h] = nil
		q := &w.e.queues[qi]
		if q.ordered != nil {
			w.order = b.keys[h]
		}
		if t != nil { // a channel that broke the contract left a hole: skip it
			return t, q
		}
	}
}

// steal takes the older half of a sibling's buffer, runs the first task it
// took (returns it) and keeps the rest in w's buffer, which is empty. It
// looks at every sibling while e.buffered shows a non-empty buffer, and at
// none otherwise.
func (w *Worker) steal() (task.Task, *queueRef) {
	e := w.e
	n := int(e.born.Load())
	for i := 1; i < n && e.buffered.Load() != 0; i++ {
		v := e.worker((w.id + i) % n)
		if v == nil {
			continue // being created (bear)
		}
		if k, _ := v.buf.buffered(); k > 0 {
			if t, q := w.stealFrom(&v.buf); t != nil {
				return t, q
			}
		}
	}
	return nil, nil
}

func (w *Worker) stealFrom(v *runBuffer) (task.Task, *queueRef) {
	e := w.e
	var got [batchMax]task.Task
	var keys [batchMax]task.Order
	k, qi := 0, 0
	v.mu.Lock()
	for {
		s := v.state.Load()
		h, end, q := unpackState(s)
		if h >= end {
			break
		}
		k, qi = (end-h+1)/2, q
		if v.state.CompareAndSwap(s, s+uint64(k)) {
			if h+k == end {
				e.buffered.Add(-1) // this claim emptied it
			}
			copy(got[:k], v.tasks[h:h+k])
			clear(v.tasks[h : h+k])
			copy(keys[:k], v.keys[h:h+k])
			break
		}
		k = 0
	}
	v.mu.Unlock()
	if k == 0 {
		return nil, nil
	}
	q := &e.queues[qi]
	if q.ordered != nil {
		w.order = keys[0]
	}
	if k > 1 {
		b := &w.buf
		b.mu.Lock()
		copy(b.tasks[1:k], got[1:k])
		copy(b.keys[1:k], keys[1:k])
		b.state.Store(packState(1, k, qi))
		b.mu.Unlock()
		e.bufferFilled()
	}
	if got[0] == nil { // a hole (see takeBuffered): run the next one
		t, q := w.takeBuffered()
		return t, q
	}
	return got[0], q
}
