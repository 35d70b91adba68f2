package smartpool_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/stretchr/testify/require"
)

const unreadLine = "smartpool: task error never read"

// unreadEntry submits fn to channel "a" of p the way a user would get its
// result back: Go, NewFuture with SubmitTask, a Group or a Results. wait
// reads the result (Future.Wait, Group.Wait or Results.Wait).
type unreadEntry struct {
	name   string
	submit func(t *testing.T, p *smartpool.Pool[string], fn func(context.Context) error) (wait func())
}

var unreadEntries = []unreadEntry{
	{"Go", func(t *testing.T, p *smartpool.Pool[string], fn func(context.Context) error) func() {
		f, err := smartpool.Go(p, "a", func(ctx context.Context) (int, error) { return 0, fn(ctx) })
		require.NoError(t, err)
		return func() { _, _ = f.Wait(context.Background()) }
	}},
	{"NewFuture", func(t *testing.T, p *smartpool.Pool[string], fn func(context.Context) error) func() {
		task, f := smartpool.NewFuture(func(ctx context.Context) (int, error) { return 0, fn(ctx) })
		require.NoError(t, p.SubmitTask("a", task))
		return func() { _, _ = f.Wait(context.Background()) }
	}},
	{"Group", func(t *testing.T, p *smartpool.Pool[string], fn func(context.Context) error) func() {
		g := smartpool.NewGroup(context.Background(), p)
		g.Go("a", fn)
		return func() { _ = g.Wait(context.Background()) }
	}},
	{"Results", func(t *testing.T, p *smartpool.Pool[string], fn func(context.Context) error) func() {
		g := smartpool.NewResults[int](context.Background(), p)
		g.Go("a", func(ctx context.Context) (int, error) { return 1, fn(ctx) }) // the line names this function, not Results' own
		return func() { _, _ = g.Wait(context.Background()) }
	}},
}

// failures a task ends with, and the error the line names.
var unreadFailures = []struct {
	name string
	fn   func(context.Context) error
	want string
}{
	{"error", func(context.Context) error { return errBoom }, errBoom.Error()},
	{"panic", func(context.Context) error { panic("kaboom") }, "kaboom"},
	{"runtime.Goexit", func(context.Context) error { runtime.Goexit(); return nil }, smartpool.ErrGoexit.Error()},
}

// A task's failure that no Wait reads before the pool closes is logged
// once, at Warn, with its channel, the failing function and the error; one
// a Wait read, a success and a drop are not. Every entry, every failure.
func TestUnread_LoggedWhenThePoolClosesFirst(t *testing.T) {
	for _, e := range unreadEntries {
		for _, x := range unreadFailures {
			for _, read := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/read=%v", e.name, x.name, read), func(t *testing.T) {
					var logs logRecords
					o := start(t, &behavior{workers: 1, logger: slog.New(&logs), onPanic: func(string, *smartpool.PanicError) {},
						levels: [][]ch{{fifo("a")}}})
					p := o.Pool()
					wait := e.submit(t, p, x.fn)
					eventually(t, func() bool { s, _ := p.Stats().Channel("a"); return s.Ran+s.Panicked+s.Goexited == 1 })
					if read {
						wait()
					}
					closeWithin(t, o, long)
					lines := logs.lines(unreadLine)
					if read {
						require.Empty(t, lines, "a failure a Wait read")
						return
					}
					require.Len(t, lines, 1)
					l := lines[0]
					require.Equal(t, "WARN", l["level"])
					require.Equal(t, "a", l["channel"])
					require.Contains(t, l["error"], x.want)
					require.Contains(t, l["origin"], "smartpool_test.init.", "the task's function names where it came from")
					require.Contains(t, l["origin"], "unread_test.go:")
				})
			}
		}
	}
}

// Successes and drops are not followed: a pool that ran, or dropped at
// Close, tasks nobody waited for logs no unread line.
func TestUnread_SuccessesAndDropsAreNotFollowed(t *testing.T) {
	for _, e := range unreadEntries {
		t.Run(e.name, func(t *testing.T) {
			var logs logRecords
			drop := fifo("a")
			drop.coc = false
			o := start(t, &behavior{workers: 1, logger: slog.New(&logs), levels: [][]ch{{drop}}})
			p := o.Pool()
			gate := make(chan struct{})
			e.submit(t, p, func(context.Context) error { <-gate; return nil }) // runs
			e.submit(t, p, func(context.Context) error { return nil })         // dropped by Close
			eventually(t, func() bool { s, _ := p.Stats().Channel("a"); return s.Running == 1 })
			closed := goIn(func() { _, _ = o.Close(context.Background()) })
			eventually(t, func() bool { return p.State() == smartpool.Closing })
			close(gate)
			waitFor(t, closed, "Close")
			c, _ := closeWithin(t, o, long).Channel("a")
			require.Equal(t, uint64(1), c.Dropped)
			require.Empty(t, logs.lines(unreadLine))
		})
	}
}

// A failure whose Future or Group is collected before any Wait read it is
// logged then, while the pool runs, and not again at Close.
func TestUnread_LoggedWhenCollected(t *testing.T) {
	for _, e := range unreadEntries {
		t.Run(e.name, func(t *testing.T) {
			var logs logRecords
			o := start(t, &behavior{workers: 1, logger: slog.New(&logs), levels: [][]ch{{fifo("a")}}})
			p := o.Pool()
			func() {
				_ = e.submit(t, p, func(context.Context) error { return errBoom })
			}()
			eventually(t, func() bool { s, _ := p.Stats().Channel("a"); return s.Ran == 1 })
			eventually(t, func() bool { runtime.GC(); return len(logs.lines(unreadLine)) == 1 })
			require.Equal(t, smartpool.Running, p.State())
			closeWithin(t, o, long)
			lines := logs.lines(unreadLine)
			require.Len(t, lines, 1, "logged once")
			require.True(t, strings.Contains(lines[0]["why"], "collected"), lines[0]["why"])
		})
	}
}

// A Group's refused Go (an unknown key, a nil function) is its error like a
// task's: with Wait forgotten, it is logged when the pool closes, the
// error naming the key.
func TestUnread_RefusedGroupGo(t *testing.T) {
	for _, c := range []struct {
		name, key string
		fn        func(context.Context) error
		want      string
	}{
		{"unknown key", "nope", func(context.Context) error { return nil }, `"nope"`},
		{"nil function", "a", nil, smartpool.ErrNilTask.Error()},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs logRecords
			o := start(t, &behavior{workers: 1, logger: slog.New(&logs), levels: [][]ch{{fifo("a")}}})
			g := smartpool.NewGroup(context.Background(), o.Pool())
			g.Go(c.key, c.fn)
			closeWithin(t, o, long)
			lines := logs.lines(unreadLine)
			require.Len(t, lines, 1)
			require.Contains(t, lines[0]["error"], c.want)
		})
	}
}
