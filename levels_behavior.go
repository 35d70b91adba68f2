package smartpool

// Levels is a ready-made PoolBehavior for a pool that needs no code of its
// own: its channels, listed level by level, highest level first, each under
// its key. A one-level pool:
//
//	jobs := channels.NewFIFO()
//	owned, err := smartpool.New(smartpool.Levels[string]{{{Key: "jobs", Channel: jobs, CompleteOnClose: true}}})
//	err = jobs.Submit(func(ctx context.Context) { work() })
//	report, err := owned.Close(ctx) // runs what jobs still holds, then reports
//
// Each LevelChannel also sets its close policy and, optionally, its
// followup. The rest of Config keeps its defaults: GOMAXPROCS workers
// (Pool.SetWorkers changes them), scheduler.HighestFirst, no in-flight
// limit, no caps, no drop callbacks, the default panic handler. A pool that
// needs any of those declares its own PoolBehavior, which is the way to
// build real pools; New treats a Levels value like any other behavior, so a
// key listed twice, a nil channel or a followup that no level lists is an
// error wrapping ErrConfig.
//
// A lookup by key scans the list, which suits the handful of channels a
// pool of this kind has; New makes one lookup per key.
type Levels[K comparable] [][]LevelChannel[K]

// LevelChannel is one channel of a Levels behavior.
type LevelChannel[K comparable] struct {
	// Key names the channel: for Pool.Submit, Stats and the Report.
	Key K
	// Channel is the channel, from the channels package or the user's own.
	Channel Channel
	// CompleteOnClose makes Close run this channel's queued and yielded
	// tasks rather than drop them (see ChannelParams.CompleteOnClose).
	CompleteOnClose bool
	// Followup, if not nil, names the channel through which this channel's
	// tasks re-enter after a Yield (see PoolBehavior.Followup); nil means
	// this channel itself. Write it Followup: new("urgent").
	Followup *K
}

// Config returns the levels as a Config, with every other field at its
// default.
func (ls Levels[K]) Config() Config[K] {
	levels := make([][]ChannelParams[K], len(ls))
	for l, lv := range ls {
		levels[l] = make([]ChannelParams[K], len(lv))
		for i, c := range lv {
			levels[l][i] = ChannelParams[K]{Key: c.Key, CompleteOnClose: c.CompleteOnClose}
		}
	}
	return Config[K]{Levels: levels}
}

// Channel returns the channel listed under key k, or nil if none is (which
// New cannot ask for: it asks only for listed keys).
func (ls Levels[K]) Channel(k K) Channel {
	if c := ls.find(k); c != nil {
		return c.Channel
	}
	return nil
}

// Followup returns the key that the channel listed under from names as its
// followup, or from itself if it names none or is not listed.
func (ls Levels[K]) Followup(from K) K {
	if c := ls.find(from); c != nil && c.Followup != nil {
		return *c.Followup
	}
	return from
}

// find returns the first channel listed under k, or nil.
func (ls Levels[K]) find(k K) *LevelChannel[K] {
	for l := range ls {
		for i := range ls[l] {
			if ls[l][i].Key == k {
				return &ls[l][i]
			}
		}
	}
	return nil
}
