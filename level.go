package smartpool

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/smartpool-go/smartpool/internal/avail"
	"github.com/smartpool-go/smartpool/scheduler"
)

// layout is a validated configuration: channels in config order (level by
// level), each with its global queue numbers, and the levels' queue counts.
type layout[K comparable] struct {
	keys     []K
	index    map[K]int // key -> channel index
	params   []ChannelParams[K]
	channels []Channel
	sources  []Source // channels[i]'s
	level    []int    // channel index -> level
	first    []int    // channel index -> global number of its queue 0
	perLevel []int    // queues per level
}

// buildLayout validates cfg and asks b for every channel. It calls no
// channel's Attach.
func buildLayout[K comparable](cfg *Config[K], b PoolBehavior[K]) (*layout[K], error) {
	if len(cfg.Levels) == 0 {
		return nil, configErr(errNoLevels, "Config.Levels is empty: a pool needs at least one level")
	}
	if len(cfg.Levels) > scheduler.MaxLevels {
		return nil, configErr(errTooManyQueues, "%d levels, at most %d", len(cfg.Levels), scheduler.MaxLevels)
	}
	lo := &layout[K]{index: make(map[K]int), perLevel: make([]int, len(cfg.Levels))}
	queues := 0
	for l, lv := range cfg.Levels {
		if len(lv) == 0 {
			return nil, configErr(errEmptyLevel, "level %d has no channels", l)
		}
		for _, p := range lv {
			if _, dup := lo.index[p.Key]; dup {
				return nil, configErr(errDuplicateKey, "key %v is listed twice", p.Key)
			}
			ch := b.Channel(p.Key)
			if isNil(ch) {
				return nil, configErr(errNilChannel, "Channel(%v) returned nil", p.Key)
			}
			src := SourceOf(ch)
			if isNil(src) {
				return nil, configErr(errNoSource, "channel %v: a %T not made by its constructor holds no Source (use %s)", p.Key, ch, constructorOf(ch))
			}
			switch {
			case p.MaxRunning < 0:
				return nil, configErr(ErrBadLimit, "channel %v: MaxRunning = %d: want 0 (no cap) or more", p.Key, p.MaxRunning)
			case p.MaxInFlight < 0:
				return nil, configErr(ErrBadLimit, "channel %v: MaxInFlight = %d: want 0 (no cap) or more", p.Key, p.MaxInFlight)
			case p.MaxRunning > 0 && p.MaxInFlight > 0:
				return nil, configErr(errCapBoth, "channel %v sets both MaxRunning (%d) and MaxInFlight (%d): set at most one", p.Key, p.MaxRunning, p.MaxInFlight)
			}
			n := src.Queues()
			if n < 1 {
				return nil, configErr(ErrNoQueues, "channel %v has %d queues, at least 1 needed", p.Key, n)
			}
			if queues+n > avail.MaxQueues {
				return nil, configErr(errTooManyQueues, "more than %d queues", avail.MaxQueues)
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
	}
	return lo, nil
}

// isNil reports whether an interface value (a Channel, a Picker) is nil or
// holds a nil pointer, map, slice or func, which a behavior's switch over keys
// returns easily.
func isNil(x any) bool {
	if x == nil {
		return true
	}
	switch v := reflect.ValueOf(x); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
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

// attach binds every channel to e. A channel that refuses (already attached
// to another pool) fails New.
func (lo *layout[K]) attach(e *engine) error {
	for i, src := range lo.sources {
		err := src.Attach(Bits{e: e, base: lo.first[i], n: src.Queues()})
		switch {
		case errors.Is(err, ErrAttached):
			return configErr(err, "channel %v already belongs to a pool", lo.keys[i])
		case err != nil:
			return configErr(fmt.Errorf("%w: %w", ErrAttached, err), "channel %v refused Attach: %v", lo.keys[i], err)
		}
	}
	return nil
}
