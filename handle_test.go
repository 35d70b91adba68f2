package smartpool_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// namedTask is a task OnEnd can tell apart; it records that it ran.
type namedTask struct {
	name string
	ran  atomic.Bool
}

func (n *namedTask) Run(context.Context) { n.ran.Store(true) }

// endsOf returns the outcomes OnEnd received for task.
func endsOf(l *endLog, task smartpool.Task) []smartpool.Outcome {
	var os []smartpool.Outcome
	for _, e := range l.all() {
		if e.t == task {
			os = append(os, e.o)
		}
	}
	return os
}

// channelStats returns the stats of channel key, failing if it has none.
func channelStats(t *testing.T, p *smartpool.Pool[string], key string) smartpool.ChannelStats[string] {
	t.Helper()
	s := p.Stats()
	st, ok := s.Channel(key)
	if !ok {
		t.Fatalf("no stats for channel %q", key)
	}
	return st
}

// TestHandle_CancelBeforeStart cancels a queued task through its handle:
// it ends Cancelled once (stats, OnEnd, its Future with context.Canceled),
// its unit of the limit comes back at once, and it never runs.
func TestHandle_CancelBeforeStart(t *testing.T) {
	var ends endLog
	b := &behavior{workers: 1, limit: 3, levels: [][]ch{{{key: "f", c: channels.NewFIFO(), coc: true, onEnd: ends.fn}}}}
	o := start(t, b)
	p := o.Pool()
	g := newGate()
	submit(t, o, "f", g.task("gate"))
	g.waitStarted(t, 1)

	var hf, ht smartpool.Handle
	ran := make(chan struct{}, 1)
	fut := goF(smartpool.Go(p, "f", func(context.Context) (int, error) { ran <- struct{}{}; return 1, nil }, smartpool.WithHandle(&hf)))
	task := &namedTask{name: "t"}
	if err := p.SubmitTask("f", task, smartpool.WithHandle(&ht)); err != nil {
		t.Fatalf("SubmitTask: %v", err)
	}
	if err := p.Submit("f", func(context.Context) {}); !errors.Is(err, smartpool.ErrFull) {
		t.Fatalf("Submit at the limit = %v, want ErrFull", err)
	}

	if !hf.Cancel() {
		t.Fatal("Cancel of a queued Go task = false")
	}
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if _, err := fut.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Future after Cancel: %v, want context.Canceled", err)
	}
	if !ht.Cancel() {
		t.Fatal("Cancel of a queued task = false")
	}
	if got := endsOf(&ends, task); len(got) != 1 || got[0] != smartpool.Cancelled {
		t.Fatalf("OnEnd for the task: %v, want [cancelled] at once", got)
	}
	if st := channelStats(t, p, "f"); st.Cancelled != 2 {
		t.Fatalf("Cancelled = %d, want 2", st.Cancelled)
	}
	if s := p.Stats(); s.Admitted != 1 {
		t.Fatalf("Admitted = %d, want 1 (the gate): the cancelled tasks' units are back", s.Admitted)
	}
	done := make(chan struct{})
	if err := p.Submit("f", func(context.Context) { close(done) }); err != nil {
		t.Fatalf("Submit after the Cancels: %v", err)
	}
	close(g.release)
	waitFor(t, done, "the task queued after the cancelled ones")
	r := closeWithin(t, o, long)
	if st, _ := r.Channel("f"); st.Ran != 2 || st.Cancelled != 2 {
		t.Fatalf("report: ran %d, cancelled %d; want 2, 2", st.Ran, st.Cancelled)
	}
	if got := endsOf(&ends, task); len(got) != 1 {
		t.Fatalf("OnEnd for the task: %v, want one ending", got)
	}
	if task.ran.Load() || len(ran) != 0 {
		t.Fatal("a cancelled task ran")
	}
}

// TestHandle_CancelAfterStart: once the task started, Cancel reports false
// and the task runs to its end, counted as ran.
func TestHandle_CancelAfterStart(t *testing.T) {
	var ends endLog
	b := &behavior{workers: 1, levels: [][]ch{{{key: "f", c: channels.NewFIFO(), coc: true, onEnd: ends.fn}}}}
	o := start(t, b)
	p := o.Pool()
	started, release, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var h smartpool.Handle
	if err := p.Submit("f", func(context.Context) { close(started); <-release; close(finished) }, smartpool.WithHandle(&h)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, started, "the task to start")
	if h.Cancel() {
		t.Fatal("Cancel of a running task = true")
	}
	close(release)
	waitFor(t, finished, "the task to finish")
	r := closeWithin(t, o, long)
	if st, _ := r.Channel("f"); st.Ran != 1 || st.Cancelled != 0 {
		t.Fatalf("report: ran %d, cancelled %d; want 1, 0", st.Ran, st.Cancelled)
	}
	if h.Cancel() {
		t.Fatal("Cancel of an ended task = true")
	}
}

// TestHandle_CancelTwice: the second Cancel, and the WithContext context
// ending afterwards, change nothing.
func TestHandle_CancelTwice(t *testing.T) {
	var ends endLog
	pr := channels.NewPriority()
	b := &behavior{workers: 1, levels: [][]ch{{{key: "p", c: pr, coc: true, onEnd: ends.fn}}}}
	o := start(t, b)
	g := newGate()
	submit(t, o, "p", g.task("gate"))
	g.waitStarted(t, 1)
	ctx, cancelCtx := context.WithCancel(context.Background())
	defer cancelCtx()
	task := &namedTask{name: "t"}
	var h smartpool.Handle
	if err := pr.SubmitTask(1, task, smartpool.WithContext(ctx), smartpool.WithHandle(&h)); err != nil {
		t.Fatal(err)
	}
	if !h.Cancel() {
		t.Fatal("first Cancel = false")
	}
	if h.Cancel() {
		t.Fatal("second Cancel = true")
	}
	cancelCtx() // its AfterFunc was unregistered, or loses the claim
	copied := h
	if copied.Cancel() {
		t.Fatal("Cancel through a copy = true")
	}
	close(g.release)
	r := closeWithin(t, o, long)
	if st, _ := r.Channel("p"); st.Cancelled != 1 || st.Ran != 1 {
		t.Fatalf("report: cancelled %d, ran %d; want 1, 1", st.Cancelled, st.Ran)
	}
	if got := endsOf(&ends, task); len(got) != 1 || got[0] != smartpool.Cancelled {
		t.Fatalf("OnEnd for the task: %v, want [cancelled]", got)
	}
	if task.ran.Load() {
		t.Fatal("the cancelled task ran")
	}
}

// TestHandle_CancelRacesStart releases the only worker and cancels the next
// task at the same time, many times: exactly one of the two happens, every
// time, and the counts agree.
func TestHandle_CancelRacesStart(t *testing.T) {
	var ends endCounter
	b := &behavior{workers: 1, levels: [][]ch{{{key: "f", c: channels.NewFIFO(), coc: true, onEnd: ends.fn}}}}
	o := start(t, b)
	p := o.Pool()
	n := scale(2000)
	var cancels, runs int
	for i := range n {
		started, release := make(chan struct{}), make(chan struct{})
		submit(t, o, "f", func(context.Context) { close(started); <-release })
		waitFor(t, started, "the gate task")
		task := &namedTask{}
		var h smartpool.Handle
		if err := p.SubmitTask("f", task, smartpool.WithHandle(&h)); err != nil {
			t.Fatal(err)
		}
		go1, done := make(chan struct{}), make(chan bool)
		go func() { <-go1; done <- h.Cancel() }()
		close(go1)
		close(release)
		cancelled := <-done
		eventually(t, func() bool { return ends.total() == int32(2*(i+1)) })
		if ran := task.ran.Load(); ran == cancelled {
			t.Fatalf("iteration %d: ran %v, Cancel reported %v: want exactly one", i, ran, cancelled)
		}
		if cancelled {
			cancels++
		} else {
			runs++
		}
		if got := ends.of(smartpool.Cancelled); got != int32(cancels) {
			t.Fatalf("iteration %d: %d cancelled endings, want %d", i, got, cancels)
		}
	}
	r := closeWithin(t, o, long)
	st, _ := r.Channel("f")
	if st.Cancelled != uint64(cancels) || st.Ran != uint64(n+runs) {
		t.Fatalf("report: cancelled %d, ran %d; want %d, %d", st.Cancelled, st.Ran, cancels, n+runs)
	}
	t.Logf("%d cancelled, %d ran", cancels, runs)
}

// recordTo returns a task that sends name on order.
func recordTo(order chan<- string, name string) func(context.Context) {
	return func(context.Context) { order <- name }
}

// collect receives n names from order, failing after long.
func collect(t *testing.T, order <-chan string, n int) []string {
	t.Helper()
	var got []string
	timeout := time.After(long)
	for range n {
		select {
		case s := <-order:
			got = append(got, s)
		case <-timeout:
			t.Fatalf("only %v of %d tasks ran within %v", got, n, long)
		}
	}
	return got
}

func sameOrder(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// TestHandle_Reprioritize moves queued tasks of a Priority channel, one
// submitted through the channel and one by key, while a gate task holds
// the only worker: the run order follows the new priorities.
func TestHandle_Reprioritize(t *testing.T) {
	pr := channels.NewPriority()
	b := &behavior{workers: 1, levels: [][]ch{{{key: "p", c: pr, coc: true}}}}
	o := start(t, b)
	p := o.Pool()
	g := newGate()
	if err := pr.Submit(1000, g.task("gate")); err != nil {
		t.Fatal(err)
	}
	g.waitStarted(t, 1)
	order := make(chan string, 8)
	var hc, hd smartpool.Handle
	for _, err := range []error{
		pr.Submit(10, recordTo(order, "a")),
		pr.Submit(5, recordTo(order, "b")),
		pr.Submit(1, recordTo(order, "c"), smartpool.WithHandle(&hc)),
		p.Submit("p", recordTo(order, "d"), smartpool.WithPriority(20), smartpool.WithHandle(&hd)),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := hc.Reprioritize(100); err != nil {
		t.Fatalf("Reprioritize(100): %v", err)
	}
	if err := hd.Reprioritize(-5); err != nil {
		t.Fatalf("Reprioritize(-5): %v", err)
	}
	close(g.release)
	if got, want := collect(t, order, 4), []string{"c", "a", "b", "d"}; !sameOrder(got, want) {
		t.Fatalf("run order %v, want %v", got, want)
	}
	if err := hc.Reprioritize(1); !errors.Is(err, smartpool.ErrNotQueued) {
		t.Fatalf("Reprioritize after the task ran = %v, want ErrNotQueued", err)
	}
}

// TestHandle_SetDeadline is TestHandle_Reprioritize for a Deadline channel:
// one task moves ahead, and one submitted by key without a deadline (due
// at once) moves behind.
func TestHandle_SetDeadline(t *testing.T) {
	dl := channels.NewDeadline()
	b := &behavior{workers: 1, levels: [][]ch{{{key: "d", c: dl, coc: true}}}}
	o := start(t, b)
	p := o.Pool()
	g := newGate()
	now := time.Now()
	if err := dl.Submit(now, g.task("gate")); err != nil {
		t.Fatal(err)
	}
	g.waitStarted(t, 1)
	order := make(chan string, 8)
	var hc, he smartpool.Handle
	for _, err := range []error{
		dl.Submit(now.Add(time.Hour), recordTo(order, "a")),
		dl.Submit(now.Add(2*time.Hour), recordTo(order, "b")),
		dl.Submit(now.Add(3*time.Hour), recordTo(order, "c"), smartpool.WithHandle(&hc)),
		p.Submit("d", recordTo(order, "e"), smartpool.WithHandle(&he)),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := hc.SetDeadline(now.Add(30 * time.Minute)); err != nil {
		t.Fatalf("SetDeadline: %v", err)
	}
	if err := he.SetDeadline(now.Add(4 * time.Hour)); err != nil {
		t.Fatalf("SetDeadline: %v", err)
	}
	close(g.release)
	if got, want := collect(t, order, 4), []string{"c", "a", "b", "e"}; !sameOrder(got, want) {
		t.Fatalf("run order %v, want %v", got, want)
	}
	if err := he.SetDeadline(now); !errors.Is(err, smartpool.ErrNotQueued) {
		t.Fatalf("SetDeadline after the task ran = %v, want ErrNotQueued", err)
	}
}

// TestHandle_Errors: a key the channel does not reorder by wraps ErrOption
// (whether the task is queued or not), a task that started or was
// cancelled is not queued, and a zero or unfilled Handle answers without
// panicking.
func TestHandle_Errors(t *testing.T) {
	f, pr, dl := channels.NewFIFO(), channels.NewPriority(), channels.NewDeadline()
	b := &behavior{workers: 1, levels: [][]ch{
		{{key: "gate", c: channels.NewFIFO(), coc: true}},
		{{key: "f", c: f, coc: true}, {key: "p", c: pr, coc: true}, {key: "d", c: dl, coc: true}},
	}}
	o := start(t, b)
	p := o.Pool()
	g := newGate()
	var hg smartpool.Handle
	if err := p.Submit("gate", g.task("gate"), smartpool.WithHandle(&hg)); err != nil {
		t.Fatal(err)
	}
	g.waitStarted(t, 1)
	free := sync.OnceFunc(func() { close(g.release) })
	defer free()

	noop := func(context.Context) {}
	var hf, hp, hd smartpool.Handle
	for _, err := range []error{
		f.Submit(noop, smartpool.WithHandle(&hf)),
		p.Submit("p", noop, smartpool.WithHandle(&hp)),
		dl.Submit(time.Now(), noop, smartpool.WithHandle(&hd)),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"FIFO Reprioritize", hf.Reprioritize(1), smartpool.ErrOption},
		{"FIFO SetDeadline", hf.SetDeadline(time.Now()), smartpool.ErrOption},
		{"Priority SetDeadline", hp.SetDeadline(time.Now()), smartpool.ErrOption},
		{"Deadline Reprioritize", hd.Reprioritize(1), smartpool.ErrOption},
		{"started FIFO task Reprioritize", hg.Reprioritize(1), smartpool.ErrOption},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.err, c.want)
		}
	}
	if hg.Cancel() {
		t.Error("Cancel of the running gate = true")
	}

	// A Priority task that started, and one that was cancelled.
	pg := newGate()
	var started, cancelled smartpool.Handle
	if err := pr.Submit(100, pg.task("p-gate"), smartpool.WithHandle(&started)); err != nil {
		t.Fatal(err)
	}
	if !hp.Cancel() || !hf.Cancel() || !hd.Cancel() {
		t.Fatal("Cancel of a queued task = false")
	}
	if err := pr.Submit(1, noop, smartpool.WithHandle(&cancelled)); err != nil {
		t.Fatal(err)
	}
	if !cancelled.Cancel() {
		t.Fatal("Cancel of a queued task = false")
	}
	if err := cancelled.Reprioritize(5); !errors.Is(err, smartpool.ErrNotQueued) {
		t.Errorf("Reprioritize of a cancelled task = %v, want ErrNotQueued", err)
	}
	if err := cancelled.SetDeadline(time.Now()); !errors.Is(err, smartpool.ErrOption) {
		t.Errorf("SetDeadline of a cancelled Priority task = %v, want ErrOption", err)
	}
	free()
	pg.waitStarted(t, 1)
	if err := started.Reprioritize(5); !errors.Is(err, smartpool.ErrNotQueued) {
		t.Errorf("Reprioritize of a started task = %v, want ErrNotQueued", err)
	}
	close(pg.release)

	// Zero, nil and unfilled handles.
	var zero smartpool.Handle
	var nilHandle *smartpool.Handle
	if zero.Cancel() || nilHandle.Cancel() {
		t.Error("Cancel of a zero or nil Handle = true")
	}
	for _, err := range []error{zero.Reprioritize(1), zero.SetDeadline(time.Now()), nilHandle.Reprioritize(1), nilHandle.SetDeadline(time.Now())} {
		if !errors.Is(err, smartpool.ErrNotQueued) {
			t.Errorf("zero Handle: %v, want ErrNotQueued", err)
		}
	}
	var unfilled smartpool.Handle
	if err := p.Submit("nope", noop, smartpool.WithHandle(&unfilled)); !errors.Is(err, smartpool.ErrUnknownKey) {
		t.Fatalf("Submit to an unknown key = %v", err)
	}
	if err := p.Submit("p", noop, smartpool.WithHandle(&unfilled), smartpool.WithHandle(&unfilled)); !errors.Is(err, smartpool.ErrOption) {
		t.Errorf("WithHandle twice = %v, want ErrOption", err)
	}
	if err := pr.Submit(1, noop, smartpool.WithDeadline(time.Now()), smartpool.WithHandle(&unfilled)); !errors.Is(err, smartpool.ErrOption) {
		t.Errorf("a refused option = %v, want ErrOption", err)
	}
	if unfilled != (smartpool.Handle{}) || unfilled.Cancel() {
		t.Error("a failed submit filled its Handle")
	}
	if err := p.Submit("p", noop, smartpool.WithHandle(nil)); err != nil {
		t.Errorf("WithHandle(nil) = %v, want a submit as without it", err)
	}
}

// TestHandle_Dropped: a task that Close dropped cannot be cancelled or
// moved.
func TestHandle_Dropped(t *testing.T) {
	pr := channels.NewPriority()
	b := &behavior{workers: 1, levels: [][]ch{
		{{key: "gate", c: channels.NewFIFO(), coc: true}},
		{{key: "p", c: pr}}, // drops on close
	}}
	o := start(t, b)
	p := o.Pool()
	g := newGate()
	submit(t, o, "gate", g.task("gate"))
	g.waitStarted(t, 1)
	var h smartpool.Handle
	if err := pr.Submit(1, func(context.Context) {}, smartpool.WithHandle(&h)); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), long)
		defer cancel()
		_, err := o.Close(ctx)
		closed <- err
	}()
	eventually(t, func() bool { return channelStats(t, p, "p").Dropped == 1 })
	if h.Cancel() {
		t.Error("Cancel of a dropped task = true")
	}
	if err := h.Reprioritize(5); !errors.Is(err, smartpool.ErrNotQueued) {
		t.Errorf("Reprioritize of a dropped task = %v, want ErrNotQueued", err)
	}
	close(g.release)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(2 * long):
		t.Fatal("Close did not return")
	}
	if st := channelStats(t, p, "p"); st.Dropped != 1 || st.Cancelled != 0 {
		t.Fatalf("dropped %d, cancelled %d; want 1, 0", st.Dropped, st.Cancelled)
	}
}

// TestHandle_LimitWithoutContext: WithHandle alone does not make a submit
// wait: at the limit it returns ErrFull, and leaves the handle zero.
func TestHandle_LimitWithoutContext(t *testing.T) {
	b := &behavior{workers: 1, limit: 1, levels: [][]ch{{fifo("f")}}}
	o := start(t, b)
	p := o.Pool()
	g := newGate()
	submit(t, o, "f", g.task("gate"))
	g.waitStarted(t, 1)
	defer close(g.release)
	var h smartpool.Handle
	if err := p.Submit("f", func(context.Context) {}, smartpool.WithHandle(&h)); !errors.Is(err, smartpool.ErrFull) {
		t.Fatalf("Submit at the limit with WithHandle = %v, want ErrFull", err)
	}
	if h.Cancel() {
		t.Fatal("Cancel through the handle of a refused submit = true")
	}
}

// TestHandle_Allocs: a submit with WithHandle allocates the task's wrapper
// only (its context, context.Background(), registers no AfterFunc, which
// would allocate its own), and the same submit without it nothing.
func TestHandle_Allocs(t *testing.T) {
	f := channels.NewFIFO()
	o := start(t, &behavior{workers: 1, levels: [][]ch{{{key: "f", c: f, coc: true}}}})
	fn := func(context.Context) {}
	h := new(smartpool.Handle)
	with := testing.AllocsPerRun(1000, func() {
		if err := f.Submit(fn, smartpool.WithHandle(h)); err != nil {
			t.Fatal(err)
		}
	})
	without := testing.AllocsPerRun(1000, func() {
		if err := f.Submit(fn); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("allocations per submit: %.2f with a handle, %.2f without", with, without)
	if with > 1 || without > 0 {
		t.Fatalf("allocations per submit: %.2f with a handle, want at most 1; %.2f without, want 0", with, without)
	}
	closeWithin(t, o, long)
}

// TestHandle_ErrorsNameChannel: a Handle's option errors name the channel
// as a submit's do, for a handle filled by a by-key submit and by a
// channel's own submit, whether the pool refuses the key (a FIFO cannot
// reorder) or the channel's Reorder does (a Priority asked for a deadline,
// a Multi of FIFOs), and in the Handle's words, not a submit option's.
func TestHandle_ErrorsNameChannel(t *testing.T) {
	pr := channels.NewPriority()
	b := &behavior{workers: 1, levels: [][]ch{
		{{key: "gate", c: channels.NewFIFO(), coc: true}},
		{{key: "jobs", c: channels.NewFIFO(), coc: true}, {key: "ranked", c: pr, coc: true},
			{key: "sharded", c: channels.NewMulti(2, channels.NewFIFO), coc: true}},
	}}
	o := start(t, b)
	p := o.Pool()
	g := newGate()
	submit(t, o, "gate", g.task("gate"))
	g.waitStarted(t, 1)
	defer close(g.release)

	noop := func(context.Context) {}
	var hf, hp, hown, hm smartpool.Handle
	for _, err := range []error{
		p.Submit("jobs", noop, smartpool.WithHandle(&hf)),
		p.Submit("ranked", noop, smartpool.WithHandle(&hp)),
		pr.Submit(1, noop, smartpool.WithHandle(&hown)),
		p.Submit("sharded", noop, smartpool.WithHandle(&hm)),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	wantSubmit := ""
	if err := p.Submit("jobs", noop, smartpool.WithDeadline(time.Now())); err != nil {
		wantSubmit = err.Error()
	}
	if !strings.HasPrefix(wantSubmit, `smartpool: channel "jobs": `) {
		t.Fatalf("a submit's option error %q: the test expects it to name the channel", wantSubmit)
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"FIFO Reprioritize", hf.Reprioritize(1), `smartpool: channel "jobs": the channel does not move queued tasks by priority (Handle.Reprioritize)`},
		{"FIFO SetDeadline", hf.SetDeadline(time.Now()), `smartpool: channel "jobs": the channel does not move queued tasks by deadline (Handle.SetDeadline)`},
		{"Priority SetDeadline", hp.SetDeadline(time.Now()), `smartpool: channel "ranked": the channel does not move queued tasks by deadline (Handle.SetDeadline)`},
		{"own submit's SetDeadline", hown.SetDeadline(time.Now()), `smartpool: channel "ranked": the channel does not move queued tasks by deadline (Handle.SetDeadline)`},
		{"Multi of FIFOs Reprioritize", hm.Reprioritize(1), `smartpool: channel "sharded": the channel does not move queued tasks by priority (Handle.Reprioritize)`},
	} {
		if !errors.Is(c.err, smartpool.ErrOption) || c.err.Error() != c.want {
			t.Errorf("%s = %v, want %q wrapping ErrOption", c.name, c.err, c.want)
		}
	}
	if !hown.Cancel() {
		t.Fatal("Cancel of a queued task = false")
	}
	if err := hown.SetDeadline(time.Now()); !errors.Is(err, smartpool.ErrOption) || !strings.Contains(err.Error(), `channel "ranked"`) {
		t.Errorf("SetDeadline of a cancelled task = %v, want the named ErrOption (the key's answer comes first)", err)
	}
	if err := hown.Reprioritize(3); !errors.Is(err, smartpool.ErrNotQueued) {
		t.Errorf("Reprioritize of a cancelled task = %v, want ErrNotQueued", err)
	}
}

// TestHandle_ErrorsNameRemovedChannel: a Handle keeps the name its channel
// had at the submit, though RemoveChannel freed the channel's slot and
// AddChannel gave it to another channel.
func TestHandle_ErrorsNameRemovedChannel(t *testing.T) {
	_, p := rsNewPool(t, 1, []int{0, 1}) // room for one added channel: "new" takes "old"'s slot
	if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "old"}, channels.NewFIFO(), "old"); err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	var h smartpool.Handle
	if err := p.Submit("old", func(context.Context) { close(ran) }, smartpool.WithHandle(&h)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ran, "the task")
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if _, err := p.RemoveChannel(ctx, "old", smartpool.Drain); err != nil {
		t.Fatal(err)
	}
	if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "new"}, channels.NewFIFO(), "new"); err != nil {
		t.Fatal(err)
	}
	err := h.Reprioritize(1)
	if !errors.Is(err, smartpool.ErrOption) || !strings.Contains(err.Error(), `channel "old"`) {
		t.Fatalf("Reprioritize = %v, want ErrOption naming channel \"old\"", err)
	}
}

// TestHandle_MultiAndKeyed: through a pool, a Multi of Priority shards
// moves a handle's task in the shard that holds it (a one-shard Multi shows
// the order; a three-shard one finds every task), a Multi of FIFOs and a
// Keyed refuse moves with ErrOption naming the channel, and a Keyed's task
// cancels.
func TestHandle_MultiAndKeyed(t *testing.T) {
	one := channels.NewMulti(1, channels.NewPriority)
	three := channels.NewMulti(3, channels.NewPriority)
	mf := channels.NewMulti(2, channels.NewFIFO)
	k, err := channels.NewKeyed[string](1)
	if err != nil {
		t.Fatal(err)
	}
	var ends endCounter
	b := &behavior{workers: 1, levels: [][]ch{
		{{key: "gate", c: channels.NewFIFO(), coc: true}},
		{{key: "one", c: one, coc: true}, {key: "three", c: three, coc: true, onEnd: ends.fn},
			{key: "mfifo", c: mf, coc: true}, {key: "keyed", c: k, coc: true, onEnd: ends.fn}},
	}}
	o := start(t, b)
	p := o.Pool()
	g := newGate()
	submit(t, o, "gate", g.task("gate"))
	g.waitStarted(t, 1)
	release := sync.OnceFunc(func() { close(g.release) })
	defer release()

	order := make(chan string, 8)
	var ha, hb smartpool.Handle
	for _, err := range []error{
		one.Submit(recordTo(order, "a"), smartpool.WithPriority(1), smartpool.WithHandle(&ha)),
		p.Submit("one", recordTo(order, "b"), smartpool.WithPriority(5), smartpool.WithHandle(&hb)),
		one.Submit(recordTo(order, "c"), smartpool.WithPriority(3)),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := ha.Reprioritize(10); err != nil {
		t.Fatalf("Reprioritize in a Multi: %v", err)
	}
	if err := hb.Reprioritize(0); err != nil {
		t.Fatalf("Reprioritize in a Multi: %v", err)
	}
	if err := ha.SetDeadline(time.Now()); !errors.Is(err, smartpool.ErrOption) || !strings.Contains(err.Error(), `channel "one"`) {
		t.Errorf("SetDeadline in a Multi of Priority = %v, want ErrOption naming \"one\"", err)
	}

	hs := make([]smartpool.Handle, 6) // two per shard
	noop := func(context.Context) {}
	for i := range hs {
		if err := three.Submit(noop, smartpool.WithPriority(i), smartpool.WithHandle(&hs[i])); err != nil {
			t.Fatal(err)
		}
	}
	for i := range hs {
		if err := hs[i].Reprioritize(-i); err != nil {
			t.Fatalf("Reprioritize of task %d in a three-shard Multi: %v", i, err)
		}
	}
	if !hs[4].Cancel() {
		t.Fatal("Cancel in a Multi = false")
	}

	var hf, hk smartpool.Handle
	kran := make(chan struct{}, 1)
	if err := p.Submit("mfifo", noop, smartpool.WithHandle(&hf)); err != nil {
		t.Fatal(err)
	}
	if err := k.Submit("host", func(context.Context) { kran <- struct{}{} }, smartpool.WithHandle(&hk)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, channel string
		err           error
	}{
		{"Multi of FIFOs Reprioritize", "mfifo", hf.Reprioritize(1)},
		{"Keyed Reprioritize", "keyed", hk.Reprioritize(1)},
		{"Keyed SetDeadline", "keyed", hk.SetDeadline(time.Now())},
	} {
		if !errors.Is(c.err, smartpool.ErrOption) || !strings.Contains(c.err.Error(), `channel "`+c.channel+`"`) {
			t.Errorf("%s = %v, want ErrOption naming %q", c.name, c.err, c.channel)
		}
	}
	if !hk.Cancel() {
		t.Fatal("Cancel in a Keyed = false")
	}
	release()
	if got, want := collect(t, order, 3), []string{"a", "c", "b"}; !sameOrder(got, want) {
		t.Fatalf("run order %v, want %v", got, want)
	}
	r := closeWithin(t, o, long)
	if st, _ := r.Channel("three"); st.Ran != 5 || st.Cancelled != 1 {
		t.Errorf("three: ran %d, cancelled %d; want 5, 1", st.Ran, st.Cancelled)
	}
	if st, _ := r.Channel("keyed"); st.Ran != 0 || st.Cancelled != 1 || len(kran) != 0 || k.Running("host") != 0 {
		t.Errorf("keyed: ran %d, cancelled %d, Running %d; want 0, 1, 0", st.Ran, st.Cancelled, k.Running("host"))
	}
}
