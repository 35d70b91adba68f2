package smartpool

import (
	"errors"
	"fmt"
	"reflect"

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
	level    []int // channel index -> level
	first    []int // channel index -> global number of its queue 0
	perLevel []int // queues per level
}

// buildLayout validates cfg and asks b for every channel. It calls no
// channel's Attach.
func buildLayout[K comparable](cfg *Config[K], b PoolBehavior[K]) (*layout[K], error) {
	if len(cfg.Levels) == 0 {
		return nil, configErr(ErrNoLevels, "Config.Levels is empty")
	}
	if len(cfg.Levels) > scheduler.MaxLevels {
		return nil, configErr(ErrTooManyQueues, "%d levels, at most %d", len(cfg.Levels), scheduler.MaxLevels)
	}
	lo := &layout[K]{index: make(map[K]int), perLevel: make([]int, len(cfg.Levels))}
	queues := 0
	for l, lv := range cfg.Levels {
		if len(lv) == 0 {
			return nil, configErr(ErrEmptyLevel, "level %d", l)
		}
		for _, p := range lv {
			if _, dup := lo.index[p.Key]; dup {
				return nil, configErr(ErrDuplicateKey, "key %v", p.Key)
			}
			ch := b.Channel(p.Key)
			if isNil(ch) {
				return nil, configErr(ErrNilChannel, "key %v", p.Key)
			}
			if p.MaxRunning < 0 || p.MaxInFlight < 0 || p.MaxRunning > 0 && p.MaxInFlight > 0 {
				return nil, configErr(ErrBadLimit, "%v: MaxRunning %d, MaxInFlight %d: each at least 0, at most one set", p.Key, p.MaxRunning, p.MaxInFlight)
			}
			n := ch.Queues()
			if n < 1 {
				return nil, configErr(ErrNoQueues, "key %v has %d queues", p.Key, n)
			}
			if queues+n > avail.MaxQueues {
				return nil, configErr(ErrTooManyQueues, "more than %d queues", avail.MaxQueues)
			}
			lo.index[p.Key] = len(lo.keys)
			lo.keys = append(lo.keys, p.Key)
			lo.params = append(lo.params, p)
			lo.channels = append(lo.channels, ch)
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

// attach binds every channel to e. A channel that refuses (already attached
// to another pool) fails New.
func (lo *layout[K]) attach(e *engine) error {
	for i, ch := range lo.channels {
		err := ch.Attach(Bits{e: e, base: lo.first[i], n: ch.Queues()})
		if err != nil {
			if !errors.Is(err, ErrAttached) {
				err = fmt.Errorf("%w: %w", ErrAttached, err)
			}
			return configErr(err, "key %v", lo.keys[i])
		}
	}
	return nil
}
