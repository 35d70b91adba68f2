package smartpool

import (
	"fmt"
	"math"

	"github.com/smartpool-go/smartpool/internal/engine"
)

// Rate limits how fast a channel's tasks start: PerSecond starts a second on
// average, and up to Burst at once after a quiet spell (a token bucket of
// Burst tokens, refilled at PerSecond; a worker takes a token as it takes a
// task from the channel). It is set by ChannelParams.Rate and Pool.SetRate.
//
// PerSecond must be 0 (no start), positive up to 1e9, or math.Inf(1) (no
// limit); Burst 0 counts as 1 and may be up to MaxRateBurst. A burst of 1
// spaces the starts evenly; a larger one absorbs the lateness of the pool's
// timer, so that a busy channel keeps its rate over time.
//
// Only workers' starts are counted: a yielded task's re-entry is not a new
// start (it takes no token; one that queues while the channel waits for a
// token is polled when the token is due, and leaves it to the next task:
// give a rated channel whose tasks yield an unrated Followup to keep
// re-entries prompt), and, as for Pause, a Group's child run in its
// parent's place, a task a CallerRuns channel runs on its submitter and a
// batch already in a worker's buffer when a rate was first set take none.
// A channel waiting for its next token holds no worker and costs the
// others nothing: its queues leave the workers' search until the token is
// due, as a paused channel's do, and the pool's one timer brings them back.
// Higher levels keep their priority over a rate-limited channel, and lower
// ones run meanwhile. Close and RemoveChannel ignore every rate: a
// complete-on-close channel's queued tasks run at once, and neither ever
// waits for a token.
type Rate struct {
	// PerSecond is the average starts per second.
	PerSecond float64
	// Burst is the most starts at once, from a full bucket; 0 counts as 1.
	Burst int
}

// MaxRateBurst is the largest Rate.Burst.
const MaxRateBurst = engine.MaxRateBurst

// String writes the rate as "10/s burst 5"; "none" for no limit.
func (r Rate) String() string {
	if math.IsInf(r.PerSecond, 1) {
		return "none"
	}
	return fmt.Sprintf("%v/s burst %d", r.PerSecond, max(r.Burst, 1))
}

// SetRate changes the start rate of the channel named key at run time
// (see Rate), whether New gave it one or not. The channel keeps the
// tokens it had (a full bucket if it had no rate), up to the new Burst.
// A PerSecond of 0 starts none of its tasks until SetRate raises it (its
// tasks queue), a pause by rate: unlike ChannelParams.Rate's zero value,
// it does not mean "no limit"; math.Inf(1) lifts the limit. Use Pause and
// Resume to stop a channel for a while and come back to the same rate (a
// pause holds re-entries too); use SetRate(key, Rate{}) when stopping is
// the rate policy itself, such as an upstream quota that ran out. Both
// hold at once: a paused channel keeps its rate, and starts by it after
// Resume.
//
// It returns ErrUnknownKey, ErrClosed once Close or the channel's removal
// started (Close ignores rates from then on), or an error wrapping
// ErrConfig and ErrBadLimit for a PerSecond or Burst out of range. It is
// safe for concurrent use, from a task too, and does not block.
func (p *Pool[K]) SetRate(key K, r Rate) error {
	defer p.e.Unpin(p.e.Pin()) // see "Reshaping", 6 (internal/engine/reshape.go)
	i, ok := p.lookup(key)
	if !ok {
		return engine.UnknownKey(key)
	}
	return p.e.SetRate(i, key, r.PerSecond, r.Burst)
}

// rateSpec checks ChannelParams.Rate and returns it for the engine: the
// zero Rate is none, and so is +Inf.
func rateSpec[K comparable](p ChannelParams[K], what string) (float64, int, error) {
	r := p.Rate
	if r == (Rate{}) || math.IsInf(r.PerSecond, 1) {
		return 0, 0, nil
	}
	if err := engine.CheckRate(r.PerSecond, r.Burst, what); err != nil {
		return 0, 0, err
	}
	if r.PerSecond == 0 {
		return 0, 0, engine.ConfigErr(ErrBadLimit, "%s: Rate.PerSecond = 0 with Burst %d: the zero Rate sets none; to start paused, call Pause or SetRate after New", what, r.Burst)
	}
	return r.PerSecond, r.Burst, nil
}
