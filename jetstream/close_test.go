package jetstream

import (
	"context"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
)

// gate is a handler that records its payload and then waits for release,
// yielding its worker meanwhile.
type gate struct {
	ty      *tally
	release chan struct{}
	block   bool // hold the worker instead of yielding it
}

func (g *gate) handler(ctx context.Context, p []byte) error {
	g.ty.add(string(p))
	if g.block {
		<-g.release
		return nil
	}
	smartpool.Yield(ctx, func() { <-g.release })
	return nil
}

// A task that runs (and yields) for several AckWaits keeps its message
// alive: the server does not deliver it again meanwhile.
func TestLongYieldedTaskKeptAlive(t *testing.T) {
	c := embedded(t, t.TempDir(), false)
	g := &gate{ty: newTally(), release: make(chan struct{})}
	reg := NewRegistry()
	if err := reg.Handle("long", g.handler); err != nil {
		t.Fatal(err)
	}
	ch, err := c.Channel(testCtx(t), "long", reg, ChannelOptions{AckWait: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p := onePool(t, ch, 1)
	ids := publishN(t, c, "long", "long", "l", 1)
	g.ty.waitAll(t, ids)
	start := time.Now()
	until(t, "kept alive past four AckWaits", func() bool {
		return ch.Stats().KeptAlive >= 6 && time.Since(start) > 600*time.Millisecond
	})
	close(g.release)
	until(t, "acknowledged", func() bool { return ch.Stats().Acked >= 1 })
	closePool(t, p)
	s := ch.Stats()
	t.Logf("channel %+v", s)
	if s.Fetched != 1 || s.Redelivered != 0 || g.ty.runs[ids[0]] != 1 {
		t.Fatalf("fetched %d, redelivered %d, ran %d: want once each and no redelivery", s.Fetched, s.Redelivered, g.ty.runs[ids[0]])
	}
}

// Close of a dropping channel hands its prefetched messages back (OnEnd
// receives them as HandedBack, the pool counts them as dropped); a second
// pool runs them. Close of a complete-on-close channel runs what it
// prefetched.
func TestCloseHandsBackOrCompletes(t *testing.T) {
	c := embedded(t, t.TempDir(), false)
	g := &gate{ty: newTally(), release: make(chan struct{}), block: true}
	reg := NewRegistry()
	if err := reg.Handle("work", g.handler); err != nil {
		t.Fatal(err)
	}
	ids := publishN(t, c, "work", "work", "c", 30)
	ch, err := c.Channel(testCtx(t), "work", reg, ChannelOptions{Prefetch: 6})
	if err != nil {
		t.Fatal(err)
	}
	var back []HandedBack
	b := &dropBehavior{behavior: behavior{workers: 1, levels: [][]string{{"work"}}, chans: map[string]smartpool.Channel{"work": ch}},
		onEnd: func(t smartpool.Task, why smartpool.Outcome) {
			if why == smartpool.DroppedOnClose {
				back = append(back, t.(HandedBack))
			}
		}}
	p, err := smartpool.New[string](b)
	if err != nil {
		t.Fatal(err)
	}
	g.ty.waitFor(t, "one running", func(r map[string]int) bool { return len(r) == 1 })
	until(t, "the prefetch window full", func() bool { return ch.Stats().Queued == 6 })
	closed := make(chan *smartpool.Report[string])
	go func() { closed <- closePool(t, p) }()
	until(t, "Close handed the queue back", func() bool { return ch.Stats().HandedBack == 6 })
	close(g.release) // the running task completes
	r := <-closed
	cs, _ := r.Channel("work")
	s1 := ch.Stats()
	t.Logf("dropping close: pool %+v; channel %+v; OnEnd got %d", cs, s1, len(back))
	if cs.Dropped != 6 || len(back) != 6 || s1.Acked != 1 || s1.Held != 0 {
		t.Fatalf("dropped %d, OnEnd %d, acked %d, held %d: want 6, 6, 1, 0", cs.Dropped, len(back), s1.Acked, s1.Held)
	}

	// A complete-on-close pool takes the rest; its Close runs what it fetched.
	g2 := &gate{ty: g.ty, release: make(chan struct{}), block: true}
	reg2 := NewRegistry()
	if err := reg2.Handle("work", g2.handler); err != nil {
		t.Fatal(err)
	}
	ch2, err := c.Channel(testCtx(t), "work", reg2, ChannelOptions{Prefetch: 6})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := smartpool.New[string](&behavior{workers: 1, levels: [][]string{{"work"}}, coc: map[string]bool{"work": true},
		chans: map[string]smartpool.Channel{"work": ch2}})
	if err != nil {
		t.Fatal(err)
	}
	g.ty.waitFor(t, "one more running", func(r map[string]int) bool { return len(r) == 2 })
	until(t, "the prefetch window full", func() bool { return ch2.Stats().Queued == 6 })
	go func() { closed <- closePool(t, p2) }()
	until(t, "the channel closed", func() bool { return ch2.ctx.Err() != nil })
	close(g2.release)
	r2 := <-closed
	cs2, _ := r2.Channel("work")
	s2 := ch2.Stats()
	t.Logf("complete-on-close: pool %+v; channel %+v", cs2, s2)
	if cs2.Dropped != 0 || s2.HandedBack > s2.Fetched-cs2.Ran || cs2.Ran < 6 || s2.Held != 0 {
		t.Fatalf("complete-on-close: pool %+v, channel %+v: want the prefetched run, none dropped", cs2, s2)
	}
	ran, _, _ := g.ty.summary(ids)
	if want := 1 + int(cs2.Ran); ran != want || cs2.Ran != 7 {
		t.Fatalf("ran %d distinct messages, want %d", ran, want)
	}
}

type dropBehavior struct {
	behavior
	onEnd func(smartpool.Task, smartpool.Outcome)
}

func (b *dropBehavior) Config() smartpool.Config[string] {
	cfg := b.behavior.Config()
	for _, l := range cfg.Levels {
		for i := range l {
			l[i].OnEnd = b.onEnd
		}
	}
	return cfg
}

// With an in-flight limit, fetched messages take units like any submit:
// the pool never holds more than the limit, and every unit comes back.
func TestLimitUnits(t *testing.T) {
	c := embedded(t, t.TempDir(), false)
	ty := newTally()
	reg := NewRegistry()
	peak := 0
	var pool *smartpool.OwnedPool[string]
	ready := make(chan struct{})
	if err := reg.Handle("work", func(ctx context.Context, p []byte) error {
		<-ready
		peak = max(peak, pool.Pool().Stats().Admitted) // one worker: no race on peak
		return ty.handler(ctx, p)
	}); err != nil {
		t.Fatal(err)
	}
	ch, err := c.Channel(testCtx(t), "limited", reg, ChannelOptions{Prefetch: 10})
	if err != nil {
		t.Fatal(err)
	}
	ids := publishN(t, c, "limited", "work", "u", 50)
	pool, err = smartpool.New[string](&behavior{workers: 1, limit: 3, levels: [][]string{{"limited"}},
		chans: map[string]smartpool.Channel{"limited": ch}})
	if err != nil {
		t.Fatal(err)
	}
	close(ready)
	ty.waitAll(t, ids)
	until(t, "every unit back", func() bool { return pool.Pool().Stats().Admitted == 0 })
	closePool(t, pool)
	t.Logf("peak admitted %d of limit 3; channel %+v", peak, ch.Stats())
	if peak > 3 || peak == 0 {
		t.Fatalf("peak admitted %d, limit 3", peak)
	}
}
