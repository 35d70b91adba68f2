package engine

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// # Unread errors
//
// A task's error or panic that its Future or Group holds is the submitter's
// to read with Wait. One that no Wait will ever read would vanish without a
// word (errgroup loses it that way when Wait is forgotten), so the pool
// follows each until it is read: the Future or Group registers an Unread as
// it records the error, Wait marks it read, and whichever comes first of
// the holder's collection (a runtime cleanup on the Future or Group) and
// the pool's close logs it once at Warn, with its channel and the task's
// function, where it came from. Tasks that end well pay nothing.

// Unread is a task error that its Future or Group holds and no Wait has
// read yet. Its state moves once, from unreadOpen to read or logged, by
// compare-and-swap, so exactly one of Wait, the cleanup and the close acts.
type Unread struct {
	e     *Engine
	ch    int
	fn    any    // the task's function, named only when logged: the task's origin
	err   error  // the error or *task.PanicError
	seq   uint64 // registration order, for Close's lines; guarded by the book's mu
	state atomic.Int32
}

const (
	unreadOpen int32 = iota
	unreadRead
	unreadLogged
)

// unreadBook holds a pool's open Unreads, for Close to log.
type unreadBook struct {
	mu     sync.Mutex
	open   map[*Unread]struct{} // guarded by mu
	seq    uint64               // Unreads registered; guarded by mu
	closed bool                 // the pool has closed and logged the book; guarded by mu
}

// Unread registers err, which the task fn of channel ch ended with (ch
// negative: a submit refused before a channel was found), as
// held by a Future or Group until a Wait reads it. The caller ties it to
// the holder's collection with runtime.AddCleanup(holder, (*Unread).Collected, u).
// After the pool closed it is not listed: only its collection can log it.
func (e *Engine) Unread(ch int, fn any, err error) *Unread {
	u := &Unread{e: e, ch: ch, fn: fn, err: err}
	b := &e.unread
	b.mu.Lock()
	if !b.closed {
		if b.open == nil {
			b.open = make(map[*Unread]struct{})
		}
		b.seq++
		u.seq = b.seq
		b.open[u] = struct{}{}
	}
	b.mu.Unlock()
	return u
}

// Read marks u read by a Wait, and reports whether this call did (the
// caller then stops the holder's cleanup). Safe on a nil u.
func (u *Unread) Read() bool {
	if u == nil || !u.state.CompareAndSwap(unreadOpen, unreadRead) {
		return false
	}
	u.unlist()
	return true
}

// Collected logs u if no Wait read it: its holder was collected, so none
// ever will. It runs as the holder's runtime cleanup.
func (u *Unread) Collected() {
	if u.state.CompareAndSwap(unreadOpen, unreadLogged) {
		u.unlist()
		u.log("its Future or Group was collected")
	}
}

// Where returns the pool and the channel of the task running with ctx: the
// innermost task run inline on its goroutine (help.go, run_here.go), or the
// task it carries (its origin, once it yielded); nil outside a pool task.
func Where(ctx context.Context) (*Engine, int) {
	if tc := TaskOf(ctx); tc != nil {
		switch {
		case len(tc.inline) > 0:
			return tc.E, tc.inline[len(tc.inline)-1]
		case tc.detached:
			return tc.E, tc.origin
		case tc.cur != nil:
			return tc.E, tc.cur.ch
		}
		return nil, 0
	}
	if run, ok := ctx.Value(InlineKey{}).(*InlineRun); ok {
		return run.e, run.ch
	}
	return nil, 0
}

func (u *Unread) unlist() {
	b := &u.e.unread
	b.mu.Lock()
	delete(b.open, u)
	b.mu.Unlock()
}

// FlushUnread logs every error no Wait has read by the time the pool
// closed; the finishing closer calls it once. A Wait after the close still
// returns the error; the line says it was not read before.
func (e *Engine) FlushUnread() {
	b := &e.unread
	b.mu.Lock()
	open := b.open
	b.open, b.closed = nil, true
	b.mu.Unlock()
	for _, u := range slices.SortedFunc(maps.Keys(open), func(a, b *Unread) int { return cmp.Compare(a.seq, b.seq) }) {
		if u.state.CompareAndSwap(unreadOpen, unreadLogged) {
			u.log("no Wait read it before the pool closed")
		}
	}
}

func (u *Unread) log(why string) {
	e := u.e
	var key any = "(none: the submit was refused)"
	if u.ch >= 0 && e.keyOf != nil {
		key = e.keyOf(u.ch)
	}
	e.log.Warn("smartpool: task error never read", "channel", key, "origin", funcOrigin(u.fn), "error", u.err, "why", why)
}

// funcOrigin names a task's function and where it is written, such as
// "main.handle.func1 (server.go:42)"; for anything else, its type.
func funcOrigin(fn any) string {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() {
		return fmt.Sprintf("%T", fn)
	}
	f := runtime.FuncForPC(v.Pointer())
	if f == nil {
		return fmt.Sprintf("%T", fn)
	}
	file, line := f.FileLine(f.Entry())
	return fmt.Sprintf("%s (%s:%d)", f.Name(), file, line)
}
