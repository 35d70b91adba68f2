// FuzzConfig: configurations decoded from bytes, checked against New's
// rules and the scheduler's.
package smartpool_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/scheduler"
)

// fzConfig is a decoded configuration and the rules it breaks, by the
// oracle's reading of New's documentation.
type fzConfig struct {
	b      *behavior
	keys   []string
	broken []error
	resize int // a SetWorkers argument to try after New; fzNoResize: none
}

const fzNoResize = math.MinInt

var (
	fzSlices  = []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, 0, -time.Millisecond, scheduler.MaxSlice, scheduler.MaxSlice + 1}
	fzWeights = []int{1, 2, 3, 0, -1, scheduler.MaxWeight, scheduler.MaxWeight + 1}
	// Trailing bytes: Config.Limit, then a SetWorkers argument.
	fzConfigLimits = [8]int{0, 0, 1, 2, 3, -1, 6, 0}
	fzResizes      = [8]int{fzNoResize, 1, 2, 3, 0, -1, smartpool.MaxWorkers + 1, fzNoResize}
)

// fzDecodeConfig reads: levels (0-5), workers (-2..4), scheduler (nil,
// HighestFirst, RoundRobin, Weighted; the last two with a count byte that
// may be wrong and one byte per slice or weight), then per level a channel
// count (0-4) and per channel three bytes: kind, key, followup; then
// Config.Limit (fzConfigLimits) and a SetWorkers argument (fzResizes), both
// absent (no limit, no resize) in inputs that end before them.
func fzDecodeConfig(data []byte) *fzConfig {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	cfg := &fzConfig{b: &behavior{}}
	b := cfg.b
	broken := map[error]bool{}
	nLevels := int(next() % 6)
	b.workers = int(next()%7) - 2
	if b.workers < 0 {
		broken[smartpool.RuleWorkers] = true
	}
	if nLevels == 0 {
		broken[smartpool.RuleNoLevels] = true
	}
	switch kind := next() % 4; kind {
	case 1:
		b.sched = scheduler.HighestFirst()
	case 2, 3:
		rr := kind == 2
		n := max(nLevels+[]int{0, 0, -1, 1, 0, 0, 0, 0}[next()%8], 0) // mostly right
		bad := n != nLevels
		if rr {
			var s []time.Duration
			for range n {
				d := fzSlices[int(next())%len(fzSlices)]
				bad = bad || d <= 0 || d > scheduler.MaxSlice
				s = append(s, d)
			}
			b.sched = scheduler.RoundRobin(s...)
		} else {
			var w []int
			for range n {
				x := fzWeights[int(next())%len(fzWeights)]
				bad = bad || x <= 0 || x > scheduler.MaxWeight
				w = append(w, x)
			}
			b.sched = scheduler.Weighted(w...)
		}
		if bad {
			broken[scheduler.ErrBadPolicy] = true
		}
	}
	var follows []byte
	var objs []smartpool.Channel
	for range nLevels {
		n := []int{0, 1, 2, 3, 4, 1, 2, 3}[next()%8] // empty one time in eight
		if n == 0 {
			broken[smartpool.RuleEmptyLevel] = true
		}
		var lv []ch
		for range n {
			kb, keyb, fb := next(), next(), next()
			c := ch{coc: kb&0x80 != 0, key: fmt.Sprintf("c%d", len(cfg.keys))}
			switch {
			case keyb%8 == 7 && len(cfg.keys) > 0:
				c.key = cfg.keys[int(keyb>>3)%len(cfg.keys)] // a forced duplicate
				broken[smartpool.RuleDuplicateKey] = true
			case keyb%8 == 6 && len(objs) > 0:
				c.c = objs[int(keyb>>3)%len(objs)] // one channel under two keys
				broken[smartpool.ErrAttached] = true
			}
			if c.c == nil {
				switch kb & 7 {
				case 0:
					c.c = channels.NewFIFO()
				case 5:
					// A Keyed with limit (kb>>3)%4; 0: the zero Keyed, which
					// holds no Source (not made by NewKeyed).
					if n := int(kb>>3) % 4; n > 0 {
						k, err := channels.NewKeyed[int](n)
						if err != nil {
							panic(err) // n >= 1
						}
						c.c = k
					} else {
						c.c = new(channels.Keyed[int])
						broken[smartpool.RuleNoSource] = true
					}
				case 1:
					c.c = channels.NewDeadline()
				case 2, 6:
					c.c = channels.NewPriority()
				case 3, 4:
					shards := int(kb>>3) % 4
					switch (kb >> 5) % 3 {
					case 0:
						c.c = channels.NewMulti(shards, channels.NewFIFO)
					case 1:
						c.c = channels.NewMulti(shards, func() *channels.Deadline { return channels.NewDeadline() })
					default:
						c.c = channels.NewMulti(shards, channels.NewPriority)
					}
					if shards == 0 {
						broken[smartpool.ErrNoQueues] = true
					}
				default:
					c.c = nilFIFO
					broken[smartpool.RuleNilChannel] = true
				}
				if c.c != nilFIFO {
					objs = append(objs, c.c)
				}
			}
			cfg.keys = append(cfg.keys, c.key)
			follows = append(follows, fb)
			lv = append(lv, c)
		}
		b.levels = append(b.levels, lv)
	}
	// Followups: mostly itself, else another channel's key or a key no
	// level lists.
	i := 0
	for _, lv := range b.levels {
		for j := range lv {
			switch fb := follows[i]; fb % 8 {
			case 4, 5, 6:
				lv[j].followup = cfg.keys[int(fb>>3)%len(cfg.keys)]
			case 7:
				lv[j].followup = "nope"
			}
			i++
		}
	}
	if !broken[smartpool.RuleDuplicateKey] { // with duplicates, Followup's answer names an ambiguous channel
		for _, lv := range b.levels {
			for _, c := range lv {
				if c.followup == "" {
					continue
				}
				to := b.find(c.followup)
				if to == nil || c.coc && !to.coc {
					broken[smartpool.RuleFollowup] = true
				}
			}
		}
	}
	b.limit = fzConfigLimits[next()%8]
	if b.limit < 0 {
		broken[smartpool.ErrBadLimit] = true
	}
	cfg.resize = fzResizes[next()%8]
	for err := range broken {
		cfg.broken = append(cfg.broken, err)
	}
	return cfg
}

// fzConfigSeed builds FuzzConfig inputs: a header and then, per level, the
// channels as (kind, key, followup) triples.
func fzConfigSeed(levels, workers, sched byte, schedBytes []byte, chans ...[][3]byte) []byte {
	s := append([]byte{levels, workers, sched}, schedBytes...)
	for _, lv := range chans {
		s = append(s, byte(len(lv)))
		for _, c := range lv {
			s = append(s, c[:]...)
		}
	}
	return s
}

// H2 FuzzConfig: New either returns a pool that serves one task per channel
// (each yields once, so followups are exercised) and closes cleanly, or an
// error wrapping ErrConfig and one of the rules the config breaks; it never
// panics and never leaves a goroutine behind.
func FuzzConfig(f *testing.F) {
	const (
		fifoK, sdfK, prioK = 0, 1, 2
		coc                = 0x80
		nilK               = 7
		dupKey             = 7 // duplicates the first key
		reuse              = 6 // reuses the first channel
		followSelf         = 0
		followNope         = 7
	)
	multi := func(shards, kind byte) byte { return 3 | shards<<3 | kind<<5 }
	keyedK := func(limit byte) byte { return 5 | limit<<3 }
	// tail appends the trailing bytes: indexes into fzConfigLimits and
	// fzResizes.
	tail := func(s []byte, limit, resize byte) []byte { return append(s, limit, resize) }
	follow := func(i byte) byte { return 4 | i<<3 }
	w := func(n int) byte { return byte(n + 2) } // workers byte
	seeds := [][]byte{
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{fifoK, 0, followSelf}}),
		fzConfigSeed(0, w(1), 0, nil),
		fzConfigSeed(2, w(2), 1, nil, [][3]byte{{fifoK, 0, 0}}, nil),
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{fifoK, 0, 0}, {sdfK, dupKey, 0}}),
		fzConfigSeed(1, w(-1), 0, nil, [][3]byte{{fifoK, 0, 0}}),
		fzConfigSeed(1, w(-2), 0, nil, [][3]byte{{fifoK, 0, 0}}),
		fzConfigSeed(1, w(0), 0, nil, [][3]byte{{prioK | coc, 0, 0}, {fifoK | coc, 0, follow(0)}}),
		// RoundRobin: a count byte (2: one too few; 3: one too many; else
		// one per level), then a byte per slice: valid ...
		fzConfigSeed(2, w(2), 2, []byte{0, 2, 1}, [][3]byte{{fifoK, 0, follow(1)}}, [][3]byte{{sdfK, 0, 0}}),
		// ... a wrong count, a zero slice, a slice above MaxSlice.
		fzConfigSeed(2, w(1), 2, []byte{2, 2}, [][3]byte{{fifoK, 0, 0}}, [][3]byte{{fifoK, 0, 0}}),
		fzConfigSeed(1, w(1), 2, []byte{0, 3}, [][3]byte{{fifoK, 0, 0}}),
		fzConfigSeed(1, w(1), 2, []byte{0, 6}, [][3]byte{{fifoK, 0, 0}}),
		// Weighted: valid, one too many, zero and negative weights.
		fzConfigSeed(3, w(4), 3, []byte{1, 0, 1, 5}, [][3]byte{{fifoK, 0, 0}}, [][3]byte{{prioK, 0, follow(0)}}, [][3]byte{{multi(2, 0), 0, 0}}),
		fzConfigSeed(2, w(1), 3, []byte{3, 0, 0, 0}, [][3]byte{{fifoK, 0, 0}}, [][3]byte{{fifoK, 0, 0}}),
		fzConfigSeed(2, w(1), 3, []byte{1, 3, 4}, [][3]byte{{fifoK, 0, 0}}, [][3]byte{{fifoK, 0, 0}}),
		// Followups: unknown key; COC into DROP; DROP into COC (valid).
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{fifoK, 0, followNope}}),
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{fifoK | coc, 0, follow(1)}, {fifoK, 0, 0}}),
		fzConfigSeed(2, w(2), 0, nil, [][3]byte{{fifoK | coc, 0, 0}}, [][3]byte{{sdfK, 0, follow(0)}}),
		// Multi of zero shards; a nil channel; one channel under two keys.
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{multi(0, 1), 0, 0}}),
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{nilK, 0, 0}}),
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{fifoK, 0, 0}, {fifoK, reuse, 0}}),
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{multi(2, 2), 0, 0}, {fifoK, reuse, 0}}),
		// Five full levels of mixed kinds, with upward followups.
		fzConfigSeed(5, w(3), 1, nil,
			[][3]byte{{fifoK | coc, 0, 0}, {sdfK, 0, 0}, {prioK | coc, 0, 0}, {multi(3, 0), 0, 0}},
			[][3]byte{{multi(1, 1) | coc, 0, follow(0)}, {fifoK, 0, follow(1)}, {sdfK | coc, 0, follow(2)}, {prioK, 0, 0}},
			[][3]byte{{multi(2, 2), 0, follow(3)}, {fifoK | coc, 0, follow(4)}, {sdfK, 0, 0}, {prioK, 0, 0}},
			[][3]byte{{fifoK, 0, 0}, {fifoK, 0, follow(7)}, {fifoK, 0, 0}, {fifoK, 0, 0}},
			[][3]byte{{fifoK | coc, 0, follow(2)}, {prioK | coc, 0, follow(0)}, {sdfK, 0, 0}, {multi(3, 1), 0, follow(5)}},
		),
		// Keyed channels: as a followup target of a lower level, with an
		// in-flight limit of 1 (every submit waits for the last task); the
		// zero Keyed (no queues); a Keyed under two keys.
		tail(fzConfigSeed(2, w(2), 0, nil, [][3]byte{{keyedK(1) | coc, 0, 0}}, [][3]byte{{fifoK, 0, follow(0)}, {keyedK(2), 0, follow(0)}}), 2, 0),
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{keyedK(0), 0, 0}}),
		fzConfigSeed(1, w(1), 0, nil, [][3]byte{{keyedK(3), 0, 0}, {fifoK, reuse, 0}}),
		// In-flight limits: bad (-1), small with many channels, none.
		tail(fzConfigSeed(1, w(1), 0, nil, [][3]byte{{fifoK, 0, 0}}), 5, 0),
		tail(fzConfigSeed(2, w(3), 1, nil, [][3]byte{{fifoK | coc, 0, 0}, {sdfK, 0, 0}, {keyedK(1), 0, 0}}, [][3]byte{{multi(2, 0), 0, follow(0)}, {prioK, 0, 0}}), 3, 0),
		// SetWorkers after New: a grow, bad values (0, -1, above MaxWorkers).
		tail(fzConfigSeed(1, w(1), 0, nil, [][3]byte{{fifoK, 0, 0}, {keyedK(1), 0, 0}}), 4, 3),
		tail(fzConfigSeed(1, w(2), 0, nil, [][3]byte{{fifoK, 0, 0}}), 0, 4),
		tail(fzConfigSeed(1, w(2), 0, nil, [][3]byte{{fifoK, 0, 0}}), 0, 5),
		tail(fzConfigSeed(1, w(0), 0, nil, [][3]byte{{fifoK, 0, 0}}), 6, 6),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		baseline := runtime.NumGoroutine()
		cfg := fzDecodeConfig(data)
		noLeak := func() {
			fzWait(t, "goroutines back to the baseline", func() error {
				if n := runtime.NumGoroutine(); n > baseline {
					return fmt.Errorf("%d goroutines, %d before New", n, baseline)
				}
				return nil
			})
		}
		o, err := smartpool.New[string](cfg.b)
		if err != nil {
			if o != nil {
				t.Fatalf("New returned a pool and %v", err)
			}
			if !errors.Is(err, smartpool.ErrConfig) {
				t.Fatalf("New: %v does not wrap ErrConfig", err)
			}
			if msg := err.Error(); strings.Count(msg, "smartpool:") != 1 {
				t.Fatalf("New: %q repeats its prefix", msg)
			}
			if !slices.ContainsFunc(cfg.broken, func(rule error) bool { return errors.Is(err, rule) }) {
				t.Fatalf("New: %v; the config breaks %v", err, cfg.broken)
			}
			noLeak()
			return
		}
		if len(cfg.broken) > 0 {
			closeWithin(t, o, fzLong)
			t.Fatalf("New accepted a config that breaks %v", cfg.broken)
		}
		p := o.Pool()
		want := cfg.b.workers
		if want == 0 {
			want = runtime.GOMAXPROCS(0)
		}
		if n := p.Stats().Workers; n != want {
			t.Errorf("%d workers, want %d", n, want)
		}
		if n := cfg.resize; n != fzNoResize {
			err := p.SetWorkers(n)
			switch {
			case n < 1, n > smartpool.MaxWorkers:
				if !errors.Is(err, smartpool.ErrConfig) || !errors.Is(err, smartpool.RuleWorkers) {
					t.Errorf("SetWorkers(%d): %v, want ErrConfig for the worker count", n, err)
				}
			case err != nil:
				t.Errorf("SetWorkers(%d): %v", n, err)
			default:
				want = n
			}
			if got := p.Stats().Workers; got != want {
				t.Errorf("%d workers after SetWorkers(%d), want %d", got, n, want)
			}
		}
		limit := cfg.b.limit
		if st := p.Stats(); st.Limit != limit || st.Admitted != 0 || st.Waiting != 0 {
			t.Errorf("stats of a new pool: limit %d, %d admitted, %d waiting; want limit %d", st.Limit, st.Admitted, st.Waiting, limit)
		}
		if err := p.SetLimit(max(limit, 1)); limit == 0 && !errors.Is(err, smartpool.RuleNotConfigured) || limit > 0 && err != nil {
			t.Errorf("SetLimit(%d) on a pool with limit %d: %v", max(limit, 1), limit, err)
		}
		// With a limit, a WithContext submit waits for a unit: the tasks submitted
		// before end and give theirs back.
		ctx, cancel := context.WithTimeout(context.Background(), fzLong)
		defer cancel()
		var done atomic.Int32
		for _, k := range cfg.keys {
			task := smartpool.Func(func(ctx context.Context) {
				smartpool.Yield(ctx, func() {})
				done.Add(1)
			})
			var err error
			if limit > 0 {
				err = p.Submit(k, task, smartpool.WithContext(ctx))
			} else {
				err = p.SubmitTask(k, task)
			}
			if err != nil {
				t.Fatalf("submit to %s: %v", k, err)
			}
			if st := p.Stats(); st.Admitted > max(limit, 0) {
				t.Errorf("%d units admitted, limit %d", st.Admitted, limit)
			}
		}
		fzWait(t, "one task per channel", func() error {
			if n := done.Load(); int(n) != len(cfg.keys) {
				return fmt.Errorf("%d of %d ran", n, len(cfg.keys))
			}
			return nil
		})
		rep := closeWithin(t, o, fzLong)
		for _, c := range rep.Channels {
			if c.Ran != 1 || c.Panicked+c.Goexited+c.Dropped+c.Cancelled != 0 || c.Queued != 0 {
				t.Errorf("channel %s: %+v, want one task ran", c.Key, c)
			}
		}
		if len(rep.Channels) != len(cfg.keys) || rep.Suspended != 0 || rep.Admitted != 0 || rep.Waiting != 0 {
			t.Errorf("report has %d channels, %d suspended, %d admitted, %d waiting; want %d, 0, 0, 0",
				len(rep.Channels), rep.Suspended, rep.Admitted, rep.Waiting, len(cfg.keys))
		}
		noLeak()
	})
}
