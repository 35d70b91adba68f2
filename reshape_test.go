package smartpool_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// rsEventually polls cond until it holds, failing the test after long.
func rsEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(long)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Microsecond) // a poll of an event, bounded above; never a synchronisation by itself
	}
}

// rsRecv waits for c, failing after long.
func rsRecv[T any](t *testing.T, what string, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(long):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// rsEndings records every OnEnd call, per task id.
type rsEndings struct {
	mu  sync.Mutex
	got map[int][]smartpool.Outcome
}

func rsNewEndings() *rsEndings { return &rsEndings{got: map[int][]smartpool.Outcome{}} }

func (en *rsEndings) onEnd(t smartpool.Task, o smartpool.Outcome) {
	en.mu.Lock()
	defer en.mu.Unlock()
	id := -1
	if it, ok := t.(*rsIdTask); ok {
		id = it.id
	}
	en.got[id] = append(en.got[id], o)
}

// check asserts that tasks 0..n-1 each ended once, want[o] of them with o.
func (en *rsEndings) check(t *testing.T, n int, want map[smartpool.Outcome]int) {
	t.Helper()
	en.mu.Lock()
	defer en.mu.Unlock()
	count := map[smartpool.Outcome]int{}
	for id := range n {
		os := en.got[id]
		if len(os) != 1 {
			t.Errorf("task %d ended %d times: %v", id, len(os), os)
			continue
		}
		count[os[0]]++
	}
	if len(en.got) != n {
		t.Errorf("%d tasks ended, want %d", len(en.got), n)
	}
	for o, k := range want {
		if count[o] != k {
			t.Errorf("%v: %d tasks, want %d (all: %v)", o, count[o], k, count)
		}
	}
}

// rsIdTask is a task with an id, which OnEnd receives back.
type rsIdTask struct {
	id int
	fn func(ctx context.Context)
}

func (t *rsIdTask) Run(ctx context.Context) { t.fn(ctx) }

// rsNewPool starts a pool with one listed FIFO "base" in level 0, an empty
// level 1, and spare room.
func rsNewPool(t *testing.T, workers int, spare []int) (*smartpool.OwnedPool[string], *smartpool.Pool[string]) {
	t.Helper()
	return rsNewPoolWith(t, smartpool.Config[string]{Workers: workers, Spare: spare})
}

// rsNewPoolWith is rsNewPool with cfg's settings (its Levels are set here,
// and the stall watchdog off); the pool closes when the test ends.
func rsNewPoolWith(t *testing.T, cfg smartpool.Config[string]) (*smartpool.OwnedPool[string], *smartpool.Pool[string]) {
	t.Helper()
	levels := smartpool.Levels[string]{{{Key: "base", Channel: channels.NewFIFO()}}}
	for len(levels) < len(cfg.Spare) {
		levels = append(levels, nil)
	}
	cfg.StallAfter = -1
	o, err := smartpool.New(levels.With(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), long)
		defer cancel()
		if _, err := o.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return o, o.Pool()
}

func TestReshape_AddThenSubmit(t *testing.T) {
	_, p := rsNewPool(t, 2, []int{1, 2})
	en := rsNewEndings()
	f := channels.NewFIFO()
	if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "tenant-7", OnEnd: en.onEnd}, f, "tenant-7"); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 2)
	if err := p.SubmitTask("tenant-7", &rsIdTask{id: 0, fn: func(context.Context) { done <- 0 }}); err != nil {
		t.Fatalf("by key: %v", err)
	}
	if err := f.Submit(func(context.Context) { done <- 1 }); err != nil {
		t.Fatalf("through the channel: %v", err)
	}
	rsRecv(t, "first task", done)
	rsRecv(t, "second task", done)
	rsEventually(t, "both counted", func() bool {
		c, ok := p.Stats().Channel("tenant-7")
		return ok && c.Ran == 2 && c.Level == 1
	})
	if n := len(p.Stats().Channels); n != 2 {
		t.Errorf("Stats lists %d channels, want 2", n)
	}
}

func TestReshape_AddChannelErrors(t *testing.T) {
	o, p := rsNewPool(t, 1, []int{0, 1})
	attached := channels.NewFIFO()
	if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "a"}, attached, "a"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		level  int
		params smartpool.ChannelParams[string]
		c      smartpool.Channel
		follow string
	}{
		{"key in use", 1, smartpool.ChannelParams[string]{Key: "base"}, channels.NewFIFO(), "base"},
		{"level out of range", 2, smartpool.ChannelParams[string]{Key: "x"}, channels.NewFIFO(), "x"},
		{"negative level", -1, smartpool.ChannelParams[string]{Key: "x"}, channels.NewFIFO(), "x"},
		{"nil channel", 1, smartpool.ChannelParams[string]{Key: "x"}, nil, "x"},
		{"unknown followup", 0, smartpool.ChannelParams[string]{Key: "x"}, channels.NewFIFO(), "nope"},
		{"followup does not complete on close", 0, smartpool.ChannelParams[string]{Key: "x", CompleteOnClose: true}, channels.NewFIFO(), "base"},
		{"full level", 1, smartpool.ChannelParams[string]{Key: "x"}, channels.NewFIFO(), "x"},
		{"no spare in the level", 0, smartpool.ChannelParams[string]{Key: "x"}, channels.NewFIFO(), "x"},
		{"bad cap", 1, smartpool.ChannelParams[string]{Key: "x", MaxRunning: -1}, channels.NewFIFO(), "x"},
		{"attached already", 1, smartpool.ChannelParams[string]{Key: "x"}, attached, "x"},
	}
	for _, tc := range cases {
		err := p.AddChannel(tc.level, tc.params, tc.c, tc.follow)
		if !errors.Is(err, smartpool.ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", tc.name, err)
		}
	}
	if n := len(p.Stats().Channels); n != 2 {
		t.Errorf("after refusals, Stats lists %d channels, want 2", n)
	}
	// A channel another pool holds.
	other := channels.NewFIFO()
	o2, err := smartpool.New(smartpool.Levels[string]{{{Key: "o", Channel: other}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AddChannel(0, smartpool.ChannelParams[string]{Key: "x"}, other, "x"); !errors.Is(err, smartpool.ErrConfig) {
		t.Errorf("another pool's channel: %v, want ErrConfig", err)
	}
	if _, err := o2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A pool without Spare.
	o3, err := smartpool.New(smartpool.Levels[string]{{{Key: "o", Channel: channels.NewFIFO()}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o3.Pool().AddChannel(0, smartpool.ChannelParams[string]{Key: "x"}, channels.NewFIFO(), "x"); !errors.Is(err, smartpool.ErrConfig) {
		t.Errorf("no Spare: %v, want ErrConfig", err)
	}
	if _, err := o3.Pool().RemoveChannel(context.Background(), "o", smartpool.Drain); !errors.Is(err, smartpool.ErrConfig) {
		t.Errorf("RemoveChannel without Spare: %v, want ErrConfig", err)
	}
	if _, err := o3.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// RemoveChannel's own errors.
	if _, err := p.RemoveChannel(context.Background(), "nope", smartpool.Drain); !errors.Is(err, smartpool.ErrUnknownKey) {
		t.Errorf("RemoveChannel(unknown): %v, want ErrUnknownKey", err)
	}
	if _, err := p.RemoveChannel(context.Background(), "a", 0); !errors.Is(err, smartpool.ErrConfig) {
		t.Errorf("RemoveChannel(policy 0): %v, want ErrConfig", err)
	}
	// After Close.
	if _, err := o.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "late"}, channels.NewFIFO(), "late"); !errors.Is(err, smartpool.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
	if _, err := p.RemoveChannel(context.Background(), "a", smartpool.Drain); !errors.Is(err, smartpool.ErrClosed) {
		t.Errorf("RemoveChannel after Close: %v, want ErrClosed", err)
	}
}

// A channel that is another's followup cannot be rsRemoved first.
func TestReshape_RemoveFollowupRefused(t *testing.T) {
	_, p := rsNewPool(t, 1, []int{2})
	if err := p.AddChannel(0, smartpool.ChannelParams[string]{Key: "b"}, channels.NewFIFO(), "base"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RemoveChannel(context.Background(), "base", smartpool.Drain); !errors.Is(err, smartpool.ErrConfig) {
		t.Fatalf("removing b's followup: %v, want ErrConfig", err)
	}
	if _, err := p.RemoveChannel(context.Background(), "b", smartpool.Drain); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RemoveChannel(context.Background(), "base", smartpool.Drain); err != nil {
		t.Fatalf("base, once b is gone: %v", err)
	}
}

// rsGate is a task that signals it started and waits to be released.
type rsGate struct {
	started, release chan struct{}
}

func rsNewGate() rsGate { return rsGate{make(chan struct{}), make(chan struct{})} }

func (g rsGate) run(context.Context) {
	close(g.started)
	<-g.release
}

// rsRefusing waits until the channel named key refuses submits, by key and
// through the channel: its removal has started.
func rsRefusing(t *testing.T, p *smartpool.Pool[string], key string, f *channels.FIFO) {
	t.Helper()
	rsEventually(t, "the removal to start", func() bool {
		c, ok := p.Stats().Channel(key)
		return ok && c.Removing
	})
	if err := f.Submit(func(context.Context) {}); !errors.Is(err, smartpool.ErrClosed) {
		t.Errorf("through the channel during the removal: %v, want ErrClosed", err)
	}
	if err := p.Submit(key, func(context.Context) {}); !errors.Is(err, smartpool.ErrClosed) {
		t.Errorf("by key during the removal: %v, want ErrClosed", err)
	}
}

type rsRemoved struct {
	st  smartpool.ChannelStats[string]
	err error
}

func rsRemoveAsync(p *smartpool.Pool[string], key string, policy smartpool.RemovePolicy) <-chan rsRemoved {
	res := make(chan rsRemoved, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), long)
		defer cancel()
		st, err := p.RemoveChannel(ctx, key, policy)
		res <- rsRemoved{st, err}
	}()
	return res
}

// rsAddRunning adds FIFO "t" to level 1, with OnEnd recorded, and starts a
// gate task (id 0) on it: the caller holds the worker until g.release.
func rsAddRunning(t *testing.T, p *smartpool.Pool[string]) (*rsEndings, *channels.FIFO, rsGate) {
	t.Helper()
	en := rsNewEndings()
	f := channels.NewFIFO()
	if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "t", OnEnd: en.onEnd}, f, "t"); err != nil {
		t.Fatal(err)
	}
	g := rsNewGate()
	if err := p.SubmitTask("t", &rsIdTask{id: 0, fn: g.run}); err != nil {
		t.Fatal(err)
	}
	rsRecv(t, "the running task", g.started)
	return en, f, g
}

// Tasks queued in the channel and running when the removal starts.
func TestReshape_RemoveQueuedAndRunning(t *testing.T) {
	for _, policy := range []smartpool.RemovePolicy{smartpool.Drain, smartpool.Drop} {
		t.Run(policy.String(), func(t *testing.T) {
			_, p := rsNewPool(t, 1, []int{0, 1})
			en, f, g := rsAddRunning(t, p)
			const queued = 5
			var ran atomic.Int32
			for i := 1; i <= queued; i++ {
				if err := p.SubmitTask("t", &rsIdTask{id: i, fn: func(context.Context) { ran.Add(1) }}); err != nil {
					t.Fatal(err)
				}
			}
			res := rsRemoveAsync(p, "t", policy)
			rsRefusing(t, p, "t", f)
			close(g.release)
			r := rsRecv(t, "the removal", res)
			if r.err != nil {
				t.Fatal(r.err)
			}
			wantRan, wantDropped := 1+queued, 0
			if policy == smartpool.Drop {
				wantRan, wantDropped = 1, queued
			}
			if r.st.Ran != uint64(wantRan) || r.st.Dropped != uint64(wantDropped) || r.st.Key != "t" || r.st.Queued != 0 {
				t.Errorf("stats %+v: want Ran %d Dropped %d", r.st, wantRan, wantDropped)
			}
			en.check(t, 1+queued, map[smartpool.Outcome]int{smartpool.Ran: wantRan, smartpool.DroppedOnClose: wantDropped})
			if err := p.Submit("t", func(context.Context) {}); !errors.Is(err, smartpool.ErrUnknownKey) {
				t.Errorf("by key after the removal: %v, want ErrUnknownKey", err)
			}
			if err := f.Submit(func(context.Context) {}); !errors.Is(err, smartpool.ErrClosed) {
				t.Errorf("through the rsRemoved channel: %v, want ErrClosed", err)
			}
			s := p.Stats()
			if _, ok := s.Channel("t"); ok {
				t.Error("Stats still lists the rsRemoved channel")
			}
			if s.Removed.Ran != uint64(wantRan) || s.Removed.Dropped != uint64(wantDropped) || s.Total().Finished() != uint64(1+queued) {
				t.Errorf("Removed %+v, Total %+v: want the rsRemoved channel's counts", s.Removed, s.Total())
			}
		})
	}
}

// Tasks in a worker's run buffer when the removal starts: a lowest-level
// FIFO is polled in batches.
func TestReshape_RemoveBuffered(t *testing.T) {
	for _, policy := range []smartpool.RemovePolicy{smartpool.Drain, smartpool.Drop} {
		t.Run(policy.String(), func(t *testing.T) {
			_, p := rsNewPool(t, 1, []int{0, 1})
			en := rsNewEndings()
			f := channels.NewFIFO()
			if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "t", OnEnd: en.onEnd}, f, "t"); err != nil {
				t.Fatal(err)
			}
			g0, g1 := rsNewGate(), rsNewGate()
			const n = 10
			ts := make([]smartpool.Task, n)
			for i := range ts {
				switch i {
				case 0:
					ts[i] = &rsIdTask{id: i, fn: g0.run}
				case 1:
					ts[i] = &rsIdTask{id: i, fn: g1.run}
				default:
					ts[i] = &rsIdTask{id: i, fn: func(context.Context) {}}
				}
			}
			if err := p.SubmitTask("t", ts[0]); err != nil {
				t.Fatal(err)
			}
			rsRecv(t, "task 0", g0.started)
			for _, tk := range ts[1:] {
				if err := p.SubmitTask("t", tk); err != nil {
					t.Fatal(err)
				}
			}
			close(g0.release)
			rsRecv(t, "task 1", g1.started) // polled in a batch: the worker's buffer holds the next ones
			if f.Len() >= n-2 {
				t.Fatalf("the FIFO still holds %d tasks: no batch was taken", f.Len())
			}
			if c, _ := p.Stats().Channel("t"); c.Queued != n-2 {
				t.Fatalf("Queued %d, want %d (buffered ones included)", c.Queued, n-2)
			}
			res := rsRemoveAsync(p, "t", policy)
			rsRefusing(t, p, "t", f)
			close(g1.release)
			r := rsRecv(t, "the removal", res)
			if r.err != nil {
				t.Fatal(r.err)
			}
			wantRan, wantDropped := n, 0
			if policy == smartpool.Drop {
				wantRan, wantDropped = 2, n-2
			}
			if r.st.Ran != uint64(wantRan) || r.st.Dropped != uint64(wantDropped) {
				t.Errorf("stats Ran %d Dropped %d: want %d, %d", r.st.Ran, r.st.Dropped, wantRan, wantDropped)
			}
			en.check(t, n, map[smartpool.Outcome]int{smartpool.Ran: wantRan, smartpool.DroppedOnClose: wantDropped})
		})
	}
}

// A task yielded when the removal starts, re-entering through its own
// channel (Drain runs it, Drop drops it) or through another (it runs).
func TestReshape_RemoveYielded(t *testing.T) {
	for _, self := range []bool{true, false} {
		for _, policy := range []smartpool.RemovePolicy{smartpool.Drain, smartpool.Drop} {
			t.Run(fmt.Sprintf("%v/self=%v", policy, self), func(t *testing.T) {
				_, p := rsNewPool(t, 2, []int{0, 1})
				en := rsNewEndings()
				f := channels.NewFIFO()
				follow := "t"
				if !self {
					follow = "base"
				}
				if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "t", OnEnd: en.onEnd}, f, follow); err != nil {
					t.Fatal(err)
				}
				waiting, wake := make(chan struct{}), make(chan struct{})
				var after atomic.Bool
				task := &rsIdTask{id: 0, fn: func(ctx context.Context) {
					smartpool.Yield(ctx, func() {
						close(waiting)
						<-wake
					})
					after.Store(true)
				}}
				if err := p.SubmitTask("t", task); err != nil {
					t.Fatal(err)
				}
				rsRecv(t, "the task to yield", waiting)
				rsEventually(t, "the yield counted", func() bool {
					c, _ := p.Stats().Channel("t")
					return c.Yielded == 1
				})
				res := rsRemoveAsync(p, "t", policy)
				rsRefusing(t, p, "t", f)
				close(wake)
				r := rsRecv(t, "the removal", res)
				if r.err != nil {
					t.Fatal(r.err)
				}
				dropped := policy == smartpool.Drop && self
				if dropped {
					if r.st.Dropped != 1 || r.st.Ran != 0 || after.Load() {
						t.Errorf("stats %+v, ran on: %v: want it dropped", r.st, after.Load())
					}
					en.check(t, 1, map[smartpool.Outcome]int{smartpool.DroppedOnClose: 1})
				} else {
					if r.st.Ran != 1 || r.st.Dropped != 0 || !after.Load() {
						t.Errorf("stats %+v, ran on: %v: want it run", r.st, after.Load())
					}
					en.check(t, 1, map[smartpool.Outcome]int{smartpool.Ran: 1})
				}
			})
		}
	}
}

// Close while a removal waits for a running task: neither hangs, and each
// task is reported once.
func TestReshape_CloseDuringRemoval(t *testing.T) {
	o, p := rsNewPool(t, 1, []int{0, 1})
	en, f, g := rsAddRunning(t, p)
	for i := 1; i <= 3; i++ {
		if err := p.SubmitTask("t", &rsIdTask{id: i, fn: func(context.Context) {}}); err != nil {
			t.Fatal(err)
		}
	}
	res := rsRemoveAsync(p, "t", smartpool.Drain)
	rsRefusing(t, p, "t", f)
	closed := make(chan *smartpool.Report[string], 1)
	go func() {
		r, err := o.Close(context.Background())
		if err != nil {
			t.Errorf("Close: %v", err)
		}
		closed <- r
	}()
	rsEventually(t, "Close to start", func() bool { return p.State() != smartpool.Running })
	close(g.release)
	rep := rsRecv(t, "Close", closed)
	r := rsRecv(t, "the removal", res)
	if r.err != nil {
		t.Fatal(r.err)
	}
	// The channel does not complete on close: Close dropped what it held.
	if r.st.Ran != 1 || r.st.Dropped != 3 {
		t.Errorf("removal stats Ran %d Dropped %d: want 1, 3", r.st.Ran, r.st.Dropped)
	}
	en.check(t, 4, map[smartpool.Outcome]int{smartpool.Ran: 1, smartpool.DroppedOnClose: 3})
	if tot := rep.Total(); tot.Ran+tot.Dropped != 4 {
		t.Errorf("Close's report: Ran %d Dropped %d, want 4 in all", tot.Ran, tot.Dropped)
	}
}

// Freed room is reused: a full level takes a new channel once one left.
func TestReshape_ReuseFreedRoom(t *testing.T) {
	_, p := rsNewPool(t, 2, []int{0, 1})
	for round := range 20 {
		key := fmt.Sprintf("tenant-%d", round)
		f := channels.NewFIFO()
		if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: key}, f, key); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "extra"}, channels.NewFIFO(), "extra"); !errors.Is(err, smartpool.ErrConfig) {
			t.Fatalf("round %d: a second channel in a full level: %v, want ErrConfig", round, err)
		}
		done := make(chan struct{})
		if err := f.Submit(func(context.Context) { close(done) }); err != nil {
			t.Fatal(err)
		}
		rsRecv(t, "the tenant's task", done)
		st, err := p.RemoveChannel(context.Background(), key, smartpool.Drain)
		if err != nil {
			t.Fatal(err)
		}
		if st.Ran != 1 {
			t.Fatalf("round %d: Ran %d, want 1 (the slot's earlier channels' counts leak in)", round, st.Ran)
		}
	}
	s := p.Stats()
	if s.Removed.Ran != 20 || len(s.Channels) != 1 {
		t.Errorf("Removed.Ran %d, %d channels: want 20, 1", s.Removed.Ran, len(s.Channels))
	}
}

// A by-key submit of a key added later, racing adds and removals of other
// keys, under the race detector.
func TestReshapeConcurrent(t *testing.T) {
	_, p := rsNewPool(t, 2, []int{1, 4})
	var wg sync.WaitGroup
	var ran atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for round := range 25 {
				key := fmt.Sprintf("w%d-%d", w, round)
				f := channels.NewFIFO()
				for {
					err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: key}, f, key)
					if err == nil {
						break
					}
					if !errors.Is(err, smartpool.ErrConfig) {
						t.Error(err)
						return
					}
					time.Sleep(50 * time.Microsecond) // the level is full: another worker frees room
				}
				for range 5 {
					if err := p.Submit(key, func(context.Context) { ran.Add(1) }); err != nil {
						t.Error(err)
					}
				}
				policy := smartpool.Drain
				if round%2 == 1 {
					policy = smartpool.Drop
				}
				if _, err := p.RemoveChannel(context.Background(), key, policy); err != nil {
					t.Error(err)
				}
				_ = p.Stats()
			}
		})
	}
	wg.Wait()
	s := p.Stats()
	if tot := s.Total(); tot.Ran+tot.Dropped != 4*25*5 || tot.Ran != uint64(ran.Load()) {
		t.Errorf("Total Ran %d Dropped %d (ran %d): want %d in all", tot.Ran, tot.Dropped, ran.Load(), 4*25*5)
	}
}

// TestReshape_StaleKeySubmit pauses a by-key submit between its lookup of
// the key and its push while the channel is removed and another is added in
// the level's only spare room: the slot must not be reused under the
// submit, whose task must be refused with ErrClosed and never reach the new
// channel.
func TestReshape_StaleKeySubmit(t *testing.T) {
	_, p := rsNewPool(t, 2, []int{0, 1})
	if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "a"}, channels.NewFIFO(), "a"); err != nil {
		t.Fatal(err)
	}
	looked, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	smartpool.SetAfterLookup(p, func() {
		once.Do(func() {
			close(looked)
			<-resume
		})
	})
	var ran atomic.Int32
	submitted := make(chan error, 1)
	go func() {
		submitted <- p.Submit("a", func(context.Context) { ran.Add(1) })
	}()
	rsRecv(t, "the submit's lookup", looked)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := p.RemoveChannel(ctx, "a", smartpool.Drain)
	cancel()
	if err != nil {
		t.Fatalf("RemoveChannel: %v", err)
	}
	b := channels.NewFIFO()
	err = p.AddChannel(1, smartpool.ChannelParams[string]{Key: "b"}, b, "b")
	if err == nil {
		t.Errorf("AddChannel reused the slot of a channel a by-key submit still holds")
	}
	close(resume)
	if err := rsRecv(t, "the stale submit", submitted); !errors.Is(err, smartpool.ErrClosed) {
		t.Errorf("stale submit: %v, want ErrClosed", err)
	}
	if err != nil { // the slot is free once the submit returned
		rsEventually(t, "the slot freed", func() bool {
			return p.AddChannel(1, smartpool.ChannelParams[string]{Key: "b"}, b, "b") == nil
		})
	}
	time.Sleep(10 * time.Millisecond)
	if n := ran.Load(); n != 0 {
		t.Errorf("the stale task ran %d times", n)
	}
	if c, ok := p.Stats().Channel("b"); !ok || c.Ran != 0 || c.Queued != 0 {
		t.Errorf("channel b: %+v (present %v), want no task", c, ok)
	}
}

// Removing a paused channel never waits for a Resume: the removal resumes
// it, so Drain runs what it holds (as Close does), and a Pause of a channel
// being removed is refused with ErrClosed. With a paused channel left
// paused, Drain would wait for ever, bounded only by its context.
func TestReshape_RemovePaused(t *testing.T) {
	_, p := rsNewPool(t, 1, []int{0, 1})
	f := channels.NewFIFO()
	if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "t"}, f, "t"); err != nil {
		t.Fatal(err)
	}
	if err := p.Pause("t"); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	for range 5 {
		if err := f.Submit(func(context.Context) { ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	st, err := p.RemoveChannel(ctx, "t", smartpool.Drain)
	if err != nil {
		t.Fatalf("RemoveChannel(Drain) of a paused channel: %v", err)
	}
	if st.Ran != 5 || ran.Load() != 5 || st.Paused {
		t.Fatalf("drained %+v, %d ran: want 5 ran, not paused", st, ran.Load())
	}

	// A Pause racing a removal that has started is refused.
	g := rsNewGate()
	f2 := channels.NewFIFO()
	if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "u"}, f2, "u"); err != nil {
		t.Fatal(err)
	}
	if err := f2.Submit(g.run); err != nil {
		t.Fatal(err)
	}
	rsRecv(t, "the gate task's start", g.started)
	res := rsRemoveAsync(p, "u", smartpool.Drain)
	rsEventually(t, "the removal to start", func() bool {
		c, ok := p.Stats().Channel("u")
		return !ok || c.Removing
	})
	if err := p.Pause("u"); !errors.Is(err, smartpool.ErrClosed) {
		t.Errorf("Pause of a channel being removed: %v, want ErrClosed", err)
	}
	close(g.release)
	if r := rsRecv(t, "the removal", res); r.err != nil {
		t.Fatal(r.err)
	}
}

// RemoveChannel from the OnEnd a worker runs after a task: of the task's own
// channel it is refused (the task counts until OnEnd returns, so the removal
// would wait for itself); of another channel it drains it, the wait giving
// the only worker back to run what that channel holds.
func TestRemove_FromOnEnd(t *testing.T) {
	type result struct {
		own, other error
		ran        uint64
	}
	got := make(chan result, 1)
	var p *smartpool.Pool[string]
	var once sync.Once
	onEnd := func(smartpool.Task, smartpool.Outcome) {
		once.Do(func() {
			var r result
			_, r.own = p.RemoveChannel(context.Background(), "t1", smartpool.Drain)
			var st smartpool.ChannelStats[string]
			st, r.other = p.RemoveChannel(context.Background(), "t2", smartpool.Drain)
			r.ran = st.Ran
			got <- r
		})
	}
	o := start(t, &behavior{workers: 1, spare: []int{2}, levels: [][]ch{{fifo("base")}}})
	p = o.Pool()
	if err := p.AddChannel(0, smartpool.ChannelParams[string]{Key: "t1", OnEnd: onEnd}, channels.NewFIFO(), "t1"); err != nil {
		t.Fatal(err)
	}
	if err := p.AddChannel(0, smartpool.ChannelParams[string]{Key: "t2"}, channels.NewFIFO(), "t2"); err != nil {
		t.Fatal(err)
	}
	g := newGate()
	submit(t, o, "t1", g.task("t1"))
	g.waitStarted(t, 1)
	submit(t, o, "t2", func(context.Context) {}) // queued behind: only the OnEnd's wait lets it run
	close(g.release)
	r := rsRecv(t, "OnEnd's removals", got)
	if !errors.Is(r.own, smartpool.ErrConfig) {
		t.Errorf("removing its own channel from OnEnd: %v, want ErrConfig", r.own)
	}
	if r.other != nil || r.ran != 1 {
		t.Errorf("removing another channel from OnEnd: %v, ran %d; want nil, 1", r.other, r.ran)
	}
}

// A by-key submit whose channel runs the task on the submitting goroutine
// (a full Bounded with CallerRuns), where the task calls runtime.Goexit,
// still ends its pin: a later removal does not wait for it until its
// context ends (FuzzPoolOps found the leaked pin: 1 run in 10 of its input).
func TestRemove_AfterCallerRunsGoexit(t *testing.T) {
	o := start(t, &behavior{workers: 1, spare: []int{1}, levels: [][]ch{{fifo("hold"),
		{key: "b", c: channels.NewBounded(1, channels.CallerRuns()), coc: true}, fifo("x")}}})
	p := o.Pool()
	g := newGate()
	submit(t, o, "hold", g.task("hold"))
	g.waitStarted(t, 1)
	submit(t, o, "b", func(context.Context) {}) // fills the Bounded: the next submit runs on its caller
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_ = p.Submit("b", func(context.Context) { runtime.Goexit() })
	}()
	rsRecv(t, "the submitter's goroutine ending by Goexit", ended)
	close(g.release)
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if _, err := p.RemoveChannel(ctx, "x", smartpool.Drop); err != nil || ctx.Err() != nil {
		// The wait for the by-key callers' grace ends with ctx, silently.
		t.Fatalf("RemoveChannel after a caller-run task's Goexit: %v, and it waited until its context ended: %v", err, ctx.Err())
	}
}
