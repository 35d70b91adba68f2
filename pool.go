package smartpool

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/smartpool-go/smartpool/internal/engine"
)

// Pool is the shareable handle of a running pool: submit by key, read stats.
// Get it from OwnedPool.Pool. All methods are safe for concurrent use.
type Pool[K comparable] struct {
	e *engine.Engine
	// keys maps a channel index to its key: read-only, but for the slots
	// AddChannel fills (written under reshaper.mu before the channel can
	// take a task). index maps a key to its channel index: a map never
	// changed once published; AddChannel and RemoveChannel publish a new
	// copy (under reshaper.mu), so a by-key submit costs one atomic load.
	keys      []K
	index     atomic.Pointer[map[K]int]
	onPanic   func(K, *PanicError)
	log       *slog.Logger // Config.Logger or slog.Default(); read-only
	rate      rateWindow   // Stats' tasks-per-second window (report.go)
	closeOnce sync.Once    // the "close begun" line is logged once (logging.go)
	report    *Report[K]   // Close's report: written once by the engine's finish, before done is closed; read after
}

// Submit queues fn in the channel named key, ordered and tied as opts say
// (WithContext, WithDeadline, WithPriority; none: the channel's default
// ordering, see each channel's Push). Without WithContext it never waits:
// at the pool's in-flight limit (Config.Limit) or in a full
// channels.Bounded it returns ErrFull.
//
// It returns ErrNilTask for a nil fn, then ErrClosed once Close started,
// then an error wrapping ErrUnknownKey for a key the configuration does not
// list, then one wrapping ErrOption for an option the channel cannot honour,
// then ErrFull or, with WithContext, ctx.Err() if ctx ended first, then the
// channel's error.
func (p *Pool[K]) Submit(key K, fn func(ctx context.Context), opts ...Option) error {
	if fn == nil {
		return ErrNilTask
	}
	return p.submit(key, Func(fn), opts)
}

// SubmitTask is Submit for a Task value: a type of the user's that can be
// reused, or a task made by NewFuture (resolved with ctx.Err() if
// WithContext cancels it, ErrDropped if it is dropped).
func (p *Pool[K]) SubmitTask(key K, t Task, opts ...Option) error {
	if engine.NilTask(t) {
		return ErrNilTask
	}
	return p.submit(key, t, opts)
}

// submit is Submit and SubmitTask once t is known not to be nil (Submit
// skips nilTask's reflection: a func value is checked with ==).
func (p *Pool[K]) submit(key K, t Task, opts []Option) error {
	if p.e.Stopping() {
		return ErrClosed
	}
	if len(opts) != 0 {
		return p.submitWith(key, t, opts)
	}
	k := p.e.Pin() // see "Reshaping", 6 (internal/engine/reshape.go)
	// Deferred: the channel's Push may run t on this goroutine (a Bounded
	// that runs on the caller when full), and t may call runtime.Goexit.
	defer p.e.Unpin(k)
	i, ok := p.lookup(key)
	if !ok {
		return engine.UnknownKey(key)
	}
	if k >= 0 {
		p.e.LookedUp()
	}
	return p.e.Submit(i, t, Order{}, nil)
}

// submitWith is submit given options: pinned until it returns, whether it
// runs t inline, which may end its goroutine, or waits (WithContext; for a
// unit, unpinned: see keyPin).
func (p *Pool[K]) submitWith(key K, t Task, opts []Option) error {
	pin := p.e.PinKey(func() (int, error) { return p.find(key) })
	defer pin.Unpin()
	i, err := pin.Find()
	if err != nil {
		return err
	}
	return p.named(key, p.e.SubmitWith(i, t, Order{}, opts, nil, &pin))
}

// find is lookup's answer as an error for an unknown key.
func (p *Pool[K]) find(key K) (int, error) {
	i, ok := p.lookup(key)
	if !ok {
		return 0, engine.UnknownKey(key)
	}
	return i, nil
}

// lookup returns the channel index of key: one atomic load and a map read.
func (p *Pool[K]) lookup(key K) (int, bool) {
	i, ok := (*p.index.Load())[key]
	return i, ok
}

// named adds the channel's key to an option error, which a channel returns
// without knowing its name.
func (p *Pool[K]) named(key K, err error) error {
	if err == nil {
		return nil // before boxing key and errors.As, whose target escapes: no allocation on success
	}
	return engine.WithChannel(key, err)
}

// State is a pool's lifecycle stage. It only moves forward.
type State int

// The lifecycle stages.
const (
	Running State = iota // accepting work
	Closing              // Close started: admission stopped, draining
	Closed               // every worker exited and Close's report is ready (see Report for the tasks it cannot count yet)
)

func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Closing:
		return "closing"
	case Closed:
		return "closed"
	}
	return "State(?)"
}

// State returns the pool's current lifecycle stage.
func (p *Pool[K]) State() State {
	select {
	case <-p.e.Closed():
		return Closed
	default:
	}
	if p.e.Stopping() {
		return Closing
	}
	return Running
}

func (p *Pool[K]) setPanicHandler(h func(K, *PanicError)) {
	p.onPanic = h
	p.e.OnPanic(func(ch int, pe *PanicError) {
		defer func() {
			if r := recover(); r != nil {
				p.logPanic("smartpool: panic handler panicked", p.keys[ch], &PanicError{Value: r, Stack: engine.Stack()})
			}
		}()
		if p.onPanic == nil {
			p.logPanic("smartpool: task panicked", p.keys[ch], pe)
			return
		}
		p.onPanic(p.keys[ch], pe)
	})
}
