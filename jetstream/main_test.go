package jetstream

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/smartpool-go/smartpool"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// bound is the longest any test waits for one event; generous for -race on
// two shared cores.
const bound = 30 * time.Second

// fastAck is the AckWait of the tests that wait for a redelivery.
const fastAck = 400 * time.Millisecond

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	return ctx
}

// embedded starts an embedded server on dir (a loopback listener if listen
// is set) and closes it when the test ends.
func embedded(t *testing.T, dir string, listen bool) *Client {
	t.Helper()
	o := EmbeddedOptions{Dir: dir}
	if listen {
		o.Listen = "127.0.0.1:0"
	}
	c, err := Embedded(testCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// behavior is a pool of the given workers over channels listed level by
// level, all dropping on close unless coc names them.
type behavior struct {
	workers int
	limit   int
	levels  [][]string
	coc     map[string]bool
	chans   map[string]smartpool.Channel
}

func (b *behavior) Config() smartpool.Config[string] {
	cfg := smartpool.Config[string]{Workers: b.workers, Limit: b.limit}
	for _, l := range b.levels {
		var ps []smartpool.ChannelParams[string]
		for _, k := range l {
			ps = append(ps, smartpool.ChannelParams[string]{Key: k, CompleteOnClose: b.coc[k]})
		}
		cfg.Levels = append(cfg.Levels, ps)
	}
	return cfg
}
func (b *behavior) Channel(k string) smartpool.Channel { return b.chans[k] }
func (b *behavior) Followup(k string) string           { return k }

// onePool runs ch alone in a pool of workers; closed (dropping) at cleanup
// unless the test closes it first.
func onePool(t *testing.T, ch *Channel, workers int) *smartpool.OwnedPool[string] {
	t.Helper()
	p, err := smartpool.New[string](&behavior{workers: workers, levels: [][]string{{ch.Name()}},
		chans: map[string]smartpool.Channel{ch.Name(): ch}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closePool(t, p) })
	return p
}

func closePool(t *testing.T, p *smartpool.OwnedPool[string]) *smartpool.Report[string] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	r, err := p.Close(ctx)
	if err != nil {
		t.Errorf("Close: %v", err)
	}
	return r
}

// tally records the runs of messages named by their payload and lets a test
// wait until a set of them has run.
type tally struct {
	mu      sync.Mutex
	runs    map[string]int
	changed chan struct{} // closed and replaced on every run
}

func newTally() *tally { return &tally{runs: map[string]int{}, changed: make(chan struct{})} }

func (ty *tally) add(id string) {
	ty.mu.Lock()
	ty.runs[id]++
	close(ty.changed)
	ty.changed = make(chan struct{})
	ty.mu.Unlock()
}

// handler records its payload and returns nil.
func (ty *tally) handler(_ context.Context, payload []byte) error {
	ty.add(string(payload))
	return nil
}

// waitFor waits until cond (called with the runs, under the lock) holds.
func (ty *tally) waitFor(t *testing.T, what string, cond func(runs map[string]int) bool) {
	t.Helper()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		ty.mu.Lock()
		ok, ch := cond(ty.runs), ty.changed
		ty.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("not within %v: %s", bound, what)
		}
	}
}

// waitAll waits until every id in ids ran at least once.
func (ty *tally) waitAll(t *testing.T, ids []string) {
	t.Helper()
	ty.waitFor(t, fmt.Sprintf("all %d messages ran", len(ids)), func(runs map[string]int) bool {
		for _, id := range ids {
			if runs[id] == 0 {
				return false
			}
		}
		return true
	})
}

// summary counts ids that ran, ran more than once, and never ran.
func (ty *tally) summary(ids []string) (ran, twice, lost int) {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	for _, id := range ids {
		switch n := ty.runs[id]; {
		case n == 0:
			lost++
		case n > 1:
			twice++
			ran++
		default:
			ran++
		}
	}
	return
}

// publishN publishes n messages for handler, payloads prefix-0 .. prefix-(n-1),
// each with its payload as message ID.
func publishN(t *testing.T, c *Client, channel, handler, prefix string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
		if _, err := c.Publish(testCtx(t), channel, handler, []byte(ids[i]), WithMsgID(ids[i])); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// until polls cond, a condition on counters that has no event to wait on,
// every few milliseconds for at most bound.
func until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", bound, what)
		}
		<-tick.C
	}
}

// recv receives one value from c within bound.
func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(bound):
		t.Fatalf("not within %v: %s", bound, what)
		panic("unreachable")
	}
}
