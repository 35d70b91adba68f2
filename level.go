package smartpool

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/smartpool-go/smartpool/internal/avail"
	"github.com/smartpool-go/smartpool/internal/engine"
	"github.com/smartpool-go/smartpool/internal/nilcheck"
	"github.com/smartpool-go/smartpool/scheduler"
	"github.com/smartpool-go/smartpool/source"
)

// layout is a validated configuration: channels in config order (level by
// level), each with its global queue numbers, and the levels' queue counts.
type layout[K comparable] struct {
	keys     []K
	index    map[K]int // key -> channel index
	params   []ChannelParams[K]
	channels []Channel
	sources  []source.Source // channels[i]'s
	level    []int           // channel index -> level
	first    []int           // channel index -> global number of its queue 0
	perLevel []int           // queues per level, spare room included
	// With Config.Spare: spare[l] queues of level l follow its listed
	// channels' (levelFirst[l] is its first global queue); slots is the
	// channel table's size, the listed channels plus one per spare queue.
	spare      []int
	levelFirst []int
	slots      int
}

// buildLayout validates cfg and asks b for every channel. It calls no
// channel's Attach.
func buildLayout[K comparable](cfg *Config[K], b PoolBehavior[K]) (*layout[K], error) {
	levels := max(len(cfg.Levels), len(cfg.Spare))
	if levels == 0 {
		return nil, engine.ConfigErr(engine.ErrNoLevels, "Config.Levels is empty: a pool needs at least one level")
	}
	if levels > scheduler.MaxLevels {
		return nil, engine.ConfigErr(engine.ErrTooManyQueues, "%d levels, at most %d", levels, scheduler.MaxLevels)
	}
	lo := &layout[K]{index: make(map[K]int), perLevel: make([]int, levels), levelFirst: make([]int, levels)}
	if cfg.Spare != nil {
		lo.spare = make([]int, levels)
		copy(lo.spare, cfg.Spare)
	}
	queues := 0
	for l := range levels {
		var lv []ChannelParams[K]
		if l < len(cfg.Levels) {
			lv = cfg.Levels[l]
		}
		lo.levelFirst[l] = queues
		spare := 0
		if lo.spare != nil {
			spare = lo.spare[l]
		}
		switch {
		case spare < 0:
			return nil, engine.ConfigErr(ErrBadLimit, "Spare[%d] = %d: want 0 or more", l, spare)
		case len(lv) == 0 && spare == 0:
			return nil, engine.ConfigErr(engine.ErrEmptyLevel, "level %d has no channels", l)
		}
		for _, p := range lv {
			if _, dup := lo.index[p.Key]; dup {
				return nil, engine.ConfigErr(engine.ErrDuplicateKey, "key %v is listed twice", p.Key)
			}
			ch := b.Channel(p.Key)
			if nilcheck.Nil(ch) {
				return nil, engine.ConfigErr(engine.ErrNilChannel, "Channel(%v) returned nil", p.Key)
			}
			src := source.SourceOf(ch)
			if nilcheck.Nil(src) {
				return nil, engine.ConfigErr(engine.ErrNoSource, "channel %v: a %T not made by its constructor holds no Source (use %s)", p.Key, ch, constructorOf(ch))
			}
			if err := checkCaps(p); err != nil {
				return nil, err
			}
			if _, _, err := rateSpec(p, fmt.Sprintf("channel %v", p.Key)); err != nil {
				return nil, err
			}
			n := src.Queues()
			if n < 1 {
				return nil, engine.ConfigErr(ErrNoQueues, "channel %v has %d queues, at least 1 needed", p.Key, n)
			}
			if queues+n > avail.MaxQueues {
				return nil, engine.ConfigErr(engine.ErrTooManyQueues, "more than %d queues", avail.MaxQueues)
			}
			lo.index[p.Key] = len(lo.keys)
			lo.keys = append(lo.keys, p.Key)
			lo.params = append(lo.params, p)
			lo.channels = append(lo.channels, ch)
			lo.sources = append(lo.sources, src)
			lo.level = append(lo.level, l)
			lo.first = append(lo.first, queues)
			lo.perLevel[l] += n
			queues += n
		}
		if queues+spare > avail.MaxQueues {
			return nil, engine.ConfigErr(engine.ErrTooManyQueues, "more than %d queues", avail.MaxQueues)
		}
		lo.perLevel[l] += spare
		queues += spare
		lo.slots += spare
	}
	lo.slots += len(lo.keys)
	return lo, nil
}

// checkCaps applies the rules of MaxRunning and MaxInFlight.
func checkCaps[K comparable](p ChannelParams[K]) error {
	switch {
	case p.MaxRunning < 0:
		return engine.ConfigErr(ErrBadLimit, "channel %v: MaxRunning = %d: want 0 (no cap) or more", p.Key, p.MaxRunning)
	case p.MaxInFlight < 0:
		return engine.ConfigErr(ErrBadLimit, "channel %v: MaxInFlight = %d: want 0 (no cap) or more", p.Key, p.MaxInFlight)
	case p.MaxRunning > 0 && p.MaxInFlight > 0:
		return engine.ConfigErr(engine.ErrCapBoth, "channel %v sets both MaxRunning (%d) and MaxInFlight (%d): set at most one", p.Key, p.MaxRunning, p.MaxInFlight)
	}
	return nil
}

// constructorOf guesses the constructor of c's type by the Go convention,
// New followed by the type's name: NewFIFO for a *channels.FIFO.
func constructorOf(c Channel) string {
	t := reflect.TypeOf(c)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name, _, _ := strings.Cut(t.Name(), "[") // a generic type's arguments
	return "New" + name
}

// attachOne binds channel i to the pool of b, through its Source's Attach.
// A channel that refuses (already attached to another pool) fails New.
func (lo *layout[K]) attachOne(i int, b engine.Bits) error {
	err := engine.Attach(lo.sources[i], b)
	switch {
	case errors.Is(err, ErrAttached):
		return engine.ConfigErr(err, "channel %v already belongs to a pool", lo.keys[i])
	case err != nil:
		return engine.ConfigErr(fmt.Errorf("%w: %w", ErrAttached, err), "channel %v refused Attach: %v", lo.keys[i], err)
	}
	return nil
}
