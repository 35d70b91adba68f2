package smartpool

// Levels is a ready-made PoolBehavior for a pool that needs no code of its
// own: its channels, level by level, highest first, each under its key, with
// its close policy and optionally its followup, OnEnd and cap (the package
// doc shows a one-level pool). The pool-wide settings keep their defaults
// unless With sets them, so the pool grows a field at a time:
//
//	owned, err := smartpool.New(smartpool.Levels[string]{
//		{{Key: "jobs", Channel: jobs, CompleteOnClose: true, MaxRunning: 4}},
//	}.With(smartpool.Config[string]{Workers: 8, Limit: 1000, PanicHandler: onPanic}))
//
// New treats it like any other behavior: a key listed twice, a nil channel,
// a bad cap or an unknown followup is an error wrapping ErrConfig. A lookup
// by key scans the list, once per key at New.
type Levels[K comparable] [][]LevelChannel[K]

// LevelChannel is one channel of a Levels behavior.
type LevelChannel[K comparable] struct {
	// Key names the channel: for Pool.Submit, Stats and the Report.
	Key K
	// Channel is the channel, from the channels package or the user's own.
	Channel Channel
	// CompleteOnClose: see ChannelParams.CompleteOnClose.
	CompleteOnClose bool
	// Followup, if not nil, names the channel its yielded tasks re-enter
	// through (nil: itself). Write it Followup: new("urgent").
	Followup *K
	// OnEnd: see ChannelParams.OnEnd.
	OnEnd func(t Task, o Outcome)
	// MaxRunning and MaxInFlight: see ChannelParams; set at most one.
	MaxRunning, MaxInFlight int
	// Rate: see ChannelParams.Rate.
	Rate Rate
}

// Config returns the levels as a Config, with every pool-wide field at its
// default.
func (ls Levels[K]) Config() Config[K] { return Config[K]{Levels: ls.params()} }

// params lists each channel's ChannelParams, level by level.
func (ls Levels[K]) params() [][]ChannelParams[K] {
	levels := make([][]ChannelParams[K], len(ls))
	for l, lv := range ls {
		levels[l] = make([]ChannelParams[K], len(lv))
		for i, c := range lv {
			levels[l][i] = ChannelParams[K]{Key: c.Key, CompleteOnClose: c.CompleteOnClose, OnEnd: c.OnEnd,
				MaxRunning: c.MaxRunning, MaxInFlight: c.MaxInFlight, Rate: c.Rate}
		}
	}
	return levels
}

// With returns a behavior of these levels with the pool-wide settings of
// cfg: Workers, Schedule, Limit, PanicHandler, Logger, TimingEvery,
// IdleTimeout, StallAfter, Spare, Quantum and Observe, each documented on Config, zero meaning its
// default as there. The levels are ls: leave cfg.Levels empty. A channel
// listed there too is not ignored: New refuses it with an error wrapping
// ErrConfig (its key is listed twice, or it has no channel in ls).
func (ls Levels[K]) With(cfg Config[K]) PoolBehavior[K] {
	return levelsWith[K]{ls: ls, cfg: cfg}
}

// levelsWith is Levels.With's behavior.
type levelsWith[K comparable] struct {
	ls  Levels[K]
	cfg Config[K]
}

func (b levelsWith[K]) Config() Config[K] {
	cfg := b.cfg
	cfg.Levels = append(b.ls.params(), b.cfg.Levels...)
	return cfg
}

func (b levelsWith[K]) Channel(k K) Channel { return b.ls.Channel(k) }
func (b levelsWith[K]) Followup(from K) K   { return b.ls.Followup(from) }

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
