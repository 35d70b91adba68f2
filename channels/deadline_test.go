package channels_test

import (
	"encoding/binary"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// TestDeadlineDropLate checks the late policy on a fake clock, where "now"
// is exact: a deadline before now is late, one at now is not.
func TestDeadlineDropLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var dropped []int
		d := servedEnds(channels.NewDeadline(channels.DropLate()), func(task smartpool.Task, why smartpool.Outcome) {
			if why != smartpool.DroppedLate {
				t.Errorf("task %d ended %v, want dropped late", idOf(t, task), why)
			}
			dropped = append(dropped, idOf(t, task))
		})
		now := time.Now()
		for id, at := range []time.Time{
			now.Add(time.Nanosecond),  // 0: on time now, late after the sleep
			now.Add(-time.Nanosecond), // 1: late
			{},                        // 2: late
			now,                       // 3: due exactly now: not late
			now.Add(time.Hour),        // 4: on time
		} {
			mustOK(t, d.SubmitTask(at, idTask(id)))
		}
		if got := idOf(t, src(d).Poll(0)); got != 3 {
			t.Fatalf("Poll = %d, want 3", got)
		}
		if !slices.Equal(dropped, []int{2, 1}) {
			t.Fatalf("dropped %v, want [2 1]", dropped)
		}
		if got := idOf(t, src(d).Poll(0)); got != 0 {
			t.Fatalf("Poll = %d, want 0 (due in 1ns)", got)
		}
		time.Sleep(2 * time.Hour) // advance the fake clock
		if task := src(d).Poll(0); task != nil {
			t.Fatalf("Poll = %d, want nil: task 4 is late", idOf(t, task))
		}
		if !slices.Equal(dropped, []int{2, 1, 4}) {
			t.Fatalf("dropped %v, want [2 1 4]", dropped)
		}
		if s := d.Stats(); s != (channels.DeadlineStats{DroppedLate: 3}) {
			t.Fatalf("Stats = %+v", s)
		}
		if d.Len() != 0 {
			t.Fatalf("Len = %d, want 0", d.Len())
		}
	})
}

// TestDeadlineLateRuns checks the default policy: late tasks are returned,
// in deadline order, and counted.
func TestDeadlineLateRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := served(channels.NewDeadline())
		now := time.Now()
		mustOK(t, d.SubmitTask(now.Add(time.Second), idTask(0)))
		mustOK(t, d.SubmitTask(now, idTask(1)))
		mustOK(t, d.SubmitTask(now.Add(-time.Second), idTask(2)))
		mustOK(t, d.SubmitTask(now.Add(time.Hour), idTask(3)))
		want := []int{2, 1, 0, 3}
		wantLate := []uint64{1, 1, 2, 2}
		for i := range want {
			if i == 2 {
				time.Sleep(time.Minute) // task 0 becomes late, task 3 does not
			}
			if got := idOf(t, src(d).Poll(0)); got != want[i] {
				t.Fatalf("Poll #%d = %d, want %d", i, got, want[i])
			}
			if s := d.Stats(); s.Late != wantLate[i] || s.DroppedLate != 0 {
				t.Fatalf("after Poll #%d: Stats = %+v, want Late %d", i, s, wantLate[i])
			}
		}
	})
}

// TestDeadlineDropLateBatches drops more late tasks than one lock hold takes
// and checks every one reaches OnEnd exactly once.
func TestDeadlineDropLateBatches(t *testing.T) {
	const late = 100
	calls := make(map[int]int)
	d := servedEnds(channels.NewDeadline(channels.DropLate()), func(task smartpool.Task, _ smartpool.Outcome) { calls[idOf(t, task)]++ })
	for i := range late {
		mustOK(t, d.SubmitTask(time.Unix(int64(i), 0), idTask(i)))
	}
	mustOK(t, d.SubmitTask(time.Now().Add(time.Hour), idTask(late)))
	if got := idOf(t, src(d).Poll(0)); got != late {
		t.Fatalf("Poll = %d, want %d", got, late)
	}
	for i := range late {
		if calls[i] != 1 {
			t.Fatalf("OnEnd saw task %d %d times", i, calls[i])
		}
	}
	if s := d.Stats(); s.DroppedLate != late {
		t.Fatalf("Stats = %+v", s)
	}
	// Only late tasks, more than a batch: Poll drops them all, returns nil.
	for i := range 2 * late {
		mustOK(t, d.SubmitTask(time.Time{}, idTask(i)))
	}
	if task := src(d).Poll(0); task != nil || d.Len() != 0 {
		t.Fatalf("Poll = %v, Len %d; want nil, 0", task, d.Len())
	}
}

// TestDeadlineDropLateNotUnderLock has OnEnd use the channel the dropped
// task came from, from another goroutine: that would deadlock if Poll held
// its lock.
func TestDeadlineDropLateNotUnderLock(t *testing.T) {
	d := channels.NewDeadline(channels.DropLate())
	calls := 0
	servedEnds(d, func(smartpool.Task, smartpool.Outcome) {
		calls++
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = d.Len()
			_ = d.Stats()
			if err := d.SubmitTask(time.Now().Add(time.Hour), idTask(9)); err != nil { // a retry, say
				t.Error(err)
			}
		}()
		waitOrFail(t, done, "Len from OnEnd (is it called under the lock?)")
		_ = d.Len() // and from OnEnd's own goroutine
	})
	mustOK(t, d.SubmitTask(time.Time{}, idTask(1)))
	mustOK(t, d.SubmitTask(time.Time{}, idTask(2)))
	if task := src(d).Poll(0); task != nil {
		t.Fatalf("Poll = %d, want nil", idOf(t, task))
	}
	if calls != 2 || d.Len() != 2 {
		t.Fatalf("%d OnEnd calls, Len %d; want 2 and 2", calls, d.Len())
	}
	if got := idOf(t, src(d).Poll(0)); got != 9 {
		t.Fatalf("Poll = %d, want the resubmitted 9", got)
	}
}

// TestDeadlineDropLateSilent drops without an OnEnd, and still counts.
func TestDeadlineDropLateSilent(t *testing.T) {
	d := served(channels.NewDeadline(channels.DropLate()))
	mustOK(t, d.SubmitTask(time.Time{}, idTask(1)))
	if src(d).Poll(0) != nil || d.Stats().DroppedLate != 1 {
		t.Fatalf("Stats = %+v", d.Stats())
	}
}

// TestDeadlineZeroValue checks that a zero Deadline, not made by
// NewDeadline, holds no Source and refuses tasks as an unattached channel
// does.
func TestDeadlineZeroValue(t *testing.T) {
	var d channels.Deadline
	if src(&d) != nil || d.Len() != 0 || d.Stats() != (channels.DeadlineStats{}) {
		t.Fatal("zero Deadline is not empty, or holds a Source")
	}
	wantErr(t, "Submit", d.Submit(time.Time{}, noop), smartpool.ErrNotServed)
	wantErr(t, "SubmitTask with options", d.SubmitTask(time.Time{}, idTask(1), smartpool.WithContext(t.Context())), smartpool.ErrNotServed)
}

// decodeDeadline turns fuzz bytes into a deadline: an extreme one, one of a
// few close values (ties), or an arbitrary (seconds, nanoseconds) pair.
func decodeDeadline(data []byte, extremes []time.Time, base time.Time) (time.Time, []byte) {
	if len(data) == 0 {
		return time.Time{}, nil
	}
	sel, data := data[0], data[1:]
	switch {
	case int(sel) < len(extremes):
		return extremes[sel], data
	case sel < 128:
		return base.Add(time.Duration(sel%4) * time.Nanosecond), data
	case len(data) >= 12:
		sec := int64(binary.LittleEndian.Uint64(data))
		nsec := int64(binary.LittleEndian.Uint32(data[8:]))
		return time.Unix(sec, nsec), data[12:] // nsec >= 1e9 is normalised by Unix
	default:
		return base.Add(-time.Duration(sel)), data
	}
}

// maxFuzzInput bounds the operations one fuzz input runs.
const maxFuzzInput = 512

// FuzzDeadlineOrder checks Deadline against the reference model under a
// byte-coded sequence of pushes and polls with arbitrary deadlines.
func FuzzDeadlineOrder(f *testing.F) {
	f.Add([]byte{1, 0, 1, 2, 1, 5, 1, 6, 1, 7, 0, 0, 0})
	f.Add([]byte{1, 100, 1, 100, 2, 101, 1, 100, 0, 0, 0, 0})
	f.Add([]byte{1, 200, 255, 255, 255, 255, 255, 255, 255, 127, 255, 255, 255, 255, 2, 3, 0, 1, 4, 0, 0, 3})
	f.Add([]byte{2, 9, 2, 10, 2, 11, 2, 12, 2, 13, 2, 14, 0, 0, 3})
	// Fixed times, no clock: the same input must always cover the same code.
	base := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	extremes := extremeDeadlinesAround(base.Add(time.Millisecond))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			data = data[:maxFuzzInput] // the model is quadratic: stay fast
		}
		d := served(channels.NewDeadline())
		var model refDeadline
		next := 0
		for len(data) > 0 {
			op := data[0]
			data = data[1:]
			switch op % 4 {
			case 0:
				want := -1
				if it, ok := model.pop(); ok {
					want = it.id
				}
				if got := idOf(t, src(d).Poll(0)); got != want {
					t.Fatalf("Poll = %d, want %d", got, want)
				}
			case 1, 2:
				var at time.Time
				at, data = decodeDeadline(data, extremes, base)
				if err := d.SubmitTask(at, idTask(next)); err != nil {
					t.Fatal(err)
				}
				model.push(at, next)
				next++
			case 3:
				want := model.sortedIDs()
				var got []int
				for _, task := range src(d).Close(true) {
					got = append(got, idOf(t, task))
				}
				if !slices.Equal(got, want) {
					t.Fatalf("Close(true) = %v, want %v", got, want)
				}
				return
			}
			if d.Len() != len(model.items) {
				t.Fatalf("Len = %d, want %d", d.Len(), len(model.items))
			}
		}
	})
}
