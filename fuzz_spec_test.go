// FuzzPoolOps, its input: the fixed behavior (channels, levels, keys), the
// operations and task kinds, and how bytes decode into them (fzDecode).
package smartpool_test

import (
	"fmt"
	"math"
	"slices"

	"github.com/smartpool-go/smartpool"
)

type fzOrder uint8

const (
	fzFIFO     fzOrder = iota
	fzPrio             // channels.Priority: higher first, then submission order
	fzDeadline         // channels.Deadline: earliest first, then submission order
)

// fzChanSpec is one channel of FuzzPoolOps' fixed behavior.
type fzChanSpec struct {
	key      string
	level    int
	coc      bool
	order    fzOrder
	shards   int    // 0: a plain channel; n: a Multi of n shards
	keyed    bool   // a channels.Keyed[int]: FIFO, at most its limit in progress per group
	followup string // "" means itself
	side     fzSideKind
}

// fzSideKind marks the side channels: the channels with a drop or overflow
// policy of their own, which only side ops (opSide) use. They are on a level
// of their own below every modelled channel, so the order model, which does
// not know them, never sees them take the worker from a task it predicts.
type fzSideKind uint8

const (
	sideNone       fzSideKind = iota
	sideDropLate              // channels.Deadline with DropLate
	sideDropOldest            // channels.Bounded(1) with DropOldest
	sideCallerRuns            // channels.Bounded(1) with CallerRuns
)

// fzLayout lists the channels in configuration order: levels highest first,
// COC and DROP mixed, followups that stay or go up a level (one DROP channel
// follows up into a COC one). No followup goes into a Multi, so a Multi's
// rotation moves only with submits and the model knows every task's shard.
// The two Keyed channels share level 3 (the dropping one follows up into the
// complete-on-close one, which follows up into itself: re-entries wait in a
// Keyed's own FIFO, served before its groups). The gate, alone on the lowest
// level, pins the worker.
var fzLayout = [...]fzChanSpec{
	{key: "hiF", level: 0, coc: true},
	{key: "hiP", level: 0, order: fzPrio},
	{key: "midD", level: 1, coc: true, order: fzDeadline, followup: "hiF"},
	{key: "midF", level: 1, followup: "hiP"},
	{key: "midM", level: 1, coc: true, shards: 2, followup: "hiF"},
	{key: "loP", level: 2, coc: true, order: fzPrio, followup: "midD"},
	{key: "loM", level: 2, order: fzPrio, shards: 3, followup: "midF"},
	{key: "loF", level: 2, followup: "hiF"},
	{key: "kC", level: 3, coc: true, keyed: true},
	{key: "kD", level: 3, keyed: true, followup: "kC"},
	{key: "sL", level: 4, order: fzDeadline, side: sideDropLate},
	{key: "sO", level: 4, side: sideDropOldest},
	{key: "sR", level: 4, side: sideCallerRuns},
	{key: "gate", level: 5, coc: true},
}

const (
	fzChans  = len(fzLayout)
	fzAddr   = 8  // the plain submit op and children address channels 0..fzAddr-1
	fzKC     = 8  // the complete-on-close Keyed channel
	fzKD     = 9  // the dropping Keyed channel
	fzSL     = 10 // the side channels: DropLate, DropOldest, CallerRuns
	fzSO     = 11
	fzSR     = 12
	fzGate   = fzChans - 1
	fzLevels = 6
)

var (
	fzFirst   [fzChans + 1]int // channel -> global number of its queue 0
	fzQueueCh []int            // global queue -> channel
)

// fzPriority maps a parameter to a priority, extremes included.
func fzPriority(p int) int {
	return [...]int{0, 1, -1, 2, -2, math.MaxInt, math.MinInt, 1}[p%8]
}

// fzDeadlineKey maps a parameter to a deadline class and offset: class 0 is
// the zero Time, class 1 time.Now() (Push), class 2 the run's base (an hour
// ahead) plus b ms. Within a class, smaller b first, then submission order.
// (Push's time.Now() readings are taken in submission order: the model
// assumes the wall clock does not step back during a run.)
func fzDeadlineKey(p int) (a, b int64) {
	switch p % 8 {
	case 0:
		return 0, 0
	case 7:
		return 2, 1e12 // about 30 years ahead
	}
	return 2, int64(p % 4)
}

// fzKey is the order key the model gives a task queued in channel ch, by key
// (typed false: the channel's Push, and Requeue, which orders alike) or
// through its own submit method. A Keyed channel orders by submission alone.
func fzKey(ch, param int, typed bool) (a, b int64) {
	switch fzLayout[ch].order {
	case fzPrio:
		if typed {
			return int64(^fzPriority(param)), 0 // ^ reverses the order without overflow
		}
		return ^0, 0 // priority 0
	case fzDeadline:
		if typed {
			return fzDeadlineKey(param)
		}
		return 1, 0
	}
	return 0, 0
}

type fzOpKind uint8

const (
	opSubmit         fzOpKind = iota
	opWake                    // close task i's wake channel (idempotent)
	opClose                   // the first: the phase boundary; later: a concurrent second Close
	opCloseCancelled          // after the first: Close with a cancelled context
	opUnknown                 // submit to a key no level lists
	opNil                     // nil submits and other calls that must be refused without effect
	opStats                   // read Stats and check its invariants
	opSetLimit                // Pool.SetLimit(n), bad n included
	opSetWorkers              // Pool.SetWorkers(n), bad n included
	opCancel                  // cancel the context task id was submitted with (WithContext)
	opKeyedLimit              // SetLimit(n) on both Keyed channels, bad n included
	opSide                    // a side task (fzSideRec), its argument byte in n
	opNest                    // nested group spawning at the limit (fzNest), its argument byte in n
	opPause                   // Pool.Pause (n 0) or Pool.Resume (n 1) of channel ch, one of the modelled or Keyed ones
	opReshape                 // channel ch (fzRemovable): RemoveChannel with Drain (n 0) or Drop (n 1), AddChannel again (n 2), or let the removal in flight end (n 3)
	opSetRate                 // Pool.SetRate(channel ch, fzRates[n]), a bad rate included
)

// fzRemovable are the channels opReshape removes and adds again: not the
// nests' (fzNestChans), the Keyed or side ones, or the gate. hiP is midF's
// followup and midF loM's: their removal is refused while those are present.
var fzRemovable = [...]int{1, 3, 4, 6, 7}

type fzOp struct {
	kind fzOpKind
	id   int  // opSubmit, opWake, opCancel: the task
	ch   int  // opNil, opPause: the channel
	n    int  // opSetLimit, opSetWorkers, opKeyedLimit: the argument
	wait bool // opCancel: wait until the pool counted the cancellation
}

// fzSpec is one task: where it goes and what it does.
type fzSpec struct {
	id      int
	ch      int // channel index; -1 is the unknown key (children and heirs only)
	typed   bool
	param   int // priority or deadline parameter; a child's target
	group   int // Keyed channels: the group (typed: from the op; by key: 0, Push's group)
	yields  int
	block   bool  // each wait blocks until opWake closes the task's wake channel
	final   uint8 // 0 return, 1 panic, 2 runtime.Goexit
	closer  bool  // calls Close with its own context before yielding
	ctx     bool  // submitted by key with WithContext, with a context opCancel may cancel
	pend    bool  // ctx: when the submit waits for a unit, leave it waiting (else cancel it at once)
	child   *fzSpec
	handoff *fzSpec // its heir: the task it passes its unit to with Pool.Handoff
	late    bool    // hands off after its yields instead of before them
}

const (
	fzMaxOps   = 48
	fzMaxTasks = 40
)

// Kind byte of a submit op.
const (
	kYield1 = 1
	kYield2 = 2
	kYield3 = 3
	kPanic  = 1 << 2
	kGoexit = 2 << 2
	kBlock  = 1 << 4
	kChild  = 1 << 5 // submits a child task by key to channel param%9 (8: unknown key)
	kCloser = 1 << 6
	kTyped  = 1 << 7
)

// Flags of a submit op in the extended op set: the op byte's high nibble.
const (
	fCtx     = 1 << 4 // by key with WithContext (never typed)
	fKeyed   = 1 << 5 // to a Keyed channel: channel byte bit 2 picks kC or kD, bits 0-1 the group
	fHandoff = 1 << 6 // a handoff byte follows the kind byte
	fPend    = 1 << 7 // with fCtx: a WithContext submit that waits for a unit is left waiting
)

// The header byte.
const (
	hPinnedClose = 1 << 0 // close while the gate still pins the workers
	hLimitShift  = 1      // bits 1-3: Config.Limit, 0 for none
	hKeyedShift  = 4      // bits 4-5: the Keyed channels' initial group limit minus one
	hExtended    = 1 << 7 // the extended op set
)

var (
	fzLimits = [8]int{-1, 0, 1, 2, 3, 4, 6, 2}
	// fzRates are opSetRate's rates: a rate of 0 (a pause by rate), no
	// limit, fast and slow rates with bursts of 1 to 8, a bad one.
	fzRates = [8]smartpool.Rate{{}, {PerSecond: math.Inf(1)}, {PerSecond: 2000, Burst: 4}, {PerSecond: 200, Burst: 1},
		{PerSecond: 50, Burst: 2}, {PerSecond: 20000, Burst: 8}, {PerSecond: -1}, {PerSecond: 1000}}
	fzWorkerCounts = [8]int{0, -1, 1, 2, 3, 1, 2, smartpool.MaxWorkers + 1}
	fzKeyedLimits  = [8]int{0, 1, 2, 3, -1, 1, 2, 4}
	// fzHeirs are the targets of a handoff byte: no Multi, whose rotation a
	// handoff during Close moves twice (Push refused, then Requeue) while the
	// test's refused typed submits move it too, so the model could not tell
	// the heir's shard.
	fzHeirs = [10]int{0, 1, 2, 3, 5, 7, fzKC, fzKD, -1, 0}
)

// fzHeader is the decoded header byte.
type fzHeader struct {
	pinnedClose bool
	limit       int // Config.Limit; 0: none
	klimit      int // the Keyed channels' group limit at New
	ext         bool
}

// fzDecode reads a header byte and then ops. Header: bit 0 closes while the
// gate still pins the workers, bits 1-3 are Config.Limit (0: none), bits 4-5
// the Keyed channels' group limit minus one, bit 7 selects the extended op
// set. A submit op is 3 bytes: op, channel|param<<3, kind. In the extended
// set the op byte's high nibble holds submit flags (fCtx, fKeyed, fHandoff,
// fPend); with fHandoff a fourth byte names the heir (bits 0-3 an index%10
// into fzHeirs, bit 4 late, bits 5-6 its final), and op code 14 is a family
// chosen by the high nibble, each but the last followed by an argument
// byte: 0-1 SetLimit, 2-3 SetWorkers, 4-5 cancel and wait for the count, 6
// cancel without waiting, 7 Keyed SetLimit, 9 a side task (see fzSideRec),
// 10 a nested group (see fzNest), 11 Pause or Resume, 12 a reshape (bits
// 0-1 the action, the rest a channel of fzRemovable; see opReshape), 13 a
// SetRate (bits 0-4 the channel%fzSL, 5-7 the rate of fzRates), 8 and
// 14-15 stats (13 was stats too before rates). Without bit 7 the
// bytes mean what they meant before these features (only the limits apply),
// so the committed corpus keeps its meaning.
func fzDecode(data []byte) (h fzHeader, ops []fzOp, specs []*fzSpec) {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	hb := next()
	h = fzHeader{pinnedClose: hb&hPinnedClose != 0, limit: int(hb>>hLimitShift) & 7,
		klimit: 1 + int(hb>>hKeyedShift)&3, ext: hb&hExtended != 0}
	var ctxSpecs []int // tasks submitted with WithContext so far
	for len(data) > 0 && len(ops) < fzMaxOps {
		b := next()
		if h.ext && b%16 == 14 {
			switch x := b >> 4; {
			case x <= 1:
				ops = append(ops, fzOp{kind: opSetLimit, n: fzLimits[next()%8]})
			case x <= 3:
				ops = append(ops, fzOp{kind: opSetWorkers, n: fzWorkerCounts[next()%8]})
			case x <= 6:
				i := int(next())
				if len(ctxSpecs) > 0 {
					ops = append(ops, fzOp{kind: opCancel, id: ctxSpecs[i%len(ctxSpecs)], wait: x != 6})
				}
			case x == 7:
				ops = append(ops, fzOp{kind: opKeyedLimit, n: fzKeyedLimits[next()%8]})
			case x == 9:
				ops = append(ops, fzOp{kind: opSide, n: int(next())})
			case x == 10:
				ops = append(ops, fzOp{kind: opNest, n: int(next())})
			case x == 11:
				b := int(next())
				ops = append(ops, fzOp{kind: opPause, ch: b % fzSL, n: b >> 7})
			case x == 12:
				b := int(next())
				ops = append(ops, fzOp{kind: opReshape, ch: fzRemovable[(b>>2)%len(fzRemovable)], n: b & 3})
			case x == 13:
				b := int(next())
				ops = append(ops, fzOp{kind: opSetRate, ch: (b & 31) % fzSL, n: b >> 5})
			default:
				ops = append(ops, fzOp{kind: opStats})
			}
			continue
		}
		switch b % 16 {
		case 6, 7:
			i := int(next())
			if len(specs) > 0 {
				ops = append(ops, fzOp{kind: opWake, id: i % len(specs)})
			}
		case 8, 9:
			ops = append(ops, fzOp{kind: opClose})
		case 10:
			ops = append(ops, fzOp{kind: opCloseCancelled})
		case 11:
			ops = append(ops, fzOp{kind: opUnknown})
		case 12:
			ops = append(ops, fzOp{kind: opNil, ch: int(b>>4) % fzAddr})
		case 13:
			ops = append(ops, fzOp{kind: opStats})
		default:
			var flags byte
			if h.ext {
				flags = b & 0xf0
			}
			cb, kb := next(), next()
			var hb byte
			if flags&fHandoff != 0 {
				hb = next()
			}
			if len(specs) >= fzMaxTasks {
				continue
			}
			s := &fzSpec{
				id: len(specs), ch: int(cb) % fzAddr, param: int(cb >> 3), typed: kb&kTyped != 0,
				yields: int(kb & 3), final: ((kb >> 2) & 3) % 3, block: kb&kBlock != 0, closer: kb&kCloser != 0,
			}
			if flags&fKeyed != 0 {
				s.ch = fzKC + int(cb>>2)&1
				s.group = int(cb & 3)
			}
			if flags&fCtx != 0 {
				s.ctx, s.pend, s.typed = true, flags&fPend != 0, false
			}
			if !s.typed {
				s.group = 0 // Push puts a task in the zero group
			}
			specs = append(specs, s)
			if kb&kChild != 0 {
				c := &fzSpec{id: len(specs), ch: s.param % (fzAddr + 1)}
				if c.ch == fzAddr {
					c.ch = -1
				}
				s.child = c
				specs = append(specs, c)
			}
			if flags&fHandoff != 0 {
				heir := &fzSpec{id: len(specs), ch: fzHeirs[int(hb&15)%len(fzHeirs)], final: ((hb >> 5) & 3) % 3}
				s.handoff, s.late = heir, hb&(1<<4) != 0
				specs = append(specs, heir)
			}
			if s.ctx {
				ctxSpecs = append(ctxSpecs, s.id)
			}
			ops = append(ops, fzOp{kind: opSubmit, id: s.id})
		}
	}
	return h, ops, specs
}

// fzSeed builds FuzzPoolOps inputs readably.
type fzSeed []byte

func fzStart(pinnedClose bool) fzSeed {
	if pinnedClose {
		return fzSeed{1}
	}
	return fzSeed{0}
}

// fzStartX starts an input of the extended op set with an in-flight limit
// (0: none) and a Keyed group limit (1-4).
func fzStartX(pinnedClose bool, limit, klimit int) fzSeed {
	h := byte(hExtended | limit<<hLimitShift | (klimit-1)<<hKeyedShift)
	if pinnedClose {
		h |= hPinnedClose
	}
	return fzSeed{h}
}

func (s fzSeed) submit(ch, param int, kind byte) fzSeed {
	return append(s, 0, byte(ch%fzAddr|param<<3), kind)
}

func (s fzSeed) wake(i int) fzSeed { return append(s, 6, byte(i)) }

func (s fzSeed) close() fzSeed { return append(s, 8) }

func (s fzSeed) closeCancelled() fzSeed { return append(s, 10) }

func (s fzSeed) unknown() fzSeed { return append(s, 11) }

func (s fzSeed) nilSubmit(ch int) fzSeed { return append(s, byte(12|ch<<4)) }

func (s fzSeed) stats() fzSeed { return append(s, 13) }

func (s fzSeed) each(f func(fzSeed, int) fzSeed, n int) fzSeed {
	for i := range n {
		s = f(s, i)
	}
	return s
}

// submitCtx submits with WithContext; pend leaves it waiting if it must.
func (s fzSeed) submitCtx(ch, param int, kind byte, pend bool) fzSeed {
	f := byte(fCtx)
	if pend {
		f |= fPend
	}
	return append(s, f, byte(ch%fzAddr|param<<3), kind)
}

// keyed submits to kC (drop false) or kD in group (typed) or group 0.
func (s fzSeed) keyed(drop bool, group, param int, kind, flags byte) fzSeed {
	cb := byte(group&3 | param<<3)
	if drop {
		cb |= 4
	}
	return append(s, fKeyed|flags, cb, kind)
}

// handoff submits a task that hands off to fzHeirs[heir], late or not, and
// the heir ends with final.
func (s fzSeed) handoff(flags byte, cb, kind byte, heir int, late bool, final byte) fzSeed {
	hb := byte(heir) | final<<5
	if late {
		hb |= 1 << 4
	}
	return append(s, flags|fHandoff, cb, kind, hb)
}

func fzIndex(table [8]int, v int) byte {
	i := slices.Index(table[:], v)
	if i < 0 {
		panic(fmt.Sprintf("fzIndex: %d not in %v", v, table))
	}
	return byte(i)
}

func (s fzSeed) setLimit(n int) fzSeed { return append(s, 14, fzIndex(fzLimits, n)) }

func (s fzSeed) setWorkers(n int) fzSeed { return append(s, 14|2<<4, fzIndex(fzWorkerCounts, n)) }

func (s fzSeed) keyedLimit(n int) fzSeed { return append(s, 14|7<<4, fzIndex(fzKeyedLimits, n)) }

func (s fzSeed) xstats() fzSeed { return append(s, 14|8<<4) }

func (s fzSeed) pause(ch int) fzSeed { return append(s, 14|11<<4, byte(ch)) }

func (s fzSeed) resume(ch int) fzSeed { return append(s, 14|11<<4, byte(ch|1<<7)) }

// setRate is an opSetRate: channel ch at fzRates[i].
func (s fzSeed) setRate(ch, i int) fzSeed { return append(s, 14|13<<4, byte(ch|i<<5)) }

// reshape removes channel fzRemovable[i] with Drain (action 0) or Drop (1),
// adds it again (2), or lets the removal in flight end (3: the channel's
// own i is ignored).
func (s fzSeed) reshape(i, action int) fzSeed { return append(s, 14|12<<4, byte(i<<2|action)) }

// nest runs a nested group: see fzNest for the argument byte.
func (s fzSeed) nest(ch, depth, limit int, yield, spread bool) fzSeed {
	b := byte(ch&3 | (depth-1)&3<<2 | (limit-1)&3<<4)
	if yield {
		b |= 1 << 6
	}
	if spread {
		b |= 1 << 7
	}
	return append(s, 14|10<<4, b)
}

// side submits a side task: see fzSideRec for the argument byte.
func (s fzSeed) side(ch, entry, final int, late, yield bool) fzSeed {
	b := byte(ch&3 | entry&3<<2 | final&3<<4)
	if late {
		b |= 1 << 6
	}
	if yield {
		b |= 1 << 7
	}
	return append(s, 14|9<<4, b)
}

// cancel cancels the i-th WithContext task; wait: until the pool counted it.
func (s fzSeed) cancel(i int, wait bool) fzSeed {
	if wait {
		return append(s, 14|4<<4, byte(i))
	}
	return append(s, 14|6<<4, byte(i))
}
