package engine

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/smartpool-go/smartpool/task"
)

// # Start rates
//
// A channel with a rate (ChannelParams.Rate, Pool.SetRate) starts at most
// PerSecond of its tasks a second on average, Burst at once after a quiet
// spell: a token bucket, kept as GCRA's theoretical arrival time (bucket.tat,
// one atomic word: a take is a load and a compare-and-swap, nothing refills
// it). The channel's bucket is chanInfo.rate, nil for a channel without a
// rate, so that the worker's search pays one pointer load for the feature.
//
// A worker takes the token when it takes a task: in pollLevel, before it
// reserves a cap slot and polls (a hand-over's search, handOver, is the same
// code). A rated channel is never polled in batches, so no task leaves it
// without a token. A poll that gets nothing, or a yielded task's resumption
// (a re-entry is no new start), gives the token back (Engine.refund). The
// exceptions are those of a pause (pause.go): tasks already in a worker's
// run buffer when SetRate gave the channel its first rate, a Group's child
// its parent runs inline (help.go), a task a channel runs on its submitter
// (Bits.RunHere) and a resumption that takes an idle worker itself
// (yield.go, takeIdle) take no token.
//
// A worker that finds no token blocks the channel's queues in the
// availability bitfield, as a channel at its cap is blocked (limit.go): no
// search, batch poll or hand-over chooses them, idle workers stay asleep,
// and higher and lower levels go on as if the channel had no work. It then
// arms the pool's one rate timer (rateTimer) for the channel's next token
// (chanInfo.due), and goes on with its search: no worker waits for a token.
// The timer's firing unblocks each channel whose token is due, under the
// channel's pause lock (rateOpen): not a paused one (for an uncapped
// channel the block is pause's guard), nor a capped one at its cap. As for
// caps, the block is a hint and the take the guard: an unblock too early
// (a released cap slot, Resume, a stale firing) costs one failed take,
// which blocks again. The hint never sticks wrongly: the blocker blocks,
// then arms the timer (a firing before the block would be lost); a refund
// gives the token back and then, if the channel is blocked, reopens it
// (rateOpen), and the blocker, after it blocked, re-reads the bucket and,
// if it holds a token again, reopens it (a worker that took the last token
// and polled nothing would otherwise leave its channel shut with a token
// until the next one is due); SetRate
// stores the new bucket and then unblocks under the pause lock, and the
// blocker, after it blocked, re-reads the bucket and, if it changed, arms
// the timer for now; Close and a removal stop the rate (the take succeeds
// from stopped or removal on) and unblock the channel (resumeChannel),
// and the blocker, after it blocked, re-reads both and unblocks it
// (rateOpen: a paused one is left to resumeChannel). Of
// each pair, sequential consistency makes one see the other's write
// (internal/model/pause.pml with RATE=1, mutants 7 to 13).
//
// A rate of 0 leaves the bucket without refill: the channel starts nothing
// until SetRate raises it, as a pause; Close and RemoveChannel ignore every
// rate, so a complete-on-close channel's queued tasks are drained at once
// and Close never waits for a token.

// bucket is a channel's token bucket; a new one replaces it at each
// SetRate (chanInfo.rate), so interval, burst and perSec are read-only.
type bucket struct {
	interval int64        // nanoseconds per token; 0: a rate of 0, no refill
	burst    int64        // tokens at most, >= 1
	perSec   float64      // the rate as set, for Stats
	frozen   float64      // a rate of 0: the tokens it keeps for the next rate
	tat      atomic.Int64 // theoretical arrival time: the bucket is full from it on (ns since the epoch); a take adds interval
}

// MaxRateBurst is the largest burst a rate accepts.
const MaxRateBurst = 1 << 20

// CheckRate validates a rate: perSec 0 (no start), positive and finite up
// to 1e9, or +Inf (no limit); burst 0 (taken as 1) up to MaxRateBurst. what
// names the call in the error, which wraps ErrBadLimit.
func CheckRate(perSec float64, burst int, what string) error {
	switch {
	case math.IsNaN(perSec) || perSec < 0 || perSec > 1e9 && !math.IsInf(perSec, 1):
		return ConfigErr(task.ErrBadLimit, "%s: PerSecond = %v: want 0 (no start), a rate up to 1e9, or math.Inf(1) (no limit)", what, perSec)
	case burst < 0 || burst > MaxRateBurst:
		return ConfigErr(task.ErrBadLimit, "%s: Burst = %d: want 0 to %d (0 counts as 1)", what, burst, MaxRateBurst)
	case perSec > 0 && !math.IsInf(perSec, 1) && float64(max(burst, 1))/perSec > 1e9: // burst*interval must fit in int64 ns
		return ConfigErr(task.ErrBadLimit, "%s: PerSecond = %v with Burst = %d: a full bucket would take over 30 years", what, perSec, burst)
	}
	return nil
}

// newBucket returns the bucket of a checked rate, nil for +Inf (no limit),
// holding at now the tokens of old (a full bucket if old is nil), up to
// its burst.
func newBucket(perSec float64, burst int, old *bucket, now int64) *bucket {
	if math.IsInf(perSec, 1) {
		return nil
	}
	b := &bucket{burst: int64(max(burst, 1)), perSec: perSec}
	if perSec > 0 {
		b.interval = max(int64(math.Round(1e9/perSec)), 1)
	}
	k := float64(b.burst)
	if old != nil {
		k = min(old.tokens(now), k)
	}
	if b.interval == 0 {
		b.frozen = k
	} else {
		b.tat.Store(now + int64((float64(b.burst)-k)*float64(b.interval)))
	}
	return b
}

// tokens returns the tokens b holds at now, a fraction included.
func (b *bucket) tokens(now int64) float64 {
	if b.interval == 0 {
		return b.frozen
	}
	k := float64(now-b.tat.Load())/float64(b.interval) + float64(b.burst)
	return max(0, min(k, float64(b.burst)))
}

// take takes a token at now; without one it reports when the next is due
// (0: never, a rate of 0).
func (b *bucket) take(now int64) (ok bool, next int64) {
	if b.interval == 0 {
		return false, 0
	}
	slack := (b.burst - 1) * b.interval
	for {
		tat := b.tat.Load()
		t := max(tat, now)
		if t-now > slack {
			return false, t - slack
		}
		if b.tat.CompareAndSwap(tat, t+b.interval) {
			return true, 0
		}
	}
}

// has reports whether b holds a token at now.
func (b *bucket) has(now int64) bool {
	return b.interval != 0 && b.tat.Load()-now <= (b.burst-1)*b.interval
}

// refund gives back a token take took for a start that did not happen.
func (b *bucket) refund() { b.tat.Add(-b.interval) }

// refund gives back the token of channel ch, whose bucket b the caller
// loaded, that a take took for a start that did not happen. A worker that
// found no token meanwhile blocked the channel until the next one is due;
// the token given back reopens it now (rateOpen), or the channel's queued
// tasks would wait for the rate timer with a token in the bucket.
func (e *Engine) refund(ch int, b *bucket) {
	if b.interval == 0 {
		return
	}
	b.refund()
	if e.Field.Blocked(e.Chans[ch].first) {
		e.rateOpen(ch)
	}
}

// token takes a start token of channel ch, whose bucket b the caller
// loaded, or blocks the channel's queues until the next token and reports
// false. From Close or the channel's removal on, every take succeeds.
func (e *Engine) token(ch int, b *bucket) bool {
	c := &e.Chans[ch]
	if e.stopped.Load() || c.removal.Load() != 0 {
		return true
	}
	now := e.timing.now()
	ok, next := b.take(now)
	if ok {
		return true
	}
	c.throttled.Add(1)
	e.blockQueues(ch)
	switch {
	case e.stopped.Load() || c.removal.Load() != 0: // Close or a removal unblocked it before our block
		e.rateOpen(ch) // under the pause lock: a paused channel is unblocked by its resume (resumeChannel)
	case c.rate.Load() != b: // SetRate unblocked it before our block
		e.rates.arm(e, ch, now)
	case b.has(now): // a refund after our take gave a token back before our block
		e.rateOpen(ch)
	case next > 0:
		e.rates.arm(e, ch, next)
	}
	return false
}

// blockQueues blocks channel ch's queues, without limit.go's re-check of
// the cap: a rate's block, which only the rate timer, SetRate, Close or a
// removal lifts.
func (e *Engine) blockQueues(ch int) {
	c := &e.Chans[ch]
	for q := c.first; q < c.first+c.queues; q++ {
		if e.Field.Block(q) {
			e.wake()
		}
	}
}

// rateOpen unblocks rated channel ch whose token is due, unless it is
// paused (Resume unblocks it) or at its cap (a release does). Under the
// pause lock: an uncapped paused channel's block is the pause's guard.
func (e *Engine) rateOpen(ch int) {
	c := &e.Chans[ch]
	c.pause.mu.Lock()
	defer c.pause.mu.Unlock()
	if c.pause.paused.Load() {
		return
	}
	// Without a rate now too: SetRate lifted it after the blocker loaded
	// the old bucket, and the blocker's arm brings the unblock here.
	if !c.Capped || c.running.Load() < c.maxRunning.Load() {
		e.unblock(ch)
	}
}

// SetRate is Pool.SetRate for channel i, named key, present: perSec and
// burst as CheckRate takes them.
func (e *Engine) SetRate(i int, key any, perSec float64, burst int) error {
	call := fmt.Sprintf("SetRate(%v, %v/s, burst %d)", key, perSec, burst)
	if err := CheckRate(perSec, burst, call); err != nil {
		return err
	}
	c := &e.Chans[i]
	c.pause.mu.Lock()
	defer c.pause.mu.Unlock()
	if e.stopped.Load() { // under mu: Close's resumeAll takes it after stopped
		return poolClosed(call)
	}
	if c.removal.Load() != 0 {
		return fmt.Errorf("smartpool: %s: the channel is being removed: %w", call, task.ErrClosed)
	}
	b := newBucket(perSec, burst, c.rate.Load(), e.timing.now())
	c.rate.Store(b)
	if b != nil && b.interval == 0 {
		e.blockQueues(i) // a rate of 0: no worker need fail a take first
		return nil
	}
	e.gate(i) // reopen it unless paused or at its cap: a take decides
	return nil
}

// initRate gives channel ch the rate of New or AddChannel (perSec 0: none).
func (e *Engine) initRate(ch int, perSec float64, burst int) {
	c := &e.Chans[ch]
	c.due.Store(0)
	c.throttled.Store(0)
	if perSec == 0 {
		c.rate.Store(nil)
		return
	}
	c.rate.Store(newBucket(perSec, burst, nil, e.timing.now()))
}

// RateOf returns channel ch's rate for Stats: per second and burst, and
// whether it has one.
func (e *Engine) rateOf(ch int) (perSec float64, burst int, ok bool) {
	b := e.Chans[ch].rate.Load()
	if b == nil {
		return 0, 0, false
	}
	return b.perSec, int(b.burst), true
}

// rateTimer is a pool's one timer for every rated channel's next token.
// Workers arm it (arm) for a channel they blocked; its firing (fire)
// unblocks the channels whose token is due and re-arms it for the next.
// next is lock-free for the common case of a timer already due sooner.
type rateTimer struct {
	// pool is the engine, weakly: the timer holds rateTimer, and a pool
	// dropped without Close must still be collected.
	pool   weak.Pointer[Engine]
	next   atomic.Int64 // when t fires (ns since the epoch); 0: not armed, or a firing is scanning
	mu     sync.Mutex   // guards t, closed, and next's stores
	t      *time.Timer  // created on first arm
	closed bool         // Close started: never armed again
}

func newRateTimer(e *Engine) *rateTimer { return &rateTimer{pool: weak.Make(e)} }

// arm makes the timer fire by when for channel ch: ch's due is lowered to
// when first, then the timer moved earlier if it is due later. A firing
// clears next before it reads the channels' due, so an arm that reads next
// set is seen by that firing's scan.
func (rt *rateTimer) arm(e *Engine, ch int, when int64) {
	c := &e.Chans[ch]
	for {
		d := c.due.Load()
		if d != 0 && d <= when || c.due.CompareAndSwap(d, when) {
			break
		}
	}
	rt.schedule(e, when)
}

// schedule moves the timer to when, if it is not armed sooner.
func (rt *rateTimer) schedule(e *Engine, when int64) {
	if n := rt.next.Load(); n != 0 && n <= when {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if n := rt.next.Load(); rt.closed || n != 0 && n <= when {
		return
	}
	rt.next.Store(when)
	d := time.Duration(when - e.timing.now())
	if rt.t == nil {
		rt.t = time.AfterFunc(d, rt.fire)
	} else {
		rt.t.Reset(d)
	}
}

// fire runs on the runtime's timer goroutine: it opens every channel whose
// token is due and arms the timer for the soonest of the others.
func (rt *rateTimer) fire() {
	e := rt.pool.Value()
	if e == nil {
		return
	}
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return
	}
	rt.next.Store(0)
	rt.mu.Unlock()
	now := e.timing.now()
	soonest := int64(0)
	for i := range e.Chans {
		c := &e.Chans[i]
		d := c.due.Load()
		switch {
		case d == 0:
		case d <= now:
			if c.due.CompareAndSwap(d, 0) {
				e.rateOpen(i)
			} else {
				soonest = now // lowered meanwhile: look again at once
			}
		case soonest == 0 || d < soonest:
			soonest = d
		}
	}
	if soonest != 0 {
		rt.schedule(e, soonest)
	}
}

// close stops the timer for good: Close lifts every rate. Nil-safe.
func (rt *rateTimer) close() {
	if rt == nil {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.closed = true
	if rt.t != nil {
		rt.t.Stop()
	}
}
