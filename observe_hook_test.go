package smartpool_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/smartpool-go/smartpool"
)

// The endings matrix once more, every pool built with Config.Observe: each
// TaskObserver the pool asked for must see Start at most once, Yield and
// Resume in pairs after it, and End exactly once, last, with the ending
// OnEnd received (a refused submit: the zero Outcome and an error), and
// the panic or the cancellation's cause as its error.

// mxObserver is Config.Observe's record for one matrix case.
type mxObserver struct {
	mu   sync.Mutex
	obs  []*mxTaskObs // guarded by mu
	ctxs int          // Observe calls with a non-nil context; guarded by mu
	lost atomic.Int32 // runs of the task whose context lacked Start's value
}

type obsCtxKey struct{}

func (r *mxObserver) observe(ctx context.Context, key string, level int) smartpool.TaskObserver {
	o := &mxTaskObs{key: key, level: level}
	r.mu.Lock()
	r.obs = append(r.obs, o)
	if ctx != nil {
		r.ctxs++
	}
	r.mu.Unlock()
	return o
}

// mxTaskObs is one task's TaskObserver: its events in order.
type mxTaskObs struct {
	key    string
	level  int
	mu     sync.Mutex
	busy   bool // a method is running: none may overlap
	events []string
	ends   []smartpool.Outcome
	err    error
	bad    []string
}

func (o *mxTaskObs) event(what string) {
	o.mu.Lock()
	if o.busy {
		o.bad = append(o.bad, what+" while another method ran")
	}
	if len(o.ends) > 0 {
		o.bad = append(o.bad, what+" after End")
	}
	o.events = append(o.events, what)
	o.busy = true
	o.mu.Unlock()
	runtime.Gosched() // a window for another method to overlap this one
	o.mu.Lock()
	o.busy = false
	o.mu.Unlock()
}

func (o *mxTaskObs) Start(ctx context.Context) context.Context {
	o.event("start")
	return context.WithValue(ctx, obsCtxKey{}, o)
}
func (o *mxTaskObs) Yield()  { o.event("yield") }
func (o *mxTaskObs) Resume() { o.event("resume") }
func (o *mxTaskObs) End(out smartpool.Outcome, err error) {
	o.event("end")
	o.mu.Lock()
	o.ends, o.err = append(o.ends, out), err
	o.mu.Unlock()
}

// check checks every observer of the case, then that their endings are, key
// by key, the endings OnEnd saw.
func (r *mxObserver) check(m *mxCase) {
	t := m.t
	r.mu.Lock()
	defer r.mu.Unlock()
	got := map[string]map[smartpool.Outcome]int{"s": {}, "g": {}}
	refused, sYields := 0, 0 // refused submits; yields of the subject channel's tasks
	if n := r.lost.Load(); n > 0 {
		t.Errorf("the task ran %d times without the context its TaskObserver's Start returned", n)
	}
	for _, o := range r.obs {
		o.mu.Lock()
		starts, yields, resumes := 0, 0, 0
		for _, e := range o.events {
			switch e {
			case "start":
				starts++
			case "yield":
				yields++
				if o.key == "s" {
					sYields++
				}
			case "resume":
				resumes++
			}
		}
		desc := fmt.Sprintf("the observer of a task of %q (events %v, ends %v, err %v)", o.key, o.events, o.ends, o.err)
		for _, b := range o.bad {
			t.Errorf("%s: %s", desc, b)
		}
		if wantLevel := map[string]int{"g": 0, "s": 1}[o.key]; o.level != wantLevel {
			t.Errorf("%s: level %d, want %d", desc, o.level, wantLevel)
		}
		switch {
		case len(o.ends) != 1:
			t.Errorf("%s: End called %d times, want once", desc, len(o.ends))
		case o.ends[0] == 0:
			refused++
			if o.err == nil || starts != 0 {
				t.Errorf("%s: a refused submit's End needs its error, and no Start", desc)
			}
		default:
			out := o.ends[0]
			got[o.key][out]++
			if starts > 1 || (out == smartpool.Ran || out == smartpool.Panicked || out == smartpool.Goexited) != (starts == 1) && out != smartpool.DroppedOnClose {
				t.Errorf("%s: Start called %d times for a task that ended %v", desc, starts, out)
			}
			if out == smartpool.Cancelled && (starts != 0 || o.err == nil) {
				t.Errorf("%s: a cancelled task's End needs the cause, and no Start", desc)
			}
			if pe := (*smartpool.PanicError)(nil); out == smartpool.Panicked && !errors.As(o.err, &pe) {
				t.Errorf("%s: a panicked task's End has err %v, want its *PanicError", desc, o.err)
			}
			if d := yields - resumes; d < 0 || d > 1 || d == 1 && out == smartpool.Ran {
				t.Errorf("%s: %d yields and %d resumes", desc, yields, resumes)
			}
			if starts == 1 && o.events[0] != "start" || o.events[len(o.events)-1] != "end" {
				t.Errorf("%s: Start first and End last", desc)
			}
		}
		o.mu.Unlock()
	}
	m.endMu.Lock()
	want := map[string]map[smartpool.Outcome]int{"s": {}, "g": {}}
	for _, e := range m.ends {
		want["s"][e.o]++
	}
	m.endMu.Unlock()
	for o := smartpool.Ran; o <= smartpool.DroppedDisplaced; o++ {
		if n := int(m.fillerEnds.of(o)); n > 0 {
			want["s"][o] += n
		}
		if n := int(m.gateEnds.of(o)); n > 0 {
			want["g"][o] += n
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the observers' endings by channel %v, OnEnd's %v", got, want)
	}
	if (m.e == eYield || m.x.yieldedAtEnd()) && sYields == 0 {
		t.Errorf("the task yielded, and no observer of its channel saw a Yield")
	}
	if refused > 0 && m.enterErr == nil && !m.e.group() && !m.x.removal() { // a removal case submits more, refused
		t.Errorf("%d observers ended refused, and the submit returned nil", refused)
	}
	if m.e.submitCtx() && r.ctxs == 0 && m.x != xClosed {
		t.Errorf("a task submitted with a context was observed without it")
	}
}

func TestObservedEndings(t *testing.T) {
	run := 0
	for e := range mxEntries {
		for k := range mxKinds {
			for x := range mxExits {
				if mxWhyImpossible(e, k, x) != "" {
					continue
				}
				for w := range mxWaits {
					if !w.applies(e, x) {
						continue
					}
					run++
					t.Run(fmt.Sprintf("a task entering by %s into %s %s%s", e.name(k), k, x, w), func(t *testing.T) {
						defer func() {
							if r := recover(); r != nil {
								t.Errorf("goroutines of the pool or the task were left blocked: %v", r)
							}
						}()
						synctest.Test(t, func(t *testing.T) {
							obs := &mxObserver{}
							m := newMxCase(t, e, k, x, w, obs)
							defer m.cleanup()
							m.play()
							m.cleanup()
							m.check()
							obs.check(m)
						})
					})
				}
			}
		}
	}
	t.Logf("observed endings matrix: %d cases", run)
}
