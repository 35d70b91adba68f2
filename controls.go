package smartpool

import "github.com/smartpool-go/smartpool/internal/engine"

// SetLimit changes the pool's in-flight limit (Config.Limit) at run time.
// A raised limit admits waiting submitters at once; a lowered one revokes
// nothing: admissions stop until enough admitted tasks finish. A limit of 0
// admits nothing until raised: Submit returns ErrFull and a submit with WithContext
// waits, while the tasks admitted already run. That is errgroup's
// SetLimit(0) (no new goroutine starts); Config.Limit 0 keeps its meaning
// of no limit, as pond's maximum concurrency 0 does. It returns an error
// wrapping ErrConfig for a pool created without a limit (such a pool keeps
// no count, so that it pays nothing for the feature), or wrapping ErrConfig
// and ErrBadLimit for n < 0, and ErrClosed once Close started.
func (p *Pool[K]) SetLimit(n int) error { return p.e.SetLimit(n) }

// SetCap changes the MaxRunning or MaxInFlight cap of the channel named key
// at run time, effective for the next task taken from it (tasks already
// holding a slot keep it, so a lowered cap takes effect as they finish). A
// cap of 0 starts none of the channel's tasks until SetCap raises it, as
// Pause would (its tasks queue); unlike New's MaxRunning 0, it does not mean
// "no cap". Close raises a cap of 0 back to the cap of New, so that the
// channel drains or drops as any other. A paused channel takes the new cap
// when resumed. It returns ErrUnknownKey, ErrClosed once Close started, or
// an error wrapping ErrConfig for a channel created without a cap (uncapped
// channels keep no count, so that they pay nothing for the feature) or
// wrapping ErrConfig and ErrBadLimit for n < 0.
func (p *Pool[K]) SetCap(key K, n int) error {
	defer p.e.Unpin(p.e.Pin()) // see "Reshaping", 6 (internal/engine/reshape.go)
	i, ok := p.lookup(key)
	if !ok {
		return engine.UnknownKey(key)
	}
	return p.e.SetCap(i, key, n)
}

// Pause stops the workers taking tasks of the channel named key until
// Resume. The channel keeps accepting tasks: they queue (Stats shows them,
// and the channel as Paused) and run after Resume; so do re-entries through
// it. Only a task a worker was already taking as Pause ran, a batch already
// in a worker's buffer, a task a CallerRuns channel runs on its submitter
// and a Group's child run in its parent's place still run. Close and
// RemoveChannel resume paused channels and never wait for a Resume.
// Errors: ErrUnknownKey, and ErrClosed once Close or the channel's removal
// started. Pausing a paused channel does nothing.
func (p *Pool[K]) Pause(key K) error { return p.setPaused(key, true, "Pause") }

// Resume lets the workers take tasks of the channel named key again, after
// Pause, and wakes idle workers for its queued tasks. A cap set to 0 by
// SetCap stays 0: it is raised by SetCap only. Resuming a channel that is
// not paused does nothing. It returns ErrUnknownKey for a key the
// configuration does not list, and an error wrapping ErrClosed once Close
// started (Close resumed every channel already).
func (p *Pool[K]) Resume(key K) error { return p.setPaused(key, false, "Resume") }

func (p *Pool[K]) setPaused(key K, paused bool, call string) error {
	defer p.e.Unpin(p.e.Pin()) // see "Reshaping", 6 (internal/engine/reshape.go)
	i, ok := p.lookup(key)
	if !ok {
		return engine.UnknownKey(key)
	}
	return p.e.SetPaused(i, key, paused, call)
}

// SetWorkers changes the number of workers at run time. When n is higher,
// more workers may run at once (each starts when work needs it); when n is
// lower, the surplus workers take no new task and stop after their current
// one and the few they took with it in a batch (a task that yielded finishes on whichever
// worker picks it up), unless Close has started by then: they then help
// finish the drain. n must be between 1 and MaxWorkers: it returns an error
// wrapping ErrConfig otherwise, and ErrClosed once Close started.
func (p *Pool[K]) SetWorkers(n int) error { return p.e.SetWorkers(n) }
