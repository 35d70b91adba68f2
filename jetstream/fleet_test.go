package jetstream

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A rolling deploy: process A runs the old code (no handler "new"), B the
// new. A alone first passes each "new" message on; then B joins and runs
// them all with MaxDeliver 1, soon. Nothing is dead-lettered or lost: A's
// passes do not use up B's attempts.
func TestMixedFleetLosesNothing(t *testing.T) {
	srv := embedded(t, t.TempDir(), true)
	ty := newTally()
	opts := ChannelOptions{Prefetch: 4, UnknownDelay: 20 * time.Millisecond, MaxDeliver: 1}
	regA := NewRegistry()
	if err := regA.Handle("old", ty.handler); err != nil {
		t.Fatal(err)
	}
	a, err := Connect(testCtx(t), srv.URL(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	chA, err := a.Channel(testCtx(t), "deploy", regA, opts)
	if err != nil {
		t.Fatal(err)
	}
	onePool(t, chA, 2)
	newIDs := publishN(t, srv, "deploy", "new", "n", 30)
	oldIDs := publishN(t, srv, "deploy", "old", "o", 30)
	ty.waitAll(t, oldIDs)
	until(t, "A passed each new message on", func() bool { return chA.Stats().PassedOn >= 30 })

	regB := NewRegistry()
	for _, h := range []string{"old", "new"} {
		if err := regB.Handle(h, ty.handler); err != nil {
			t.Fatal(err)
		}
	}
	b, err := Connect(testCtx(t), srv.URL(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	chB, err := b.Channel(testCtx(t), "deploy", regB, opts)
	if err != nil {
		t.Fatal(err)
	}
	joined := time.Now()
	onePool(t, chB, 2)
	ty.waitAll(t, newIDs)
	// The 30 copies wait in the pass stream: B takes them a batch after
	// another, not one batch per fetchWait.
	if took := time.Since(joined); took > 5*time.Second {
		t.Errorf("B ran the 30 passed copies %v after joining, want within 5s", took)
	}
	ran, twice, lost := ty.summary(append(newIDs, oldIDs...))
	sa, sb := chA.Stats(), chB.Stats()
	dead, err := srv.DeadLetterCount(testCtx(t), "deploy")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ran %d (twice %d), lost %d, dead letters %d; A %+v; B %+v", ran, twice, lost, dead, sa, sb)
	if lost != 0 || dead != 0 || sa.DeadLettered+sb.DeadLettered != 0 || sb.Retried != 0 {
		t.Fatalf("lost %d, dead letters %d/%d/%d, B retried %d: want none", lost, dead, sa.DeadLettered, sb.DeadLettered, sb.Retried)
	}
}

// A message no process can run is dead-lettered once it is older than
// UnknownMaxAge: kept in the dead-letter stream with its reason and
// attempts, listed and counted, and Replay publishes it again for a process
// that has the handler by then.
func TestDeadLetterStreamAndReplay(t *testing.T) {
	c := embedded(t, t.TempDir(), false)
	dead := make(chan DeadLetter, 1)
	ch, err := c.Channel(testCtx(t), "orphans", NewRegistry(), ChannelOptions{UnknownDelay: 20 * time.Millisecond,
		UnknownMaxAge: 300 * time.Millisecond, OnDeadLetter: func(d DeadLetter) { dead <- d }})
	if err != nil {
		t.Fatal(err)
	}
	p := onePool(t, ch, 1)
	if _, err := c.Publish(testCtx(t), "orphans", "later", []byte("x")); err != nil {
		t.Fatal(err)
	}
	d := recv(t, dead, "the dead letter")
	if !errors.Is(d.Err, ErrUnknownHandler) || d.Handler != "later" || d.Sequence == 0 || time.Since(d.Born) < 300*time.Millisecond {
		t.Fatalf("dead letter %+v: want ErrUnknownHandler after UnknownMaxAge, stored", d)
	}
	closePool(t, p)
	if n, err := c.DeadLetterCount(testCtx(t), "orphans"); err != nil || n != 1 {
		t.Fatalf("count %d, %v; want 1", n, err)
	}
	list, err := c.DeadLetters(testCtx(t), "orphans", 0, 10)
	if err != nil || len(list) != 1 {
		t.Fatalf("list %+v, %v; want one", list, err)
	}
	if l := list[0]; l.Handler != "later" || string(l.Payload) != "x" || !strings.Contains(l.Reason, "no handler") || l.Sequence != d.Sequence {
		t.Fatalf("listed %+v, want the dead letter %+v", l, d)
	}
	if _, err := c.DeadLetters(testCtx(t), "orphans", 0, 0); err == nil {
		t.Fatal("limit 0 accepted")
	}

	ty := newTally()
	reg := NewRegistry()
	if err := reg.Handle("later", ty.handler); err != nil {
		t.Fatal(err)
	}
	ch2, err := c.Channel(testCtx(t), "orphans", reg, ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	onePool(t, ch2, 1)
	if _, err := c.Replay(testCtx(t), "orphans", d.Sequence); err != nil {
		t.Fatal(err)
	}
	ty.waitAll(t, []string{"x"})
	if n, err := c.DeadLetterCount(testCtx(t), "orphans"); err != nil || n != 0 {
		t.Fatalf("count after replay %d, %v; want 0", n, err)
	}
	if _, err := c.Replay(testCtx(t), "orphans", d.Sequence); !errors.Is(err, ErrNoDeadLetter) {
		t.Fatalf("second replay: %v, want ErrNoDeadLetter", err)
	}
}

// A process that opens a channel with another AckWait than the one its
// consumer has is refused with both values named; the consumer keeps its
// setting, and the same AckWait joins it.
func TestConflictingAckWaitRefused(t *testing.T) {
	c := embedded(t, t.TempDir(), false)
	reg := NewRegistry()
	if _, err := c.Channel(testCtx(t), "shared", reg, ChannelOptions{AckWait: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Channel(testCtx(t), "shared", reg, ChannelOptions{AckWait: 2 * time.Second})
	if !errors.Is(err, ErrConsumerConflict) || !strings.Contains(err.Error(), "2s") || !strings.Contains(err.Error(), "30s") {
		t.Fatalf("AckWait 2s over 30s: %v; want ErrConsumerConflict naming both", err)
	}
	t.Logf("refused: %v", err)
	info, err := c.js.Consumer(testCtx(t), streamName("shared"), consumerName)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.CachedInfo().Config.AckWait; got != 30*time.Second {
		t.Fatalf("the consumer's AckWait is %v now, want 30s kept", got)
	}
	if _, err := c.Channel(testCtx(t), "shared", reg, ChannelOptions{AckWait: 30 * time.Second}); err != nil {
		t.Fatalf("the same AckWait: %v", err)
	}
}

// A handler hangs for ever in process A. Past its timeout (set by the
// publish) A stops keeping the message alive and hands it back, even
// though A's pool could not close (its Close gave up at a deadline);
// process B runs it.
func TestHungHandlerTimedOutRunsElsewhere(t *testing.T) {
	srv := embedded(t, t.TempDir(), true)
	started, release := make(chan struct{}), make(chan struct{})
	var returned atomic.Bool
	regA := NewRegistry()
	if err := regA.Handle("work", func(ctx context.Context, _ []byte) error {
		close(started)
		<-release // ignores ctx: hung
		returned.Store(true)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	a, err := Connect(testCtx(t), srv.URL(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	opts := ChannelOptions{Backoff: func(int) time.Duration { return time.Millisecond }}
	chA, err := a.Channel(testCtx(t), "hang", regA, opts)
	if err != nil {
		t.Fatal(err)
	}
	poolA := onePool(t, chA, 1)
	t.Cleanup(func() { close(release) }) // before poolA's cleanup Close
	if _, err := srv.Publish(testCtx(t), "hang", "work", []byte("h"), WithTimeout(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	recv(t, started, "A's run")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if _, err := poolA.Close(ctx); err == nil {
		t.Fatal("A's pool closed with its worker hung")
	}
	cancel()

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
	chB, err := b.Channel(testCtx(t), "hang", regB, opts)
	if err != nil {
		t.Fatal(err)
	}
	onePool(t, chB, 1)
	ty.waitAll(t, []string{"h"})
	until(t, "B's ack", func() bool { return chB.Stats().Acked == 1 }) // the ack follows the handler's return
	sa, sb := chA.Stats(), chB.Stats()
	t.Logf("A %+v; B %+v", sa, sb)
	if sa.TimedOut != 1 || sa.Retried != 1 || sa.Held != 0 || sb.Acked != 1 || returned.Load() {
		t.Fatalf("A timed out %d, retried %d, holds %d; B acked %d: want 1, 1, 0, 1", sa.TimedOut, sa.Retried, sa.Held, sb.Acked)
	}
}
