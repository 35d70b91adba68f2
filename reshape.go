package smartpool

import (
	"context"
	"fmt"

	"github.com/smartpool-go/smartpool/internal/engine"
	"github.com/smartpool-go/smartpool/internal/nilcheck"
	"github.com/smartpool-go/smartpool/source"
)

// RemovePolicy says what RemoveChannel does with the tasks a channel holds.
type RemovePolicy int

const (
	// Drain stops admission to the channel, runs every task it holds and
	// waits for its running and yielded tasks to end.
	Drain RemovePolicy = iota + 1
	// Drop stops admission to the channel and drops every task it holds
	// that has not started, as Close does for a channel that does not
	// complete on close; it waits for its running and yielded tasks.
	Drop
)

func (p RemovePolicy) String() string {
	switch p {
	case Drain:
		return "Drain"
	case Drop:
		return "Drop"
	}
	return fmt.Sprintf("RemovePolicy(%d)", int(p))
}

// AddChannel adds channel c to level level of a running pool built with
// Config.Spare, under params (as in Config.Levels); its yielded tasks
// re-enter through the channel named followup (params.Key: itself), which
// must be present and not being removed. It claims c.Queues() contiguous
// queues of the level's spare room (room RemoveChannel freed included),
// attaches c and publishes its key: from its return, c is served. It is
// safe for concurrent use, from a task too.
//
// Errors wrap ErrConfig and name the rule (no Spare, a level out of range
// or without room, a nil channel or one without queues, a bad cap, a key in
// use, a bad followup, a channel that belongs to a pool: ErrAttached), or
// ErrClosed once Close started. On error nothing changed.
func (p *Pool[K]) AddChannel(level int, params ChannelParams[K], c Channel, followup K) error {
	key := params.Key
	switch {
	case !p.e.Reshapes():
		return engine.ConfigErr(engine.ErrNotConfigured, "AddChannel(%v): the pool was built without Config.Spare", key)
	case nilcheck.Nil(c):
		return engine.ConfigErr(engine.ErrNilChannel, "AddChannel(%v): the channel is nil", key)
	case params.MaxInFlight > 0 && followup == key:
		return engine.ConfigErr(engine.ErrFollowup, "AddChannel(%v): a channel with a MaxInFlight cap cannot be its own followup", key)
	}
	if err := checkCaps(params); err != nil {
		return err
	}
	perSec, burst, err := rateSpec(params, fmt.Sprintf("AddChannel(%v)", key))
	if err != nil {
		return err
	}
	src := source.SourceOf(c)
	if nilcheck.Nil(src) {
		return engine.ConfigErr(engine.ErrNoSource, "AddChannel(%v): a %T not made by its constructor holds no Source (use %s)", key, c, constructorOf(c))
	}
	cs := engine.ChanSpec{Src: src, User: c, Level: level, Name: key, Coc: params.CompleteOnClose, OnEnd: params.OnEnd,
		MaxRunning: params.MaxRunning, MaxInFlight: params.MaxInFlight, RatePerSec: perSec, RateBurst: burst}
	return p.e.AddChannel(&cs, engine.Adding{
		// Under the reshape lock: the key's rules, against the index
		// published now.
		Check: func() (int, any, error) {
			index := *p.index.Load()
			if _, dup := index[key]; dup {
				return 0, nil, engine.ConfigErr(engine.ErrDuplicateKey, "AddChannel(%v): the key is in use", key)
			}
			if followup == key {
				return -1, nil, nil
			}
			j, ok := index[followup]
			if !ok {
				return 0, nil, engine.ConfigErr(engine.ErrFollowup, "AddChannel(%v): followup %v: no channel has that key", key, followup)
			}
			return j, followup, nil
		},
		Claim:  func(i int) { p.keys[i] = key },
		Attach: func(b engine.Bits) error { return engine.Attach(src, b) },
		// Under the reshape lock, once c attached: another AddChannel may
		// have published meanwhile.
		Publish: func(i int) {
			index := *p.index.Load()
			m := make(map[K]int, len(index)+1)
			for k, v := range index {
				m[k] = v
			}
			m[key] = i
			p.index.Store(&m)
		},
	})
}

// RemoveChannel removes the channel named key from a running pool built
// with Config.Spare, whether New listed it or AddChannel added it, and
// returns its final stats. From the call on, submits to the channel return
// ErrClosed. policy Drain runs what the channel holds; Drop drops what has
// not started, as Close drops a channel's queued tasks (DroppedOnClose).
// Either way it waits for the channel's running and yielded tasks, and a
// paused channel is resumed first, as Close does. The removed channel is
// closed for good; its room is reused by AddChannel, under any key.
//
// The rules of the wait:
//   - Tasks of other channels do not hold it back. It waits for the by-key
//     calls in progress (one may have looked the key up before), none of
//     which holds the key while it waits, except a task that a full
//     CallerRuns Bounded runs on the submitter of a by-key call.
//   - If ctx ends first, it returns ctx.Err() and the removal carries on; a
//     later call for the key waits for it again (with Drop, turning a Drain
//     into a Drop). Concurrent calls share one removal and its stats.
//   - Close during a removal closes the channel as any other; no task is
//     reported twice.
//   - Called from a task, it waits inside Yield, and refuses to remove the
//     channel of the calling task, or of a task the goroutine runs in a
//     task's place or an OnEnd or panic handler it runs, which it would
//     wait for.
//
// Errors: ErrUnknownKey (wrapped, naming the key); ErrConfig for a pool
// without Spare, a bad policy, or a channel another present channel names
// as its followup (remove that one first); ErrClosed once Close started,
// unless a removal of the channel was in progress. Stats.Removed sums the
// final counts of every channel removed, so the totals still add up.
func (p *Pool[K]) RemoveChannel(ctx context.Context, key K, policy RemovePolicy) (ChannelStats[K], error) {
	if ctx == nil {
		ctx = context.Background()
	}
	switch {
	case !p.e.Reshapes():
		return ChannelStats[K]{}, engine.ConfigErr(engine.ErrNotConfigured, "RemoveChannel(%v): the pool was built without Config.Spare", key)
	case policy != Drain && policy != Drop:
		return ChannelStats[K]{}, engine.ConfigErr(engine.ErrRemove, "RemoveChannel(%v): policy %v: want Drain or Drop", key, policy)
	}
	c, err := p.e.RemoveChannel(ctx, key, policy == Drop, engine.Removing{
		Lookup: func() (int, bool) { return p.lookup(key) },
		Unpublish: func() {
			old := *p.index.Load()
			m := make(map[K]int, len(old))
			for k, v := range old {
				if k != key {
					m[k] = v
				}
			}
			p.index.Store(&m)
		},
	})
	if err != nil {
		return ChannelStats[K]{}, err
	}
	return channelStats(key, c), nil
}
