package engine

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool/task"
)

// clock reads fake time in a synctest bubble as the engine does: ns since
// an epoch.
type clock struct{ epoch time.Time }

func (c clock) now() int64 { return int64(time.Since(c.epoch)) }

// A full bucket gives its burst at once, then one token per interval; the
// refusal says when the next is due, and that is when it comes.
func TestBucketBurstThenRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clock{time.Now()}
		b := newBucket(10, 3, nil, c.now()) // 100 ms a token
		for i := range 3 {
			if ok, _ := b.take(c.now()); !ok {
				t.Fatalf("take %d of a full burst of 3 refused", i)
			}
		}
		ok, next := b.take(c.now())
		if ok || next != c.now()+int64(100*time.Millisecond) {
			t.Fatalf("fourth take: ok %v next in %v, want refused, next in 100ms", ok, time.Duration(next-c.now()))
		}
		time.Sleep(99 * time.Millisecond)
		if ok, _ := b.take(c.now()); ok {
			t.Fatal("a token 1 ms early")
		}
		time.Sleep(time.Millisecond)
		if ok, _ := b.take(c.now()); !ok {
			t.Fatal("no token when due")
		}
		// Over 10 s of takes as fast as allowed: 100 more, exactly.
		start, n := c.now(), 0
		for c.now()-start <= int64(10*time.Second) {
			if ok, next := b.take(c.now()); ok {
				n++
			} else {
				time.Sleep(time.Duration(next - c.now()))
			}
		}
		if n != 100 {
			t.Fatalf("%d starts in 10 s at 10/s, want 100", n)
		}
		// Quiet for a while: the bucket fills up to its burst, no more.
		time.Sleep(time.Hour)
		if k := b.tokens(c.now()); k != 3 {
			t.Fatalf("tokens after an hour %v, want the burst 3", k)
		}
	})
}

// A refund gives the token back; a rate of 0 never gives one and says so
// (next 0); a new bucket keeps the old one's tokens up to its own burst.
func TestBucketRefundZeroAndCarry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clock{time.Now()}
		b := newBucket(1, 1, nil, c.now())
		if ok, _ := b.take(c.now()); !ok {
			t.Fatal("full bucket refused")
		}
		b.refund()
		if ok, _ := b.take(c.now()); !ok {
			t.Fatal("refunded token not there")
		}
		z := newBucket(0, 5, b, c.now())
		if ok, next := z.take(c.now()); ok || next != 0 {
			t.Fatalf("rate 0: ok %v next %d, want refused for ever", ok, next)
		}
		time.Sleep(time.Hour)
		if k := z.tokens(c.now()); k != 0 {
			t.Fatalf("rate 0 gained %v tokens", k)
		}
		full := newBucket(5, 4, nil, c.now())
		time.Sleep(time.Second)
		half := newBucket(100, 2, full, c.now())
		if k := half.tokens(c.now()); k != 2 {
			t.Fatalf("carried tokens %v, want 2 (4 held, new burst 2)", k)
		}
		if newBucket(math.Inf(1), 0, nil, 0) != nil {
			t.Fatal("an infinite rate must be no bucket")
		}
	})
}

// Concurrent takers never get more than burst + elapsed*rate tokens.
func TestBucketConcurrentTakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := clock{time.Now()}
		b := newBucket(1000, 10, nil, c.now())
		var got atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 200 {
					if ok, _ := b.take(c.now()); ok {
						got.Add(1)
					}
					time.Sleep(time.Millisecond)
				}
			})
		}
		wg.Wait()
		elapsed := time.Duration(c.now())
		if max := int64(10 + elapsed.Seconds()*1000); got.Load() > max {
			t.Fatalf("%d tokens in %v at 1000/s burst 10, at most %d", got.Load(), elapsed, max)
		}
	})
}

func TestCheckRate(t *testing.T) {
	for _, bad := range []struct {
		r float64
		b int
	}{{-1, 1}, {math.NaN(), 1}, {2e9, 1}, {math.Inf(-1), 1}, {1, -1}, {1, MaxRateBurst + 1}, {1e-10, 1}} {
		if err := CheckRate(bad.r, bad.b, "x"); !errors.Is(err, task.ErrBadLimit) {
			t.Errorf("CheckRate(%v, %d) = %v, want ErrBadLimit", bad.r, bad.b, err)
		}
	}
	for _, good := range []struct {
		r float64
		b int
	}{{0, 0}, {0, 5}, {1e9, 1}, {math.Inf(1), 0}, {0.5, 10}} {
		if err := CheckRate(good.r, good.b, "x"); err != nil {
			t.Errorf("CheckRate(%v, %d) = %v", good.r, good.b, err)
		}
	}
}

// A worker that took the last token and polled nothing gives it back; if
// another worker found no token meanwhile and blocked the channel, the
// token given back reopens it at once, not when the next one is due.
func TestRefundReopensBlockedChannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := newEngine([]int{1}, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		e.timing = newTiming(0, 1)
		e.Chans = []chanInfo{{queues: 1}}
		e.rates = newRateTimer(e)
		defer e.rates.close()
		e.stopped.Store(false)
		b := newBucket(10, 1, nil, e.timing.now()) // 100 ms a token
		e.Chans[0].rate.Store(b)
		e.Field.Set(0) // a task queued
		if !e.token(0, b) {
			t.Fatal("a full bucket refused its token")
		}
		if e.token(0, b) {
			t.Fatal("a second token from a bucket of burst 1")
		}
		if !e.Field.Blocked(0) {
			t.Fatal("a take without a token left the channel open")
		}
		e.refund(0, b) // the first taker's poll got nothing
		if e.Field.Blocked(0) {
			t.Fatal("the token given back sits behind the block until the rate timer fires")
		}
		if !e.token(0, b) {
			t.Fatal("the token given back was not there")
		}
	})
}
