package jetstream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/source"
)

// Published messages run once each through a pool; a duplicate message ID
// stores nothing.
func TestPublishRunsEachOnce(t *testing.T) {
	c := embedded(t, t.TempDir(), false)
	ty := newTally()
	reg := NewRegistry()
	if err := reg.Handle("record", ty.handler); err != nil {
		t.Fatal(err)
	}
	ch, err := c.Channel(testCtx(t), "jobs", reg, ChannelOptions{Prefetch: 4})
	if err != nil {
		t.Fatal(err)
	}
	ids := publishN(t, c, "jobs", "record", "m", 200)
	dup, err := c.Publish(testCtx(t), "jobs", "record", []byte(ids[0]), WithMsgID(ids[0]))
	if err != nil || !dup.Duplicate {
		t.Fatalf("republished ID: %+v, %v; want a duplicate", dup, err)
	}
	p := onePool(t, ch, 2)
	ty.waitAll(t, ids)
	r := closePool(t, p)
	ran, twice, lost := ty.summary(ids)
	s := ch.Stats()
	t.Logf("published %d, ran %d, ran twice %d, lost %d; channel %+v", len(ids), ran, twice, lost, s)
	if twice != 0 || lost != 0 || s.Acked != uint64(len(ids)) {
		t.Fatalf("ran twice %d, lost %d, acked %d", twice, lost, s.Acked)
	}
	if cs, _ := r.Channel("jobs"); cs.Ran != uint64(len(ids)) {
		t.Fatalf("pool counted %d runs, want %d", cs.Ran, len(ids))
	}
}

// A typed handler decodes JSON; a payload that does not decode is
// dead-lettered at once.
func TestJSONHandler(t *testing.T) {
	c := embedded(t, t.TempDir(), false)
	type job struct{ N int }
	got := make(chan int, 1)
	dead := make(chan DeadLetter, 1)
	reg := NewRegistry()
	if err := HandleJSON(reg, "job", func(_ context.Context, j job) error { got <- j.N; return nil }); err != nil {
		t.Fatal(err)
	}
	ch, err := c.Channel(testCtx(t), "typed", reg, ChannelOptions{OnDeadLetter: func(d DeadLetter) { dead <- d }})
	if err != nil {
		t.Fatal(err)
	}
	onePool(t, ch, 1)
	if _, err := PublishJSON(testCtx(t), c, "typed", "job", job{N: 7}); err != nil {
		t.Fatal(err)
	}
	if n := recv(t, got, "the decoded job"); n != 7 {
		t.Fatalf("decoded %d", n)
	}
	if _, err := c.Publish(testCtx(t), "typed", "job", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, dead, "the dead letter"); d.Deliveries != 1 || !isPermanent(d.Err) {
		t.Fatalf("dead letter %+v: want a permanent error on the first delivery", d)
	}
}

// Registry and Publish refuse bad input with clear errors; Push refuses
// closures.
func TestBadInputRefused(t *testing.T) {
	reg := NewRegistry()
	nop := func(context.Context, []byte) error { return nil }
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"empty name", reg.Handle("", nop), ErrBadName},
		{"nil handler", reg.Handle("x", nil), ErrNilFunc},
		{"first", reg.Handle("x", nop), nil},
		{"duplicate", reg.Handle("x", nop), ErrDuplicate},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	c := embedded(t, t.TempDir(), false)
	if _, err := c.Publish(testCtx(t), "bad name", "x", nil); !errors.Is(err, ErrBadName) {
		t.Errorf("bad channel name: %v", err)
	}
	if _, err := c.Publish(testCtx(t), "ok", "", nil); !errors.Is(err, ErrBadName) {
		t.Errorf("empty handler name: %v", err)
	}
	if _, err := c.Channel(testCtx(t), "ok", nil, ChannelOptions{}); !errors.Is(err, ErrNilFunc) {
		t.Errorf("nil registry: %v", err)
	}
	ch, err := c.Channel(testCtx(t), "ok", reg, ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := source.SourceOf(ch).Push(smartpool.Func(func(context.Context) {}), smartpool.Order{}); !errors.Is(err, ErrNotData) {
		t.Errorf("Push: %v, want ErrNotData", err)
	}
	p := onePool(t, ch, 1)
	if err := p.Pool().Submit("ok", func(context.Context) {}); !errors.Is(err, ErrNotData) {
		t.Errorf("Pool.Submit: %v, want ErrNotData", err)
	}
}

// Processes that disagree on a stream's settings are refused with both
// values named, and the stream keeps its own.
func TestStreamSettingsConflictRefused(t *testing.T) {
	srv := embedded(t, t.TempDir(), true)
	if _, err := srv.Backlog(testCtx(t), "conf"); err != nil { // creates the streams: Replicas 1, window 2 min
		t.Fatal(err)
	}
	for _, o := range []Options{{Replicas: 3}, {DuplicateWindow: time.Minute}} {
		c, err := Connect(testCtx(t), srv.URL(), o)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Channel(testCtx(t), "conf", NewRegistry(), ChannelOptions{})
		c.Close()
		if !errors.Is(err, ErrStreamConflict) {
			t.Fatalf("%+v over the defaults: %v, want ErrStreamConflict", o, err)
		}
		t.Logf("refused: %v", err)
	}
}
