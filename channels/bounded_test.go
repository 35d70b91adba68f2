package channels_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/source"
)

// boundedBehavior is a pool of one channel, key 0, through which yielded
// tasks re-enter too.
type boundedBehavior struct {
	ch      smartpool.Channel
	workers int
	coc     bool
	onEnd   func(smartpool.Task, smartpool.Outcome)
}

func (b boundedBehavior) Config() smartpool.Config[int] {
	return smartpool.Config[int]{
		Workers: b.workers,
		Levels:  [][]smartpool.ChannelParams[int]{{{Key: 0, CompleteOnClose: b.coc, OnEnd: b.onEnd}}},
	}
}

func (b boundedBehavior) Channel(int) smartpool.Channel { return b.ch }
func (b boundedBehavior) Followup(int) int              { return 0 }

// newBoundedPool starts a pool for b and closes it at cleanup if the test
// did not.
func newBoundedPool(t testing.TB, b boundedBehavior) *smartpool.OwnedPool[int] {
	t.Helper()
	o, err := smartpool.New[int](b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closePool(t, o) })
	return o
}

// boundedTask records its ID in log, if set, when it runs.
type boundedTask struct {
	id  int
	log *[]int
}

func (bt boundedTask) Run(context.Context) {
	if bt.log != nil {
		*bt.log = append(*bt.log, bt.id)
	}
}

// boundedID returns the ID of a boundedTask, or -1 for nil, seen through
// the pool's wrapper of a task submitted with a context that can end.
func boundedID(t testing.TB, task smartpool.Task) int {
	t.Helper()
	if task == nil {
		return -1
	}
	for {
		u, ok := task.(smartpool.Unwrapper)
		if !ok {
			break
		}
		task = u.Unwrap()
	}
	bt, ok := task.(boundedTask)
	if !ok {
		t.Fatalf("got a %T, want boundedTask", task)
	}
	return bt.id
}

// boundedEventually polls cond until it holds, failing loudly, with every
// goroutine's stack, after a generous bound.
func boundedEventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("timed out waiting for %s; goroutines:\n%s", what, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
	}
}

// recvNow returns what ch holds now, failing if it holds nothing.
func recvNow(t testing.TB, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	default:
		t.Fatalf("%s has not returned", what)
		return nil
	}
}

// submitAsync starts a SubmitTask of task with ctx (WithContext: it waits
// for room) on its own goroutine and returns the channel its error arrives
// on.
func submitAsync(ctx context.Context, b *channels.Bounded, task smartpool.Task) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- b.SubmitTask(task, smartpool.WithContext(ctx)) }()
	return errc
}

func wantErr(t testing.TB, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// TestBoundedSubmit: without a context a submit never waits: a full
// Bounded refuses with ErrFull.
func TestBoundedSubmit(t *testing.T) {
	b := servedEnds(channels.NewBounded(2), nil)
	if src(b).Queues() != 1 || b.Cap() != 2 || b.Len() != 0 || b.Waiting() != 0 {
		t.Fatalf("new: Queues %d Cap %d Len %d Waiting %d", src(b).Queues(), b.Cap(), b.Len(), b.Waiting())
	}
	wantErr(t, "SubmitTask", b.SubmitTask(boundedTask{id: 0}), nil)
	wantErr(t, "SubmitTask with a context, with room", b.SubmitTask(boundedTask{id: 1}, smartpool.WithContext(context.Background())), nil)
	wantErr(t, "Submit when full", b.Submit(noop), smartpool.ErrFull)
	wantErr(t, "SubmitTask when full", b.SubmitTask(boundedTask{id: 9}), smartpool.ErrFull)
	wantErr(t, "Push when full", src(b).Push(boundedTask{id: 9}, smartpool.Order{}), smartpool.ErrFull)
	if b.Len() != 2 {
		t.Fatalf("Len %d, want 2", b.Len())
	}
	if id := boundedID(t, src(b).Poll(0)); id != 0 {
		t.Fatalf("Poll: %d, want 0", id)
	}
	wantErr(t, "Push after Poll", src(b).Push(boundedTask{id: 2}, smartpool.Order{}), nil)
	for _, want := range []int{1, 2, -1} {
		if id := boundedID(t, src(b).Poll(0)); id != want {
			t.Fatalf("Poll: %d, want %d", id, want)
		}
	}

	for name, err := range map[string]error{
		"Submit":                b.Submit(nil),
		"SubmitTask":            b.SubmitTask(nil),
		"Push":                  src(b).Push(nil, smartpool.Order{}),
		"Submit with a context": b.Submit(nil, smartpool.WithContext(context.Background())),
		"SubmitTask with a ctx": b.SubmitTask(nil, smartpool.WithContext(context.Background())),
		"Requeue":               src(b).Requeue(nil),
	} {
		wantErr(t, name+"(nil)", err, smartpool.ErrNilTask)
	}
}

// TestBoundedNoQueues: a capacity below 1 makes a Bounded without queues,
// which New refuses like a Multi without shards; never served, it refuses
// every task.
func TestBoundedNoQueues(t *testing.T) {
	for name, b := range map[string]*channels.Bounded{
		"capacity 0":  channels.NewBounded(0),
		"capacity -3": channels.NewBounded(-3, channels.DropOldest()),
	} {
		t.Run(name, func(t *testing.T) {
			if src(b).Queues() != 0 || b.Cap() != 0 {
				t.Fatalf("Queues %d Cap %d, want 0 0", src(b).Queues(), b.Cap())
			}
			b.SetCapacity(4)
			if b.Cap() != 0 {
				t.Fatalf("SetCapacity changed Cap to %d", b.Cap())
			}
			for what, err := range map[string]error{
				"Submit with a context":     b.Submit(noop, smartpool.WithContext(context.Background())),
				"SubmitTask with a context": b.SubmitTask(idTask(0), smartpool.WithContext(context.Background())),
				"Submit":                    b.Submit(noop),
				"SubmitTask":                b.SubmitTask(idTask(0)),
				"Push":                      src(b).Push(idTask(0), smartpool.Order{}),
				"Requeue":                   src(b).Requeue(idTask(0)),
			} {
				wantErr(t, what, err, smartpool.ErrNotServed)
			}
			if src(b).Poll(0) != nil || b.Len() != 0 {
				t.Fatal("a Bounded without queues holds a task")
			}
			_, err := smartpool.New[int](boundedBehavior{ch: b, workers: 1})
			if !errors.Is(err, smartpool.ErrConfig) || !errors.Is(err, smartpool.ErrNoQueues) {
				t.Fatalf("New: %v, want ErrConfig and ErrNoQueues", err)
			}
		})
	}
}

// TestBoundedSubmitWaitsForRoom: a submit with a context on a full Bounded
// waits, holding no slot, until a Poll hands it one; waiters are admitted in
// arrival order and a submit without a context cannot take a slot from
// them.
func TestBoundedSubmitWaitsForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := servedEnds(channels.NewBounded(1), nil)
		wantErr(t, "Submit with room", b.SubmitTask(boundedTask{id: 0}, smartpool.WithContext(context.Background())), nil)
		var errs []<-chan error
		for id := 1; id <= 2; id++ {
			errs = append(errs, submitAsync(context.Background(), b, boundedTask{id: id}))
			synctest.Wait() // blocked: arrival order is fixed
		}
		if b.Waiting() != 2 || b.Len() != 1 {
			t.Fatalf("Waiting %d Len %d, want 2 1", b.Waiting(), b.Len())
		}
		for want := range 3 {
			wantErr(t, "SubmitTask without a context while submitters wait", b.SubmitTask(boundedTask{id: 9}), smartpool.ErrFull)
			if id := boundedID(t, src(b).Poll(0)); id != want {
				t.Fatalf("Poll: %d, want %d", id, want)
			}
			synctest.Wait()
			if want < 2 {
				wantErr(t, fmt.Sprintf("Submit of %d", want+1), recvNow(t, errs[want], "Submit"), nil)
				if b.Len() != 1 || b.Waiting() != 1-want {
					t.Fatalf("after Poll %d: Len %d Waiting %d", want, b.Len(), b.Waiting())
				}
			}
		}
		if src(b).Poll(0) != nil {
			t.Fatal("Poll of an empty Bounded returned a task")
		}
	})
}

// TestBoundedSubmitCancel: a waiting Submit whose context ends returns
// ctx.Err(), leaves the line, and its task is never queued; a done context
// fails Submit even when there is room.
func TestBoundedSubmitCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := servedEnds(channels.NewBounded(1), nil)
		done, cancel := context.WithCancel(context.Background())
		cancel()
		wantErr(t, "Submit with a done context", b.SubmitTask(boundedTask{id: 9}, smartpool.WithContext(done)), context.Canceled)
		if b.Len() != 0 {
			t.Fatal("a Submit with a done context queued its task")
		}

		wantErr(t, "SubmitTask", b.SubmitTask(boundedTask{id: 0}), nil)
		ctx1, cancel1 := context.WithCancel(context.Background())
		defer cancel1()
		ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
		defer cancel2()
		err1 := submitAsync(ctx1, b, boundedTask{id: 1})
		synctest.Wait()
		err2 := submitAsync(ctx2, b, boundedTask{id: 2})
		synctest.Wait()
		err3 := submitAsync(context.Background(), b, boundedTask{id: 3})
		synctest.Wait()
		if b.Waiting() != 3 {
			t.Fatalf("Waiting %d, want 3", b.Waiting())
		}

		cancel1() // the head of the line leaves
		synctest.Wait()
		wantErr(t, "cancelled Submit", recvNow(t, err1, "cancelled Submit"), context.Canceled)
		time.Sleep(2 * time.Second) // the bubble's clock: ctx2's deadline passes
		synctest.Wait()
		wantErr(t, "timed-out Submit", recvNow(t, err2, "timed-out Submit"), context.DeadlineExceeded)
		if b.Waiting() != 1 || b.Len() != 1 {
			t.Fatalf("Waiting %d Len %d, want 1 1", b.Waiting(), b.Len())
		}

		var got []int
		for task := src(b).Poll(0); task != nil; task = src(b).Poll(0) {
			got = append(got, boundedID(t, task))
			synctest.Wait()
		}
		wantErr(t, "last Submit", recvNow(t, err3, "last Submit"), nil)
		if !slices.Equal(got, []int{0, 3}) {
			t.Fatalf("polled %v, want [0 3]: a cancelled Submit queued its task", got)
		}
	})
}

// TestBoundedCloseReleasesWaiters: Close releases every waiting Submit with
// ErrClosed and refuses submits, while Requeue is accepted until Close(true).
func TestBoundedCloseReleasesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := servedEnds(channels.NewBounded(1), nil)
		wantErr(t, "SubmitTask", b.SubmitTask(boundedTask{id: 0}), nil)
		var errs []<-chan error
		for id := 1; id <= 3; id++ {
			errs = append(errs, submitAsync(context.Background(), b, boundedTask{id: id}))
		}
		synctest.Wait()
		if b.Waiting() != 3 {
			t.Fatalf("Waiting %d, want 3", b.Waiting())
		}
		if got := src(b).Close(false); got != nil {
			t.Fatalf("Close(false) returned %d tasks", len(got))
		}
		synctest.Wait()
		for i, errc := range errs {
			wantErr(t, fmt.Sprintf("waiter %d", i), recvNow(t, errc, "a waiter"), smartpool.ErrClosed)
		}
		if b.Waiting() != 0 {
			t.Fatalf("Waiting %d after Close", b.Waiting())
		}
		for what, err := range map[string]error{
			"Submit with a context":     b.Submit(noop, smartpool.WithContext(context.Background())),
			"SubmitTask with a context": b.SubmitTask(idTask(0), smartpool.WithContext(context.Background())),
			"Submit":                    b.Submit(noop),
			"SubmitTask":                b.SubmitTask(idTask(0)),
			"Push":                      src(b).Push(idTask(0), smartpool.Order{}),
		} {
			wantErr(t, what+" after Close", err, smartpool.ErrClosed)
		}
		wantErr(t, "Requeue after Close(false), when full", src(b).Requeue(boundedTask{id: 100}), nil)
		got := src(b).Close(true)
		ids := make([]int, len(got))
		for i, task := range got {
			ids[i] = boundedID(t, task)
		}
		if !slices.Equal(ids, []int{0, 100}) {
			t.Fatalf("Close(true) returned %v, want [0 100]", ids)
		}
		wantErr(t, "Requeue after Close(true)", src(b).Requeue(boundedTask{id: 101}), smartpool.ErrClosed)
		if b.Len() != 0 || src(b).Poll(0) != nil {
			t.Fatal("Close(true) left a task")
		}
	})
}

// TestBoundedSetCapacity: raising the capacity admits waiters at once, in
// order; lowering it keeps every queued task and refuses new ones until Len
// falls below it.
func TestBoundedSetCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := servedEnds(channels.NewBounded(1), nil)
		wantErr(t, "SubmitTask", b.SubmitTask(boundedTask{id: 0}), nil)
		var errs []<-chan error
		for id := 1; id <= 3; id++ {
			errs = append(errs, submitAsync(context.Background(), b, boundedTask{id: id}))
			synctest.Wait()
		}
		b.SetCapacity(3)
		synctest.Wait()
		wantErr(t, "waiter 1", recvNow(t, errs[0], "waiter 1"), nil)
		wantErr(t, "waiter 2", recvNow(t, errs[1], "waiter 2"), nil)
		if b.Cap() != 3 || b.Len() != 3 || b.Waiting() != 1 {
			t.Fatalf("after growing: Cap %d Len %d Waiting %d, want 3 3 1", b.Cap(), b.Len(), b.Waiting())
		}

		b.SetCapacity(1)
		if b.Len() != 3 {
			t.Fatalf("shrinking dropped tasks: Len %d", b.Len())
		}
		wantErr(t, "SubmitTask over the lowered capacity", b.SubmitTask(boundedTask{id: 9}), smartpool.ErrFull)
		for want := range 2 {
			if id := boundedID(t, src(b).Poll(0)); id != want {
				t.Fatalf("Poll: %d, want %d", id, want)
			}
		}
		synctest.Wait()
		if b.Waiting() != 1 || b.Len() != 1 {
			t.Fatalf("Len at the lowered capacity: Waiting %d Len %d, want 1 1", b.Waiting(), b.Len())
		}
		if id := boundedID(t, src(b).Poll(0)); id != 2 {
			t.Fatalf("Poll: %d, want 2", id)
		}
		synctest.Wait()
		wantErr(t, "waiter 3", recvNow(t, errs[2], "waiter 3"), nil)
		if id := boundedID(t, src(b).Poll(0)); id != 3 {
			t.Fatalf("Poll: %d, want 3", id)
		}

		for _, n := range []int{0, -5} {
			b.SetCapacity(n)
			if b.Cap() != 1 {
				t.Fatalf("SetCapacity(%d): Cap %d, want 1", n, b.Cap())
			}
		}
	})
}

// TestBoundedDropOldest: a full Bounded with DropOldest accepts every task
// and drops the oldest submitted one, never a re-entry, and never waits;
// OnEnd learns each drop, outside the channel's lock.
func TestBoundedDropOldest(t *testing.T) {
	b := channels.NewBounded(2, channels.DropOldest())
	var dropped []int
	servedEnds(b, func(task smartpool.Task, why smartpool.Outcome) {
		_ = b.Len() // called without the lock held
		if why != smartpool.DroppedDisplaced {
			t.Errorf("task %d ended %v, want dropped displaced", boundedID(t, task), why)
		}
		dropped = append(dropped, boundedID(t, task))
	})
	wantErr(t, "SubmitTask", b.SubmitTask(boundedTask{id: 1}), nil)
	wantErr(t, "SubmitTask", b.SubmitTask(boundedTask{id: 2}), nil)
	wantErr(t, "SubmitTask when full", b.SubmitTask(boundedTask{id: 3}), nil)
	wantErr(t, "SubmitTask with a context when full", b.SubmitTask(boundedTask{id: 4}, smartpool.WithContext(context.Background())), nil)
	wantErr(t, "Push when full", src(b).Push(boundedTask{id: 5}, smartpool.Order{}), nil)
	wantErr(t, "Requeue when full", src(b).Requeue(boundedTask{id: 100}), nil)  // [4 5 R]
	wantErr(t, "Push", src(b).Push(boundedTask{id: 6}, smartpool.Order{}), nil) // drops 4: [5 R 6]
	wantErr(t, "Push", src(b).Push(boundedTask{id: 7}, smartpool.Order{}), nil) // drops 5: [R 6 7]
	wantErr(t, "Push", src(b).Push(boundedTask{id: 8}, smartpool.Order{}), nil) // steps over R, drops 6
	if want := []int{1, 2, 3, 4, 5, 6}; !slices.Equal(dropped, want) {
		t.Fatalf("dropped %v, want %v", dropped, want)
	}
	if b.Len() != 3 || b.Stats().Dropped != 6 {
		t.Fatalf("Len %d Stats %+v, want 3 and 6 dropped", b.Len(), b.Stats())
	}
	var got []int
	for task := src(b).Poll(0); task != nil; task = src(b).Poll(0) {
		got = append(got, boundedID(t, task))
	}
	if want := []int{100, 7, 8}; !slices.Equal(got, want) {
		t.Fatalf("polled %v, want %v", got, want)
	}

	t.Run("no OnEnd", func(t *testing.T) {
		b := served(channels.NewBounded(1, channels.DropOldest()))
		wantErr(t, "Submit", b.Submit(noop), nil)
		wantErr(t, "Submit when full", b.Submit(noop), nil)
		if b.Len() != 1 || b.Stats().Dropped != 1 {
			t.Fatalf("Len %d Stats %+v", b.Len(), b.Stats())
		}
	})
	t.Run("only re-entries before it", func(t *testing.T) {
		var dropped []int
		b := servedEnds(channels.NewBounded(1, channels.DropOldest()), func(task smartpool.Task, _ smartpool.Outcome) {
			dropped = append(dropped, boundedID(t, task))
		})
		wantErr(t, "Requeue", src(b).Requeue(boundedTask{id: 100}), nil)
		wantErr(t, "SubmitTask", b.SubmitTask(boundedTask{id: 1}), nil)
		if !slices.Equal(dropped, []int{1}) || b.Len() != 1 {
			t.Fatalf("dropped %v, Len %d: want the new task dropped and the re-entry kept", dropped, b.Len())
		}
	})
}

// TestBoundedCallerRuns: with CallerRuns, a submit to a full Bounded runs
// the task in the caller, with context.Background(); with a context too
// (the pool's rule: CallerRuns never waits).
func TestBoundedCallerRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := served(channels.NewBounded(1, channels.CallerRuns()))
		wantErr(t, "SubmitTask", b.SubmitTask(boundedTask{id: 0}), nil)

		ran := 0 // not atomic: the race detector checks the task ran on this goroutine
		inCaller := func(ctx context.Context) {
			if ctx != context.Background() {
				t.Errorf("caller-run task got %v, want context.Background()", ctx)
			}
			ran++
		}
		wantErr(t, "Submit when full", b.Submit(inCaller), nil)
		wantErr(t, "Push when full", src(b).Push(smartpool.Func(inCaller), smartpool.Order{}), nil)
		wantErr(t, "SubmitTask when full", b.SubmitTask(smartpool.Func(inCaller)), nil)
		if ran != 3 || b.Stats().CallerRan != 3 || b.Len() != 1 {
			t.Fatalf("ran %d, Stats %+v, Len %d; want 3 run in the caller and 1 queued", ran, b.Stats(), b.Len())
		}

		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Fatalf("recovered %v, want the task's panic", r)
				}
			}()
			_ = b.Submit(func(context.Context) { panic("boom") })
			t.Fatal("the task's panic did not reach the caller")
		}()

		src(b).Close(false)
		wantErr(t, "Submit after Close", b.Submit(func(context.Context) { t.Error("ran after Close") }), smartpool.ErrClosed)
	})
}

// TestBoundedCallerRunsWithContext: a submit given a context to a full
// CallerRuns Bounded runs the task in the caller too, and does not wait.
func TestBoundedCallerRunsWithContext(t *testing.T) {
	b := servedEnds(channels.NewBounded(1, channels.CallerRuns()), nil)
	wantErr(t, "SubmitTask", b.SubmitTask(boundedTask{id: 0}), nil)
	ran := false
	wantErr(t, "Submit with a context when full", b.Submit(func(context.Context) { ran = true }, smartpool.WithContext(context.Background())), nil)
	if !ran || b.Waiting() != 0 || b.Stats().CallerRan != 1 || b.Len() != 1 {
		t.Fatalf("ran %v, Waiting %d, Stats %+v, Len %d; want run here, no wait", ran, b.Waiting(), b.Stats(), b.Len())
	}
}

// TestBoundedModel runs random non-blocking operations against a Bounded and
// a slice that models it, under each overflow policy.
func TestBoundedModel(t *testing.T) {
	for _, policy := range []string{"default", "DropOldest", "CallerRuns"} {
		t.Run(policy, func(t *testing.T) {
			rng := newRand(t)
			var dropped, ran []int
			var opts []channels.BoundedOption
			switch policy {
			case "DropOldest":
				opts = append(opts, channels.DropOldest())
			case "CallerRuns":
				opts = append(opts, channels.CallerRuns())
			}
			capacity := 1 + rng.IntN(4)
			b := servedEnds(channels.NewBounded(capacity, opts...), func(task smartpool.Task, why smartpool.Outcome) {
				if why == smartpool.DroppedDisplaced { // CallerRuns' runs end as Ran
					dropped = append(dropped, boundedID(t, task))
				}
			})

			type ref struct {
				id      int
				requeue bool
			}
			var model []ref
			var wantDropped, wantRan []int
			for id := range 3000 {
				switch op := rng.IntN(10); {
				case op < 5:
					full := len(model) >= capacity
					task := boundedTask{id: id, log: &ran}
					var err error
					switch {
					case !full && rng.IntN(3) == 0:
						err = b.SubmitTask(task, smartpool.WithContext(context.Background()))
					case rng.IntN(2) == 0:
						err = b.SubmitTask(task)
					default:
						err = src(b).Push(task, smartpool.Order{})
					}
					var want error
					switch {
					case !full:
						model = append(model, ref{id: id})
					case policy == "DropOldest":
						model = append(model, ref{id: id})
						i := slices.IndexFunc(model, func(r ref) bool { return !r.requeue })
						wantDropped = append(wantDropped, model[i].id)
						model = slices.Delete(model, i, i+1)
					case policy == "CallerRuns":
						wantRan = append(wantRan, id)
					default:
						want = smartpool.ErrFull
					}
					if !errors.Is(err, want) {
						t.Fatalf("op %d: submit: %v, want %v", id, err, want)
					}
				case op < 6:
					wantErr(t, "Requeue", src(b).Requeue(boundedTask{id: id}), nil)
					model = append(model, ref{id: id, requeue: true})
				case op < 9:
					want := -1
					if len(model) > 0 {
						want = model[0].id
						model = model[1:]
					}
					if got := boundedID(t, src(b).Poll(0)); got != want {
						t.Fatalf("op %d: Poll: %d, want %d", id, got, want)
					}
				default:
					n := rng.IntN(6)
					b.SetCapacity(n)
					capacity = max(n, 1)
				}
				if b.Len() != len(model) || b.Cap() != capacity {
					t.Fatalf("op %d: Len %d Cap %d, want %d %d", id, b.Len(), b.Cap(), len(model), capacity)
				}
			}
			if !slices.Equal(dropped, wantDropped) || !slices.Equal(ran, wantRan) {
				t.Fatalf("dropped %v ran %v, want %v %v", dropped, ran, wantDropped, wantRan)
			}
			var got, want []int
			for _, task := range src(b).Close(true) {
				got = append(got, boundedID(t, task))
			}
			for _, r := range model {
				want = append(want, r.id)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("Close(true) returned %v, want %v", got, want)
			}
		})
	}
}

// TestBoundedNoAllocs: a warm Bounded allocates nothing per task.
func TestBoundedNoAllocs(t *testing.T) {
	b := served(channels.NewBounded(4))
	task := smartpool.Func(noop)
	step := func() {
		if err := b.SubmitTask(task); err != nil {
			t.Fatal(err)
		}
		if src(b).Poll(0) == nil {
			t.Fatal("Poll returned nil")
		}
	}
	step()
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Fatalf("%v allocations per SubmitTask+Poll, want 0", n)
	}
}

// TestBoundedPoolCloseReleasesBlockedProducers: producers blocked on a full
// Bounded are released with ErrClosed by the pool's Close, and their tasks
// never run; the queued tasks run or are dropped and reported.
func TestBoundedPoolCloseReleasesBlockedProducers(t *testing.T) {
	for _, coc := range []bool{false, true} {
		t.Run(fmt.Sprintf("CompleteOnClose=%v", coc), func(t *testing.T) {
			const capacity, producers = 2, 5
			var ran, dropped atomic.Int32
			b := channels.NewBounded(capacity)
			o := newBoundedPool(t, boundedBehavior{ch: b, workers: 1, coc: coc,
				onEnd: func(_ smartpool.Task, why smartpool.Outcome) {
					if why.Dropped() {
						dropped.Add(1)
					}
				}})
			release := pin(t, submitTaskOf(b))
			for range capacity {
				wantErr(t, "Submit", b.Submit(func(context.Context) { ran.Add(1) }), nil)
			}
			wantErr(t, "Pool.Submit when full", o.Pool().Submit(0, noop), smartpool.ErrFull)

			errs := make(chan error, producers)
			for range producers {
				go func() {
					errs <- b.Submit(func(context.Context) { t.Error("a refused task ran") }, smartpool.WithContext(context.Background()))
				}()
			}
			boundedEventually(t, "the producers to block", func() bool { return b.Waiting() == producers })

			type result struct {
				rep *smartpool.Report[int]
				err error
			}
			closed := make(chan result, 1)
			go func() {
				rep, err := o.Close(context.Background()) // waits for the pinned task
				closed <- result{rep, err}
			}()
			for range producers {
				select {
				case err := <-errs:
					wantErr(t, "blocked Submit at Close", err, smartpool.ErrClosed)
				case <-time.After(30 * time.Second):
					t.Fatal("Close did not release the blocked producers")
				}
			}
			if b.Waiting() != 0 {
				t.Fatalf("Waiting %d after Close", b.Waiting())
			}
			wantErr(t, "Submit after Close", b.Submit(noop, smartpool.WithContext(context.Background())), smartpool.ErrClosed)
			release()
			var res result
			select {
			case res = <-closed:
			case <-time.After(30 * time.Second):
				t.Fatal("Close did not return")
			}
			if res.err != nil {
				t.Fatal(res.err)
			}
			wantRan, wantDropped := int32(0), int32(capacity)
			if coc {
				wantRan, wantDropped = capacity, 0
			}
			if ran.Load() != wantRan || dropped.Load() != wantDropped {
				t.Fatalf("ran %d dropped %d, want %d %d", ran.Load(), dropped.Load(), wantRan, wantDropped)
			}
			tot := res.rep.Total()
			if tot.Ran != uint64(wantRan)+1 || tot.Dropped != uint64(wantDropped) || tot.Queued != 0 {
				t.Fatalf("report %+v, want %d ran (the pin too) and %d dropped", tot, wantRan+1, wantDropped)
			}
		})
	}
}

// boundedCountTask counts its run in ran[id], and closes half when the
// pool's runs reach at.
type boundedCountTask struct {
	id   int
	ran  []atomic.Int32
	runs *atomic.Int32
	at   int32
	half chan struct{}
}

func (c boundedCountTask) Run(context.Context) {
	c.ran[c.id].Add(1)
	if c.runs.Add(1) == c.at {
		close(c.half)
	}
}

// TestBoundedBackpressureNeverLosesTasks has producers outpace a small pool
// through a small Bounded, with every submit method, some with contexts that
// end while they wait or while their task is queued, and closes the pool
// midway: every task ends in exactly one outcome (ran, dropped and reported,
// cancelled while queued, or refused with an error), and the pool's report
// agrees.
func TestBoundedBackpressureNeverLosesTasks(t *testing.T) {
	const workers, capacity, producers, each = 3, 4, 8, 300
	const total = producers * each
	for _, coc := range []bool{false, true} {
		t.Run(fmt.Sprintf("CompleteOnClose=%v", coc), func(t *testing.T) {
			ran := make([]atomic.Int32, total)
			dropped := make([]atomic.Int32, total)
			cancelled := make([]atomic.Int32, total)
			refused := make([]atomic.Int32, total)
			var runs atomic.Int32
			half := make(chan struct{})
			b := channels.NewBounded(capacity)
			o := newBoundedPool(t, boundedBehavior{ch: b, workers: workers, coc: coc,
				onEnd: func(task smartpool.Task, why smartpool.Outcome) {
					switch id := task.(boundedCountTask).id; {
					case why.Dropped():
						dropped[id].Add(1)
					case why == smartpool.Cancelled:
						cancelled[id].Add(1)
					}
				}})

			var errMu sync.Mutex
			errCount := map[error]int{}
			var prod sync.WaitGroup
			for p := range producers {
				prod.Go(func() {
					for i := range each {
						id := p*each + i
						// Half the tasks (the plain Submits) are accepted
						// before Close, so runs reaches at.
						task := boundedCountTask{id: id, ran: ran, runs: &runs, at: total * 3 / 8, half: half}
						var err error
						switch i % 8 {
						case 0, 1, 2, 3:
							err = b.SubmitTask(task, smartpool.WithContext(context.Background()))
						case 4, 5:
							ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%5)*20*time.Microsecond)
							err = b.SubmitTask(task, smartpool.WithContext(ctx))
							cancel()
						case 6:
							err = b.SubmitTask(task)
						case 7:
							err = o.Pool().SubmitTask(0, task)
						}
						if err == nil {
							continue
						}
						refused[id].Add(1)
						kind := err
						switch {
						case errors.Is(err, smartpool.ErrFull), errors.Is(err, smartpool.ErrClosed):
						case errors.Is(err, context.DeadlineExceeded):
							kind = context.DeadlineExceeded
						default:
							t.Errorf("task %d: unexpected error %v", id, err)
						}
						errMu.Lock()
						errCount[kind]++
						errMu.Unlock()
					}
				})
			}
			waitOrFail(t, half, "three eighths of the tasks to run")
			rep := closePool(t, o)
			prod.Wait()

			var nRan, nDropped, nCancelled, nRefused int
			for id := range total {
				r, d, c, f := ran[id].Load(), dropped[id].Load(), cancelled[id].Load(), refused[id].Load()
				if r+d+c+f != 1 {
					t.Errorf("task %d: ran %d, dropped %d, cancelled %d, refused %d times; want exactly one outcome", id, r, d, c, f)
				}
				nRan += int(r)
				nDropped += int(d)
				nCancelled += int(c)
				nRefused += int(f)
			}
			if coc && nDropped != 0 {
				t.Errorf("%d tasks dropped from a complete-on-close channel", nDropped)
			}
			tot := rep.Total()
			if tot.Ran != uint64(nRan) || tot.Dropped != uint64(nDropped) || tot.Cancelled != uint64(nCancelled) || tot.Queued != 0 {
				t.Errorf("report %+v, want %d ran, %d dropped, %d cancelled", tot, nRan, nDropped, nCancelled)
			}
			t.Logf("ran %d, dropped %d, cancelled %d, refused %d: %v", nRan, nDropped, nCancelled, nRefused, errCount)
		})
	}
}

// TestBoundedRequeueWhenFull: a task that yields re-enters through its full
// Bounded, which accepts it over its capacity; under DropOldest the
// re-entry is never the task dropped.
func TestBoundedRequeueWhenFull(t *testing.T) {
	for _, policy := range []string{"default", "DropOldest"} {
		t.Run(policy, func(t *testing.T) {
			var mu sync.Mutex
			var order, dropped []string
			record := func(s *[]string, what string) {
				mu.Lock()
				defer mu.Unlock()
				*s = append(*s, what)
			}
			named := func(name string) func(context.Context) {
				return func(context.Context) { record(&order, name) }
			}
			var opts []channels.BoundedOption
			if policy == "DropOldest" {
				opts = append(opts, channels.DropOldest())
			}
			b := channels.NewBounded(1, opts...)
			o := newBoundedPool(t, boundedBehavior{ch: b, workers: 1, coc: true,
				onEnd: func(_ smartpool.Task, why smartpool.Outcome) {
					if why == smartpool.DroppedDisplaced {
						record(&dropped, "dropped")
					}
				}})

			aStarted, aWait, aDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
			wantErr(t, "submit A", b.Submit(func(ctx context.Context) {
				close(aStarted)
				smartpool.Yield(ctx, func() { <-aWait })
				record(&order, "A resumed")
				close(aDone)
			}), nil)
			waitOrFail(t, aStarted, "A to start")
			release := pin(t, submitTaskOf(b)) // B holds the worker once A yielded
			wantErr(t, "submit C", b.Submit(named("C")), nil)
			if policy == "DropOldest" {
				wantErr(t, "submit D when full", b.Submit(named("D")), nil) // drops C
			} else {
				wantErr(t, "submit D when full", b.Submit(named("D")), smartpool.ErrFull)
			}
			close(aWait)
			boundedEventually(t, "A to re-enter", func() bool { return b.Len() == 2 })
			if b.Len() <= b.Cap() {
				t.Fatalf("Len %d, Cap %d: the re-entry did not go over capacity", b.Len(), b.Cap())
			}
			if policy == "DropOldest" {
				wantErr(t, "submit E when over capacity", b.Submit(named("E")), nil) // drops D, keeps A
			}
			release()
			waitOrFail(t, aDone, "A to finish")
			rep := closePool(t, o)

			wantOrder, wantDropped := []string{"C", "A resumed"}, []string(nil)
			if policy == "DropOldest" {
				wantOrder, wantDropped = []string{"A resumed", "E"}, []string{"dropped", "dropped"}
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(order, wantOrder) || !slices.Equal(dropped, wantDropped) {
				t.Fatalf("ran %v, dropped %v; want %v, %v", order, dropped, wantOrder, wantDropped)
			}
			if tot := rep.Total(); tot.Ran != uint64(len(wantOrder))+1 { // A counts once; the pin too
				t.Fatalf("report %+v, want %d ran", tot, len(wantOrder)+1)
			}
		})
	}
}

// TestBoundedYieldRoundTrip: a task that yields re-enters an empty Bounded
// and runs again, every time.
func TestBoundedYieldRoundTrip(t *testing.T) {
	b := channels.NewBounded(1)
	o := newBoundedPool(t, boundedBehavior{ch: b, workers: 1, coc: true})
	const yields = 3
	wake, done := make(chan struct{}), make(chan struct{})
	wantErr(t, "Submit", b.Submit(func(ctx context.Context) {
		for range yields {
			smartpool.Yield(ctx, func() { <-wake })
		}
		close(done)
	}), nil)
	for range yields {
		wake <- struct{}{}
	}
	waitOrFail(t, done, "the yielding task to finish")
	if tot := closePool(t, o).Total(); tot.Ran != 1 {
		t.Fatalf("report %+v, want 1 ran", tot)
	}
}

// closeGate is a channel that never holds work and whose Close waits for
// release: listed before a Bounded, it holds a pool's Close between stopping
// admission and closing the Bounded.
type closeGate struct {
	source.Plug
	release chan struct{}
}

func newCloseGate() *closeGate {
	g := &closeGate{release: make(chan struct{})}
	g.Plug = source.NewPlug(closeGateSource{g})
	return g
}

func (g *closeGate) Len() int { return 0 }

// closeGateSource is the closeGate's source.Source.
type closeGateSource struct{ g *closeGate }

func (closeGateSource) Queues() int                                { return 1 }
func (closeGateSource) Attach(source.Bits) error                   { return nil }
func (closeGateSource) Push(smartpool.Task, smartpool.Order) error { return smartpool.ErrClosed }
func (closeGateSource) Requeue(smartpool.Task) error               { return smartpool.ErrClosed }
func (closeGateSource) Poll(int) smartpool.Task                    { return nil }
func (s closeGateSource) Close(bool) []smartpool.Task              { <-s.g.release; return nil }

// gatedBehavior is a pool of a closeGate (key 0) and a Bounded (key 1).
type gatedBehavior struct {
	gate *closeGate
	b    *channels.Bounded
}

func (g gatedBehavior) Config() smartpool.Config[int] {
	return smartpool.Config[int]{Workers: 1, Levels: [][]smartpool.ChannelParams[int]{{{Key: 0}, {Key: 1}}}}
}

func (g gatedBehavior) Channel(k int) smartpool.Channel {
	if k == 0 {
		return g.gate
	}
	return g.b
}

func (g gatedBehavior) Followup(k int) int { return k }

// TestBoundedAdmissionStopsBeforeClose: once the pool stopped admission, and
// before it called the Bounded's Close, submits are refused and a slot that
// frees is not handed to a waiting Submit, which is released with ErrClosed.
func TestBoundedAdmissionStopsBeforeClose(t *testing.T) {
	gate := newCloseGate()
	b := channels.NewBounded(1)
	o, err := smartpool.New[int](gatedBehavior{gate: gate, b: b})
	if err != nil {
		t.Fatal(err)
	}
	release := pin(t, submitTaskOf(b))
	wantErr(t, "Submit", b.Submit(noop), nil)
	errc := submitAsync(context.Background(), b, smartpool.Func(func(context.Context) {
		t.Error("a Submit admitted after the pool stopped admission ran")
	}))
	boundedEventually(t, "the Submit to wait", func() bool { return b.Waiting() == 1 })

	closed := make(chan error, 1)
	go func() {
		_, err := o.Close(context.Background())
		closed <- err
	}()
	boundedEventually(t, "Close to stop admission", func() bool { return o.Pool().State() != smartpool.Running })
	wantErr(t, "Submit after admission stopped", b.Submit(noop), smartpool.ErrClosed)
	if b.Waiting() != 1 {
		t.Fatalf("Waiting %d: the Bounded was closed too early for this test", b.Waiting())
	}
	release() // the worker polls the queued task: the slot must not go to the waiter
	select {
	case err := <-errc:
		wantErr(t, "waiting Submit", err, smartpool.ErrClosed)
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting Submit was not released")
	}
	close(gate.release)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return")
	}
}

// TestBoundedAttach: no task is taken before a pool serves the channel, the
// pool runs what is submitted once it does, and a second pool cannot take
// the channel.
func TestBoundedAttach(t *testing.T) {
	b := channels.NewBounded(2)
	ran := make(chan struct{})
	task := func(context.Context) { close(ran) }
	wantErr(t, "Submit before New", b.Submit(task), smartpool.ErrNotServed)
	wantErr(t, "Submit with a context before New", b.Submit(task, smartpool.WithContext(context.Background())), smartpool.ErrNotServed)
	newBoundedPool(t, boundedBehavior{ch: b, workers: 1})
	wantErr(t, "Submit after New", b.Submit(task), nil)
	waitOrFail(t, ran, "the task")
	_, err := smartpool.New[int](boundedBehavior{ch: b, workers: 1})
	if !errors.Is(err, smartpool.ErrAttached) {
		t.Fatalf("second New: %v, want ErrAttached", err)
	}
}

// BenchmarkBoundedSubmitPoll measures one SubmitTask and one Poll per
// operation on one goroutine, next to FIFO's Push and Poll.
func BenchmarkBoundedSubmitPoll(b *testing.B) {
	task := smartpool.Func(noop)
	for _, depth := range []int{0, 1024} {
		cases := []struct {
			name string
			make func() (ch smartpool.Channel, submit func() error)
		}{
			{"Bounded", func() (smartpool.Channel, func() error) {
				bd := channels.NewBounded(depth + 1)
				return bd, func() error { return bd.SubmitTask(task) }
			}},
			{"FIFO", func() (smartpool.Channel, func() error) {
				f := channels.NewFIFO()
				return f, func() error { return src(f).Push(task, smartpool.Order{}) }
			}},
		}
		for _, c := range cases {
			b.Run(fmt.Sprintf("%s/depth=%d", c.name, depth), func(b *testing.B) {
				ch, submit := c.make()
				for range depth {
					if err := submit(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := submit(); err != nil {
						b.Fatal(err)
					}
					if src(ch).Poll(0) == nil {
						b.Fatal("Poll returned nil")
					}
				}
			})
		}
	}
}

// BenchmarkBoundedPoolSubmit runs tasks through a pool of four workers,
// submitted from parallel goroutines: a Bounded too large to fill, through
// Submit without and with a context, against an unbounded FIFO; and a Bounded of 64,
// where producers do wait.
func BenchmarkBoundedPoolSubmit(b *testing.B) {
	const huge = math.MaxInt
	cases := []struct {
		name   string
		ch     func() smartpool.Channel
		submit func(ch smartpool.Channel, t smartpool.Task) error
	}{
		{"FIFO/Push", func() smartpool.Channel { return channels.NewFIFO() },
			func(ch smartpool.Channel, t smartpool.Task) error { return src(ch).Push(t, smartpool.Order{}) }},
		{"Bounded/Submit", func() smartpool.Channel { return channels.NewBounded(huge) },
			func(ch smartpool.Channel, t smartpool.Task) error { return ch.(*channels.Bounded).SubmitTask(t) }},
		{"Bounded/SubmitWithContext", func() smartpool.Channel { return channels.NewBounded(huge) },
			func(ch smartpool.Channel, t smartpool.Task) error {
				return ch.(*channels.Bounded).SubmitTask(t, smartpool.WithContext(context.Background()))
			}},
		{"Bounded64/SubmitWithContext", func() smartpool.Channel { return channels.NewBounded(64) },
			func(ch smartpool.Channel, t smartpool.Task) error {
				return ch.(*channels.Bounded).SubmitTask(t, smartpool.WithContext(context.Background()))
			}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ch := c.ch()
			o := newBoundedPool(b, boundedBehavior{ch: ch, workers: 4, coc: true})
			task := smartpool.Func(noop)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := c.submit(ch, task); err != nil {
						b.Error(err)
						return
					}
				}
			})
			closePool(b, o) // runs what is left: part of the cost
		})
	}
}

// A task of the pool that submits to its full Bounded does not wait for
// room only tasks can free: it runs the new task in its own place, at once,
// and Submit returns nil once it ended. On a one-worker pool a wait would
// hold the only worker the queued task needs: a deadlock.
func TestBounded_SubmitFromTaskAtCapacityRunsInPlace(t *testing.T) {
	b := channels.NewBounded(1)
	o := newPool(t, poolOpts{workers: 1, coc: true}, b)
	var order []string // written by the one task goroutine, read after done
	done := make(chan struct{})
	var err1, err2 error
	if err := b.Submit(func(ctx context.Context) {
		defer close(done)
		bounded, cancel := context.WithTimeout(ctx, 10*time.Second) // a hang fails, it does not hang the binary
		defer cancel()
		err1 = b.Submit(func(context.Context) { order = append(order, "queued") }) // fills the Bounded
		err2 = b.Submit(func(context.Context) { order = append(order, "in place") }, smartpool.WithContext(bounded))
		order = append(order, "after Submit")
	}, smartpool.WithContext(context.Background())); err != nil {
		t.Fatal(err)
	}
	waitOrFail(t, done, "the submitting task")
	if err1 != nil || err2 != nil {
		t.Fatalf("Submit from a task: %v, then on the full Bounded %v; want nil, nil", err1, err2)
	}
	rep := closePool(t, o) // the queued task has run
	if got := strings.Join(order, ", "); got != "in place, after Submit, queued" {
		t.Fatalf("ran %s; want in place, after Submit, queued", got)
	}
	if rep.Total().Ran != 3 || b.Stats().CallerRan != 0 {
		t.Fatalf("%d ran, %d CallerRan; want 3 ran, none by CallerRuns", rep.Total().Ran, b.Stats().CallerRan)
	}
}
