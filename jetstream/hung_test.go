package jetstream

import (
	"context"
	"testing"
	"time"
)

// Every worker of process A hangs in a handler that ignores its context
// (no timeout set). The messages A prefetched behind it are not stranded:
// each goes on to process B within QueueTimeout plus one fetch of being
// queued, with no attempt counted, and A, stalled, takes at most one
// message at a time afterwards. Only the hung run stays with A.
func TestHungProcessStrandsNothing(t *testing.T) {
	srv := embedded(t, t.TempDir(), true)
	const queueTimeout = 300 * time.Millisecond
	opts := ChannelOptions{Prefetch: 4, QueueTimeout: queueTimeout, MaxDeliver: 1}
	hung, release := make(chan string, 1), make(chan struct{})
	regA := NewRegistry()
	if err := regA.Handle("work", func(_ context.Context, p []byte) error {
		hung <- string(p)
		<-release // ignores ctx: hung
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	a, err := Connect(testCtx(t), srv.URL(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	chA, err := a.Channel(testCtx(t), "stuck", regA, opts)
	if err != nil {
		t.Fatal(err)
	}
	poolA := onePool(t, chA, 1)
	t.Cleanup(func() {
		close(release) // before poolA's cleanup Close
		closePool(t, poolA)
	})
	ids := publishN(t, srv, "stuck", "work", "s", 5)
	first := recv(t, hung, "A's hung run")
	until(t, "A queued the other four", func() bool { return chA.Stats().Queued == 4 })
	queued := time.Now()

	ty := newTally()
	regB := NewRegistry()
	if err := regB.Handle("work", ty.handler); err != nil {
		t.Fatal(err)
	}
	b, err := Connect(testCtx(t), srv.URL(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	chB, err := b.Channel(testCtx(t), "stuck", regB, opts)
	if err != nil {
		t.Fatal(err)
	}
	onePool(t, chB, 2)
	var rest []string
	for _, id := range ids {
		if id != first {
			rest = append(rest, id)
		}
	}
	ty.waitAll(t, rest)
	took := time.Since(queued)
	limit := queueTimeout + fetchWait + time.Second // the sweep's period, one fetch, and a little for -race
	more := publishN(t, srv, "stuck", "work", "m", 8)
	ty.waitAll(t, more) // A, stalled, strands at most one of them for QueueTimeout
	sa, sb := chA.Stats(), chB.Stats()
	t.Logf("the four queued behind the hung handler ran on B %v after queueing (limit %v); A %+v; B %+v", took, limit, sa, sb)
	if took > limit {
		t.Errorf("the queued messages ran %v after queueing, want within %v", took, limit)
	}
	if sa.Queued > 1 || sb.DeadLettered != 0 || sa.DeadLettered != 0 {
		t.Errorf("A queues %d (want at most 1: stalled), dead letters A %d B %d (a pass must cost no attempt)", sa.Queued, sa.DeadLettered, sb.DeadLettered)
	}
	if sa.QueueTimedOut < 4 {
		t.Errorf("A counted %d messages past QueueTimeout, want at least 4", sa.QueueTimedOut)
	}
	if ran, _, _ := ty.summary(rest); ran != 4 {
		t.Errorf("B ran %d of the four", ran)
	}
}
