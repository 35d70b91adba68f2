package smartpool_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// optPool is a one-worker pool of a FIFO, a Deadline and a Priority channel,
// each under its own key, whose OnEnd records every ending.
type optPool struct {
	owned *smartpool.OwnedPool[string]
	pool  *smartpool.Pool[string]
	mu    sync.Mutex
	ran   []string                       // names of tasks that ran, in order
	ends  map[string][]smartpool.Outcome // by task name (a named task)
	done  chan struct{}                  // gets a value per ending
}

// named is a task with a name, so OnEnd can tell tasks apart.
type named struct {
	name string
	p    *optPool
	body func(ctx context.Context) // nil: record the run in p
}

func (n *named) Run(ctx context.Context) {
	if n.body != nil {
		n.body(ctx)
		return
	}
	n.p.mu.Lock()
	n.p.ran = append(n.p.ran, n.name)
	n.p.mu.Unlock()
}

func newOptPool(t *testing.T, cfg smartpool.Config[string]) *optPool {
	t.Helper()
	p := &optPool{ends: map[string][]smartpool.Outcome{}, done: make(chan struct{}, 1024)}
	onEnd := func(task smartpool.Task, o smartpool.Outcome) {
		if n, ok := task.(*named); ok {
			p.mu.Lock()
			p.ends[n.name] = append(p.ends[n.name], o)
			p.mu.Unlock()
		}
		p.done <- struct{}{}
	}
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	cfg.StallAfter = -1
	owned, err := smartpool.New(smartpool.Levels[string]{{
		{Key: "fifo", Channel: channels.NewFIFO(), OnEnd: onEnd},
		{Key: "deadline", Channel: channels.NewDeadline(), OnEnd: onEnd},
		{Key: "priority", Channel: channels.NewPriority(), OnEnd: onEnd},
	}}.With(cfg))
	require.NoError(t, err)
	p.owned, p.pool = owned, owned.Pool()
	t.Cleanup(func() { _, _ = owned.Close(context.Background()) })
	return p
}

func (p *optPool) task(name string) *named { return &named{name: name, p: p} }

// hold occupies the pool's only worker until the returned func is called.
func (p *optPool) hold(t *testing.T) (release func()) {
	t.Helper()
	started, gate := make(chan struct{}), make(chan struct{})
	require.NoError(t, p.pool.Submit("fifo", func(context.Context) { close(started); <-gate }))
	waitClosed(t, started)
	return func() { close(gate) }
}

// awaitEnds waits for n endings.
func (p *optPool) awaitEnds(t *testing.T, n int) {
	t.Helper()
	awaitN(t, p.done, n)
}

// awaitN waits for n values on c, failing the test after long.
func awaitN(t *testing.T, c <-chan struct{}, n int) {
	t.Helper()
	deadline := time.After(long)
	for range n {
		select {
		case <-c:
		case <-deadline:
			t.Fatalf("timed out waiting for %d endings", n)
		}
	}
}

// chanStat returns the stats of channel key.
func chanStat(t *testing.T, st *smartpool.Stats[string], key string) smartpool.ChannelStats[string] {
	t.Helper()
	c, ok := st.Channel(key)
	require.True(t, ok, key)
	return c
}

func waitClosed(t *testing.T, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(long):
		t.Fatal("timed out")
	}
}

// By key, WithDeadline orders a Deadline channel's tasks and WithPriority a
// Priority channel's, queued in the opposite order to the one they run in.
func TestOptions_OrderByKey(t *testing.T) {
	p := newOptPool(t, smartpool.Config[string]{})
	release := p.hold(t)
	base := time.Now().Add(time.Hour)
	for i, name := range []string{"d3", "d2", "d1"} {
		require.NoError(t, p.pool.SubmitTask("deadline", p.task(name), smartpool.WithDeadline(base.Add(time.Duration(3-i)*time.Minute))))
	}
	for i, name := range []string{"p1", "p2", "p3"} {
		require.NoError(t, p.pool.SubmitTask("priority", p.task(name), smartpool.WithPriority(i)))
	}
	release()
	p.awaitEnds(t, 7)
	p.mu.Lock()
	defer p.mu.Unlock()
	var d, pr []string // the level rotates between its channels: compare each channel's order
	for _, name := range p.ran {
		if name[0] == 'd' {
			d = append(d, name)
		} else {
			pr = append(pr, name)
		}
	}
	require.Equal(t, []string{"d1", "d2", "d3"}, d)
	require.Equal(t, []string{"p3", "p2", "p1"}, pr)
}

// An option the channel cannot honour is an error naming the channel, and
// the task is not queued; so is an option given twice.
func TestOptions_Refused(t *testing.T) {
	p := newOptPool(t, smartpool.Config[string]{})
	cases := []struct {
		key  string
		opts []smartpool.Option
		want string
	}{
		{"fifo", []smartpool.Option{smartpool.WithDeadline(time.Now())}, "deadline"},
		{"fifo", []smartpool.Option{smartpool.WithPriority(1)}, "priority"},
		{"deadline", []smartpool.Option{smartpool.WithPriority(1)}, "priority"},
		{"priority", []smartpool.Option{smartpool.WithDeadline(time.Now())}, "deadline"},
		{"priority", []smartpool.Option{smartpool.WithPriority(1), smartpool.WithPriority(2)}, "twice"},
		{"fifo", []smartpool.Option{smartpool.WithContext(context.Background()), smartpool.WithContext(context.Background())}, "twice"},
	}
	for _, c := range cases {
		err := p.pool.SubmitTask(c.key, p.task("x"), c.opts...)
		require.ErrorIs(t, err, smartpool.ErrOption, c.key)
		require.Contains(t, err.Error(), c.want)
		if !strings.Contains(c.want, "twice") {
			require.Contains(t, err.Error(), c.key, "the error names the channel")
		}
		f := goF(smartpool.Go(p.pool, c.key, func(context.Context) (int, error) { return 1, nil }, c.opts...))
		_, err = f.Wait(context.Background())
		require.ErrorIs(t, err, smartpool.ErrOption, "Go: %s", c.key)
	}
	report, err := p.owned.Close(context.Background())
	require.NoError(t, err)
	require.Zero(t, report.Total().Ran+report.Total().Dropped, "nothing refused was queued")
	require.Empty(t, p.ran)
}

// Deadline + cancellation and priority + cancellation, by key: a task whose
// context ends while it is queued never runs and ends Cancelled, while its
// siblings run in their order.
func TestOptions_OrderedAndCancellable(t *testing.T) {
	p := newOptPool(t, smartpool.Config[string]{})
	release := p.hold(t)
	ctx, cancel := context.WithCancel(context.Background())
	due := time.Now().Add(time.Hour)
	require.NoError(t, p.pool.SubmitTask("deadline", p.task("d-late"), smartpool.WithDeadline(due.Add(time.Minute))))
	require.NoError(t, p.pool.SubmitTask("deadline", p.task("d-cancelled"), smartpool.WithDeadline(due), smartpool.WithContext(ctx)))
	require.NoError(t, p.pool.SubmitTask("priority", p.task("p-cancelled"), smartpool.WithContext(ctx), smartpool.WithPriority(9)))
	require.NoError(t, p.pool.SubmitTask("priority", p.task("p-low"), smartpool.WithPriority(1)))
	cancel()
	release()
	p.awaitEnds(t, 5)
	p.mu.Lock()
	defer p.mu.Unlock()
	require.Equal(t, []string{"d-late", "p-low"}, p.ran)
	require.Equal(t, []smartpool.Outcome{smartpool.Cancelled}, p.ends["d-cancelled"])
	require.Equal(t, []smartpool.Outcome{smartpool.Cancelled}, p.ends["p-cancelled"])
	require.Equal(t, []smartpool.Outcome{smartpool.Ran}, p.ends["d-late"])
	st := p.pool.Stats()
	require.EqualValues(t, 1, chanStat(t, st, "deadline").Cancelled)
	require.EqualValues(t, 1, chanStat(t, st, "priority").Cancelled)
}

// Without WithContext a submit at the in-flight limit returns ErrFull at
// once; with it, it waits for a unit until its context ends.
func TestOptions_ContextWaitsForRoom(t *testing.T) {
	p := newOptPool(t, smartpool.Config[string]{Limit: 1})
	release := p.hold(t) // holds the only unit
	require.ErrorIs(t, p.pool.SubmitTask("fifo", p.task("now")), smartpool.ErrFull)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, p.pool.SubmitTask("fifo", p.task("gave-up"), smartpool.WithContext(ctx)), context.DeadlineExceeded)

	queued := make(chan error, 1)
	go func() {
		queued <- p.pool.SubmitTask("fifo", p.task("waited"), smartpool.WithContext(context.Background()))
	}()
	release()
	select {
	case err := <-queued:
		require.NoError(t, err)
	case <-time.After(long):
		t.Fatal("a submit with a context did not get the unit freed")
	}
	p.awaitEnds(t, 2)
	p.mu.Lock()
	defer p.mu.Unlock()
	require.Equal(t, []string{"waited"}, p.ran)
}

// Group.Go takes the ordering options; WithContext becomes the group's
// error, naming the channel.
func TestOptions_Group(t *testing.T) {
	p := newOptPool(t, smartpool.Config[string]{})
	release := p.hold(t)
	g := smartpool.NewGroup(context.Background(), p.pool)
	for _, prio := range []int{1, 3, 2} {
		g.Go("priority", func(context.Context) error {
			p.mu.Lock()
			p.ran = append(p.ran, "g"+string(rune('0'+prio)))
			p.mu.Unlock()
			return nil
		}, smartpool.WithPriority(prio))
	}
	release()
	require.NoError(t, g.Wait(context.Background()))
	p.mu.Lock()
	require.Equal(t, []string{"g3", "g2", "g1"}, p.ran)
	p.mu.Unlock()

	g = smartpool.NewGroup(context.Background(), p.pool)
	g.Go("fifo", func(context.Context) error { return nil }, smartpool.WithContext(context.Background()))
	err := g.Wait(context.Background())
	require.ErrorIs(t, err, smartpool.ErrOption)
	require.Contains(t, err.Error(), "fifo")
}

// Submit and the Future: Go's Future resolves with the context's error when
// WithContext cancels the task while it is queued.
func TestOptions_GoCancelled(t *testing.T) {
	p := newOptPool(t, smartpool.Config[string]{})
	release := p.hold(t)
	ctx, cancel := context.WithCancel(context.Background())
	f := goF(smartpool.Go(p.pool, "deadline", func(context.Context) (int, error) { return 1, nil },
		smartpool.WithDeadline(time.Now()), smartpool.WithContext(ctx)))
	cancel()
	_, err := f.Wait(context.Background())
	require.True(t, errors.Is(err, context.Canceled), "got %v", err)
	release()
}

// A channel's own submit method names the channel in its option errors, as
// a submit by key does.
func TestOptions_ChannelSubmitNamesChannel(t *testing.T) {
	fifo, deadline := channels.NewFIFO(), channels.NewDeadline()
	owned, err := smartpool.New(smartpool.Levels[string]{{
		{Key: "the-fifo", Channel: fifo},
		{Key: "the-deadline", Channel: deadline},
	}}.With(smartpool.Config[string]{Workers: 1, StallAfter: -1}))
	require.NoError(t, err)
	defer owned.Close(context.Background())
	noop := func(context.Context) {}
	for key, err := range map[string]error{
		"the-fifo":     fifo.Submit(noop, smartpool.WithDeadline(time.Now())),
		"the-deadline": deadline.Submit(time.Now(), noop, smartpool.WithDeadline(time.Now())),
	} {
		require.ErrorIs(t, err, smartpool.ErrOption, key)
		require.Contains(t, err.Error(), key, "the error names the channel")
	}
}
