package smartpool_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// Endings produced off the pool's goroutines (a removal's drops on its
// caller, a displaced task on its submitter, a task a channel runs on its
// submitter) must be covered by what Close waits for: Close returns its
// report only once each of them ended, OnEnd included, and a Close called
// from inside one returns ErrCloseFromTask instead of waiting for itself.
// Each test blocks one such ending in its OnEnd (or its run), lets Close
// reach the point where it would return, and checks that it does not.

// notClosedWindow is how long a test watches for a Close that must not
// return yet: a "must not happen" window, which a Close that does not wait
// fills at once.
const notClosedWindow = 50 * time.Millisecond

// closeAsync starts o.Close in a goroutine and returns its result.
func closeAsync(o *smartpool.OwnedPool[string]) <-chan *smartpool.Report[string] {
	res := make(chan *smartpool.Report[string], 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), long)
		defer cancel()
		r, err := o.Close(ctx)
		if err != nil {
			r = nil
		}
		res <- r
	}()
	return res
}

// workersGone waits until Close started and no worker has a goroutine any
// more: a Close that waited only for the workers has returned, or is about
// to.
func workersGone(t *testing.T, p *smartpool.Pool[string]) {
	t.Helper()
	rsEventually(t, "the workers to leave", func() bool {
		return p.State() != smartpool.Running && p.Stats().Live == 0
	})
}

// notClosed fails if o's Close finishes within notClosedWindow: something
// it must wait for has not ended.
func notClosed(t *testing.T, o *smartpool.OwnedPool[string], what string) {
	t.Helper()
	select {
	case <-o.Done():
		t.Errorf("Close finished while %s", what)
	case <-time.After(notClosedWindow):
	}
}

// blockFirst is an OnEnd that counts endings with outcome o and blocks the
// first of them until release is closed.
type blockFirst struct {
	o       smartpool.Outcome
	once    sync.Once
	in      chan struct{} // closed as the first such ending enters OnEnd
	release chan struct{}
	n       atomic.Int32
}

func newBlockFirst(o smartpool.Outcome) *blockFirst {
	return &blockFirst{o: o, in: make(chan struct{}), release: make(chan struct{})}
}

func (b *blockFirst) onEnd(_ smartpool.Task, o smartpool.Outcome) {
	if o != b.o {
		return
	}
	b.n.Add(1)
	b.once.Do(func() {
		close(b.in)
		<-b.release
	})
}

// A dropping removal drops the channel's queued tasks on its caller's
// goroutine. Close, started while it does (here: while the OnEnd of its
// first drop runs), must wait for the rest: its report counts all 12.
// Before the removal held a share of what Close waits for, the report had 1.
func TestCloseSeams_RemoveDropDuringClose(t *testing.T) {
	const queued = 12
	o, p := rsNewPool(t, 1, []int{0, 1})
	release := rsHoldWorker(t, p)
	ends := newBlockFirst(smartpool.DroppedOnClose)
	if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "d", OnEnd: ends.onEnd}, channels.NewFIFO(), "d"); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	for range queued {
		if err := p.Submit("d", func(context.Context) { ran.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	removed := rsRemoveAsync(p, "d", smartpool.Drop)
	rsRecv(t, "the removal's first drop", ends.in)
	closed := closeAsync(o)
	release()
	workersGone(t, p)
	notClosed(t, o, "a removal was dropping tasks")
	close(ends.release)
	rep := rsRecv(t, "Close", closed)
	if rep == nil {
		t.Fatal("Close failed")
	}
	c, _ := rep.Channel("d")
	if got := c.Dropped + rep.Removed.Dropped; got != queued {
		t.Errorf("Close's report: %d dropped (channel %d, Removed %d), want %d", got, c.Dropped, rep.Removed.Dropped, queued)
	}
	if r := rsRecv(t, "the removal", removed); r.err != nil || r.st.Dropped != queued {
		t.Errorf("removal: %+v, %v; want %d dropped", r.st, r.err, queued)
	}
	if n := ends.n.Load(); n != queued || ran.Load() != 0 {
		t.Errorf("OnEnd saw %d drops and %d tasks ran; want %d, 0", n, ran.Load(), queued)
	}
}

// Close called from the OnEnd of a task a removal dropped, on the
// removal's goroutine, returns ErrCloseFromTask at once: the removal's share
// of what Close waits for is the caller's own.
func TestCloseSeams_CloseFromRemovalDrop(t *testing.T) {
	o, p := rsNewPool(t, 1, []int{0, 1})
	release := sync.OnceFunc(rsHoldWorker(t, p))
	defer release()
	errs := make(chan error, 4)
	onEnd := func(_ smartpool.Task, out smartpool.Outcome) {
		if out != smartpool.DroppedOnClose {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := o.Close(ctx)
		errs <- err
	}
	if err := p.AddChannel(1, smartpool.ChannelParams[string]{Key: "d", OnEnd: onEnd}, channels.NewFIFO(), "d"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := p.Submit("d", func(context.Context) {}); err != nil {
			t.Fatal(err)
		}
	}
	removed := rsRemoveAsync(p, "d", smartpool.Drop)
	for i := range 2 {
		if err := rsRecv(t, "Close from OnEnd", errs); !errors.Is(err, smartpool.ErrCloseFromTask) {
			t.Errorf("Close from the OnEnd of drop %d: %v, want ErrCloseFromTask", i, err)
		}
	}
	release()
	if r := rsRecv(t, "the removal", removed); r.err != nil || r.st.Dropped != 2 {
		t.Errorf("removal: %+v, %v; want 2 dropped", r.st, r.err)
	}
}
