package smartpool_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/scheduler"
)

// H1 FuzzPoolOps and H2 FuzzConfig. Both run their seed corpus as ordinary
// tests; CI fuzzes each for 60 s with -fuzzminimizetime=10s, and failing
// inputs are committed under testdata/fuzz/<Target>/.

// ---------------------------------------------------------------------------
// H1 FuzzPoolOps: the fixed behavior

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

func init() {
	for i, c := range fzLayout {
		n := max(c.shards, 1)
		fzFirst[i+1] = fzFirst[i] + n
		for range n {
			fzQueueCh = append(fzQueueCh, i)
		}
	}
}

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

// ---------------------------------------------------------------------------
// H1: decoding

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
)

// fzRemovable are the channels opReshape removes and adds again: not the
// nests' (fzNestChans), the Keyed or side ones, or the gate. hiP is midF's
// followup and midF loM's: their removal is refused while those are present.
var fzRemovable = [...]int{1, 3, 4, 6, 7} // hiP, midF, midM, loM, loF

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
	fzLimits       = [8]int{-1, 0, 1, 2, 3, 4, 6, 2}
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
// 0-1 the action, the rest a channel of fzRemovable; see opReshape), 8 and
// 13-15 stats. Without bit 7 the
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
func (s fzSeed) wake(i int) fzSeed       { return append(s, 6, byte(i)) }
func (s fzSeed) close() fzSeed           { return append(s, 8) }
func (s fzSeed) closeCancelled() fzSeed  { return append(s, 10) }
func (s fzSeed) unknown() fzSeed         { return append(s, 11) }
func (s fzSeed) nilSubmit(ch int) fzSeed { return append(s, byte(12|ch<<4)) }
func (s fzSeed) stats() fzSeed           { return append(s, 13) }
func (s fzSeed) each(f func(fzSeed, int) fzSeed, n int) fzSeed {
	for i := range n {
		s = f(s, i)
	}
	return s
}

// Extended op set only (fzStartX).

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

func (s fzSeed) setLimit(n int) fzSeed   { return append(s, 14, fzIndex(fzLimits, n)) }
func (s fzSeed) setWorkers(n int) fzSeed { return append(s, 14|2<<4, fzIndex(fzWorkerCounts, n)) }
func (s fzSeed) keyedLimit(n int) fzSeed { return append(s, 14|7<<4, fzIndex(fzKeyedLimits, n)) }
func (s fzSeed) xstats() fzSeed          { return append(s, 14|8<<4) }
func (s fzSeed) pause(ch int) fzSeed     { return append(s, 14|11<<4, byte(ch)) }
func (s fzSeed) resume(ch int) fzSeed    { return append(s, 14|11<<4, byte(ch|1<<7)) }

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

// ---------------------------------------------------------------------------
// H1: one run

type fzOutcome uint8

func (o fzOutcome) String() string {
	switch o {
	case outRan:
		return "ran"
	case outPanicked:
		return "panicked"
	case outGoexited:
		return "goexited"
	case outDropped:
		return "dropped"
	case outDroppedSuspended:
		return "dropped while suspended"
	case fzSideCancelled:
		return "cancelled"
	case fzSideRefused:
		return "refused"
	}
	return fmt.Sprintf("fzOutcome(%d)", uint8(o))
}

const (
	outRan fzOutcome = iota
	outPanicked
	outGoexited
	outDropped          // removed from a queue by Close: OnEnd received it as dropped
	outDroppedSuspended // a DROP task refused re-entry after Close: Yield did not return; OnEnd received it as dropped
)

type fzEvKind uint8

const (
	evPush    fzEvKind = iota // a task was accepted into queue q with order key (a, b)
	evStart                   // a task's Run began (its first piece)
	evEnd                     // a task reached its outcome (id -1: the gate), before the pool releases its unit and Keyed slot
	evClose                   // Close started: by the test (id -1) or from inside task id
	evChild                   // task id was a child submitted from inside its parent
	evHandoff                 // task from handed off to its heir, task id
	evCancel                  // one worker, pinned: the test cancelled queued task id's context
	evLimit                   // SetLimit(n) succeeded
	evKLimit                  // the Keyed channels' SetLimit(n) succeeded
	evOpen                    // the gate opened
)

// fzEvent is one entry of the run's log. With one worker the log is a true
// linearization: pushes happen before the gate opens or on the one worker
// slot, and a task logs its start and its end on that slot, between the
// poll that took it and the next poll (its unit of the in-flight limit and
// its Keyed slot are released after its end is logged and before that poll).
type fzEvent struct {
	kind     fzEvKind
	id       int
	from     int // evHandoff: the task that handed off
	q        int
	a, b     int64
	n        int  // evLimit, evKLimit
	heir     bool // evPush: through Handoff (no unit of its own; maybe through Requeue)
	slot     int8 // evPush into a Keyed channel: 1 takes a group slot, -1 maybe not (a Requeue during Close)
	resolved bool // evCancel: the test saw the pool count it before going on
	err      error
	state    smartpool.State
}

type fzPanic struct{ id int }

type fzChan struct {
	c     smartpool.Channel
	typed func(t smartpool.Task, s *fzSpec) (shard int, err error)
}

func fzMulti[C smartpool.Channel](n int, mk func() C, submit func(C, smartpool.Task, int) error) fzChan {
	m := channels.NewMulti(n, mk)
	shards := m.Shards()
	return fzChan{c: m, typed: func(t smartpool.Task, s *fzSpec) (int, error) {
		sh := m.Next()
		i := slices.IndexFunc(shards, func(c C) bool { return any(c) == any(sh) })
		return i, submit(sh, t, s.param)
	}}
}

type fzRun struct {
	t       *testing.T
	workers int
	limit   int // Config.Limit; 0: none
	klimit  int // the Keyed channels' limit at New
	specs   []*fzSpec
	o       *smartpool.OwnedPool[string]
	pool    *smartpool.Pool[string]
	chans   [fzChans]fzChan
	keyed   [2]*channels.Keyed[int] // kC, kD
	base    time.Time
	wake    []chan struct{}
	inWait  []atomic.Bool
	phantom atomic.Int32 // tasks submitted to an unknown key, or refused calls, that ran
	running atomic.Int32 // task pieces running user code now
	peak    atomic.Int32 // the most running at once: at most the most workers ever asked for (B5)
	// maxLimit is the highest in-flight limit ever set, raised before the
	// SetLimit call: lowering the limit revokes nothing, so Admitted may
	// exceed the current limit but never this.
	maxLimit atomic.Int64

	// Test goroutine only.
	exact        bool   // the order model applies: see degrade
	woken        []bool // wake channels closed
	target       int    // Stats.Workers: Config.Workers or the last SetWorkers
	maxWorkers   int    // the most workers ever asked for
	curLimit     int    // the in-flight limit in force
	kCur, kMax   int    // the Keyed limit in force; the highest ever set
	cancels      []context.CancelFunc
	cancelled    []bool             // by task: the test cancelled its WithContext context
	pending      map[int]chan error // WithContext submits left waiting for a unit, by task
	unresolved   []int              // exact phase: cancelled queued tasks the pool has not been seen to count
	held         int                // exact phase: the units the pool holds (the gate's and the queued tasks')
	expCancelled [fzChans]uint64    // exact phase: cancellations counted per channel
	opened       bool               // the gate opened
	nCancels     int                // contexts cancelled by the test
	nPending     int                // WithContext submits ever left waiting

	mu        sync.Mutex
	events    []fzEvent                                       // guarded by mu
	accepted  []int8                                          // guarded by mu: 1 accepted, -1 refused, 0 never submitted
	outcomes  [][]fzOutcome                                   // guarded by mu
	ends      [][]smartpool.Outcome                           // guarded by mu: by task, what ChannelParams.OnEnd received for it
	books     [fzChans][smartpool.DroppedDisplaced + 1]uint64 // guarded by mu: every OnEnd call, by channel and outcome
	starts    []int                                           // guarded by mu
	multiNext [fzChans]int                                    // guarded by mu: each Multi's rotation, as the model sees it
	panics    map[string]int                                  // guarded by mu
	problems  []string                                        // guarded by mu: violations seen off the test goroutine

	// Side tasks (opSide): appended by the test goroutine under mu; their
	// records are written under mu by whoever sees them end.
	side       []*fzSideRec
	sideTasks  map[smartpool.Task]*fzSideRec // guarded by mu: the Task values submitted, for OnEnd
	sideAnon   [fzChans][2]int               // guarded by mu: OnEnd calls with a drop, and with the channel's own drop, with a task of Go or Group.Go
	sideCalls  [fzChans][2]int               // guarded by mu: every OnEnd call with a drop, and with the channel's own drop
	sidePanics map[string]int                // guarded by mu: side panics the panic handler saw
	sideWake   chan struct{}                 // closed by the test after Close started: yielded side tasks wake

	// Nested groups (opNest): appended by the test goroutine, read by it.
	nests      []*fzNest
	nestOwners atomic.Int32 // nest owners still spawning their root: each may wait for a unit
	// ownersAtStats is nestOwners as liveStats read it just before its
	// snapshot: the owners that may be waiting in it (test goroutine only).
	ownersAtStats int
	// Owners spawning when the first Close began, plus those launched after:
	// each may hold a unit it took before Close and gives back after the
	// report was built (its push then fails). Test goroutine only.
	ownersAtClose int
	closeBegun    bool

	// Reshaping (opReshape): a pool built with Config.Spare.
	reshaping   bool
	reshaped    [fzChans]bool // test goroutine: a removal of the channel was started
	dropRemoved [fzChans]bool // test goroutine: ... with Drop, which drops even complete-on-close tasks
	rmMu        sync.Mutex
	chStates    [fzChans]fzChState // guarded by rmMu; written by the test goroutine
	removedC    [fzChans][5]uint64 // guarded by rmMu: the counts the channel's removals returned
	rmPending   *fzRemoval         // guarded by rmMu: the removal in flight
}

func newFzRun(t *testing.T, workers int, h fzHeader, specs []*fzSpec) *fzRun {
	n := len(specs)
	r := &fzRun{
		t: t, workers: workers, limit: h.limit, klimit: h.klimit, exact: workers == 1, specs: specs, base: time.Now().Add(time.Hour),
		wake: make([]chan struct{}, n), woken: make([]bool, n), inWait: make([]atomic.Bool, n),
		target: workers, maxWorkers: workers, curLimit: h.limit, kCur: h.klimit, kMax: h.klimit,
		cancels: make([]context.CancelFunc, n), cancelled: make([]bool, n), pending: map[int]chan error{},
		accepted: make([]int8, n), outcomes: make([][]fzOutcome, n), ends: make([][]smartpool.Outcome, n), starts: make([]int, n), panics: map[string]int{},
		sideTasks: map[smartpool.Task]*fzSideRec{}, sidePanics: map[string]int{}, sideWake: make(chan struct{}),
	}
	r.maxLimit.Store(int64(h.limit))
	for i := range r.wake {
		r.wake[i] = make(chan struct{})
	}
	for i := range fzLayout {
		r.chans[i] = r.newChan(i)
	}
	return r
}

// newChan makes channel i of the layout: at New, and again for AddChannel
// after its removal (opReshape).
func (r *fzRun) newChan(i int) fzChan {
	l := fzLayout[i]
	switch {
	case l.side != sideNone:
		return fzChan{c: r.newSideChannel(i, l.side)}
	case l.keyed:
		k, err := channels.NewKeyed[int](r.klimit)
		if err != nil {
			r.t.Fatalf("NewKeyed(%d): %v", r.klimit, err)
		}
		r.keyed[i-fzKC] = k
		return fzChan{c: k, typed: func(t smartpool.Task, s *fzSpec) (int, error) { return 0, k.SubmitTask(s.group, t) }}
	case l.shards > 0 && l.order == fzFIFO:
		return fzMulti(l.shards, channels.NewFIFO, func(c *channels.FIFO, t smartpool.Task, _ int) error { return src(c).Push(t, smartpool.Order{}) })
	case l.shards > 0:
		return fzMulti(l.shards, channels.NewPriority, func(c *channels.Priority, t smartpool.Task, p int) error {
			return c.SubmitTask(fzPriority(p), t)
		})
	case l.order == fzPrio:
		// Typed submits alternate between the channel's own method and
		// Pool.SubmitTask with the ordering option: the same key either way.
		c, key := channels.NewPriority(), l.key
		return fzChan{c: c, typed: func(t smartpool.Task, s *fzSpec) (int, error) {
			if s.id%2 == 1 {
				return 0, r.pool.SubmitTask(key, t, smartpool.WithPriority(fzPriority(s.param)))
			}
			return 0, c.SubmitTask(fzPriority(s.param), t)
		}}
	case l.order == fzDeadline:
		c, key := channels.NewDeadline(), l.key
		return fzChan{c: c, typed: func(t smartpool.Task, s *fzSpec) (int, error) {
			if s.id%2 == 1 {
				return 0, r.pool.SubmitTask(key, t, smartpool.WithDeadline(r.deadline(s.param)))
			}
			return 0, c.SubmitTask(r.deadline(s.param), t)
		}}
	default:
		c := channels.NewFIFO()
		return fzChan{c: c, typed: func(t smartpool.Task, _ *fzSpec) (int, error) { return 0, src(c).Push(t, smartpool.Order{}) }}
	}
}

func (r *fzRun) deadline(p int) time.Time {
	a, b := fzDeadlineKey(p)
	if a == 0 {
		return time.Time{}
	}
	return r.base.Add(time.Duration(b) * time.Millisecond)
}

func (r *fzRun) behavior() *behavior {
	b := &behavior{workers: r.workers, limit: r.limit, levels: make([][]ch, fzLevels), onPanic: r.onPanic}
	for i, l := range fzLayout {
		onEnd := func(t smartpool.Task, o smartpool.Outcome) { r.onEnd(i, t, o) }
		b.levels[l.level] = append(b.levels[l.level], ch{key: l.key, c: r.chans[i].c, coc: l.coc, followup: l.followup, onEnd: onEnd})
	}
	return b
}

// degrade gives up the order model for the rest of a one-worker run, when
// an op makes the order depend on the Go scheduler: SetWorkers above one (a
// second worker runs queued tasks while the gate pins the first), or a unit
// of the in-flight limit freed while a WithContext submit waits for one (a
// cancel, a SetLimit, the gate opening: the waiter's push races the test's
// next ops and the worker). The run goes on with the invariant checks only,
// as a two-worker run does.
func (r *fzRun) degrade() {
	r.exact = false
	r.unresolved = nil
}

func (r *fzRun) problem(format string, args ...any) {
	r.mu.Lock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// end records task id's outcome and logs its end at once.
func (r *fzRun) end(id int, o fzOutcome) {
	r.mu.Lock()
	r.outcomes[id] = append(r.outcomes[id], o)
	r.events = append(r.events, fzEvent{kind: evEnd, id: id})
	r.mu.Unlock()
}

func (r *fzRun) log(ev fzEvent) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

// onEnd is channel ch's OnEnd: it keeps the books of every ending (checked
// against Stats by booksMatch), records each submitted task's ending (checked
// against its outcome by checkLedger), and records a drop as the task's
// outcome. A task that started was dropped as it came back from a Yield
// after Close: OnEnd sees it before its deferred calls run, which then find
// it recorded (fzTask.Run).
func (r *fzRun) onEnd(ch int, t smartpool.Task, o smartpool.Outcome) {
	r.mu.Lock()
	if o < smartpool.Ran || o > smartpool.DroppedDisplaced {
		r.problems = append(r.problems, fmt.Sprintf("%s's OnEnd got %v (%T)", fzLayout[ch].key, o, t))
		r.mu.Unlock()
		return
	}
	r.books[ch][o]++
	r.mu.Unlock()
	if fzLayout[ch].side != sideNone {
		r.sideOnEnd(ch, t, o)
		return
	}
	ft, ok := t.(*fzTask)
	if !ok {
		if o.Dropped() { // the gate and the nests' tasks are never dropped
			r.problem("%s's OnEnd got %T %v, not a submitted task", fzLayout[ch].key, t, o)
		}
		return
	}
	id := ft.s.id
	r.mu.Lock()
	defer r.mu.Unlock()
	if ft.s.ch != ch {
		r.problems = append(r.problems, fmt.Sprintf("task %d of %s ended (%v) through the OnEnd of %s", id, fzLayout[ft.s.ch].key, o, fzLayout[ch].key))
	}
	r.ends[id] = append(r.ends[id], o)
	switch {
	case !o.Dropped():
	case o != smartpool.DroppedOnClose:
		r.problems = append(r.problems, fmt.Sprintf("task %d of %s ended %v: only Close drops in its channel", id, fzLayout[ch].key, o))
	case r.starts[id] > 0:
		r.outcomes[id] = append(r.outcomes[id], outDroppedSuspended)
	default:
		r.outcomes[id] = append(r.outcomes[id], outDropped)
	}
}

// fzEnding is the Outcome OnEnd must give a task whose ledger outcome is o.
func fzEnding(o fzOutcome) smartpool.Outcome {
	switch o {
	case outRan:
		return smartpool.Ran
	case outPanicked:
		return smartpool.Panicked
	case outGoexited:
		return smartpool.Goexited
	case outDropped, outDroppedSuspended:
		return smartpool.DroppedOnClose
	case fzSideCancelled:
		return smartpool.Cancelled
	}
	return 0
}

// booksMatch reports nil once the books OnEnd kept match the final Stats,
// channel by channel: every ending reached OnEnd, as what it was.
func (r *fzRun) booksMatch() error {
	s := r.stats()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range s.Channels {
		b := r.books[i]
		got := [5]uint64{b[smartpool.Ran], b[smartpool.Panicked], b[smartpool.Goexited],
			b[smartpool.DroppedOnClose] + b[smartpool.DroppedLate] + b[smartpool.DroppedDisplaced], b[smartpool.Cancelled]}
		if want := fzStatCounts(c); got != want {
			return fmt.Errorf("OnEnd of %s: ran/panicked/goexited/dropped/cancelled %v; stats %v", c.Key, got, want)
		}
	}
	return nil
}

func (r *fzRun) onPanic(key string, pe *smartpool.PanicError) {
	if sp, ok := pe.Value.(fzSidePanic); ok {
		r.mu.Lock()
		if rec := r.side[sp.id]; fzLayout[rec.ch].key != key {
			r.problems = append(r.problems, fmt.Sprintf("panic of side task %d (channel %s) reported for channel %s", sp.id, fzLayout[rec.ch].key, key))
		}
		r.sidePanics[key]++
		r.mu.Unlock()
		return
	}
	p, ok := pe.Value.(fzPanic)
	switch {
	case !ok:
		r.problem("panic handler got %v from %s, not a task's panic", pe.Value, key)
	case fzLayout[r.specs[p.id].ch].key != key:
		r.problem("panic of task %d (channel %s) reported for channel %s", p.id, fzLayout[r.specs[p.id].ch].key, key)
	case len(pe.Stack) == 0:
		r.problem("panic of task %d reported without a stack", p.id)
	}
	r.mu.Lock()
	r.panics[key]++
	r.mu.Unlock()
}

// push submits s with do and records the result: accepted, with its push
// logged (queue, order key, Keyed slot), or refused.
func (r *fzRun) push(s *fzSpec, typed bool, do func(smartpool.Task) (shard int, err error)) error {
	shard, err := do(&fzTask{r: r, s: s})
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := fzLayout[s.ch].shards; n > 0 {
		// Push rotates exactly like Next; a push refused before it reached
		// the Multi (ErrFull, ErrClosed, a context) did not move the
		// rotation, and one the Multi refused (only during Close) no push
		// accepted later depends on.
		if typed {
			r.multiNext[s.ch] = shard + 1
		} else if err == nil {
			shard = r.multiNext[s.ch] % n
			r.multiNext[s.ch]++
		}
	}
	if err != nil {
		r.accepted[s.id] = -1
		return err
	}
	r.accepted[s.id] = 1
	a, b := fzKey(s.ch, s.param, typed)
	ev := fzEvent{kind: evPush, id: s.id, q: fzFirst[s.ch] + shard, a: a, b: b}
	if fzLayout[s.ch].keyed {
		ev.slot = 1
	}
	r.events = append(r.events, ev)
	return nil
}

// submit queues s by key or through its channel's own method. A FIFO's own
// method is Push, which the pool calls for tasks it admitted already; in a
// pool with an in-flight limit a typed FIFO submit goes by key instead, so
// that it takes its unit (the order is the same).
func (r *fzRun) submit(s *fzSpec, typed bool) error {
	if s.ch < 0 {
		err := r.pool.SubmitTask("nope", &fzTask{r: r, s: s})
		r.mu.Lock()
		r.accepted[s.id] = -1
		r.mu.Unlock()
		return err
	}
	l := fzLayout[s.ch]
	if typed && r.limit > 0 && l.order == fzFIFO && !l.keyed {
		typed = false
	}
	return r.push(s, typed, func(t smartpool.Task) (int, error) {
		if typed {
			return r.chans[s.ch].typed(t, s)
		}
		return 0, r.pool.SubmitTask(l.key, t)
	})
}

func (r *fzRun) wakeTask(id int) {
	if !r.woken[id] {
		r.woken[id] = true
		close(r.wake[id])
	}
}

// alivePending counts the WithContext submits left waiting that have not
// returned.
func (r *fzRun) alivePending() int {
	n := 0
	for _, res := range r.pending {
		if len(res) == 0 {
			n++
		}
	}
	return n
}

// sample checks a Stats snapshot taken from inside a task.
func (r *fzRun) sample() {
	if r.limit == 0 {
		return
	}
	s := r.pool.Stats()
	if m := r.maxLimit.Load(); s.Admitted < 0 || int64(s.Admitted) > m || s.Waiting < 0 {
		r.problem("Stats inside a task: %d admitted, %d waiting; no limit above %d was ever set", s.Admitted, s.Waiting, m)
	}
}

// fzTask is a submitted task. It never asserts (t.Fatal or require in a task
// would only Goexit the goroutine running it): it logs and records, and the
// test goroutine checks.
type fzTask struct {
	r *fzRun
	s *fzSpec
}

// enter and leave bracket a piece of a task: its run up to its first Yield,
// between two Yields, or after its last one.
func (r *fzRun) enter() {
	n := r.running.Add(1)
	for p := r.peak.Load(); n > p && !r.peak.CompareAndSwap(p, n); p = r.peak.Load() {
	}
}

func (r *fzRun) leave() { r.running.Add(-1) }

func (t *fzTask) Run(ctx context.Context) {
	r, s := t.r, t.s
	r.enter()
	r.mu.Lock()
	r.starts[s.id]++
	r.events = append(r.events, fzEvent{kind: evStart, id: s.id})
	r.mu.Unlock()
	settled := false
	defer func() {
		if !settled {
			// Unwinding without having reached its end: a panic or Goexit
			// of ours is recorded before it starts, so this is the pool
			// ending a DROP task that re-entered after Close, which OnEnd
			// recorded already, before these deferred calls.
			r.mu.Lock()
			if outs := r.outcomes[s.id]; len(outs) != 1 || outs[0] != outDroppedSuspended {
				r.problems = append(r.problems, fmt.Sprintf("task %d dropped after a yield: outcomes %v as its deferred calls run, want OnEnd's alone", s.id, outs))
			}
			r.events = append(r.events, fzEvent{kind: evEnd, id: s.id})
			r.mu.Unlock()
		}
	}()
	if c := s.child; c != nil {
		err := r.submit(c, false)
		r.log(fzEvent{kind: evChild, id: c.id, err: err, state: r.pool.State()})
	}
	if s.handoff != nil && !s.late {
		t.handoff(ctx)
	}
	if s.closer {
		_, err := r.o.Close(ctx)
		r.log(fzEvent{kind: evClose, id: s.id, err: err})
	}
	for range s.yields {
		r.leave()
		smartpool.Yield(ctx, func() {
			if s.block {
				r.inWait[s.id].Store(true)
				<-r.wake[s.id]
				r.inWait[s.id].Store(false)
			}
		})
		r.enter()
	}
	if s.handoff != nil && s.late {
		t.handoff(ctx)
	}
	r.leave()
	settled = true
	switch s.final {
	case 1:
		r.end(s.id, outPanicked)
		panic(fzPanic{s.id})
	case 2:
		r.end(s.id, outGoexited)
		runtime.Goexit()
	default:
		r.end(s.id, outRan)
	}
}

// handoff passes the task's unit to its heir with Pool.Handoff and records
// the result, then samples Stats from inside the task.
func (t *fzTask) handoff(ctx context.Context) {
	r, h := t.r, t.s.handoff
	key := "nope"
	if h.ch >= 0 {
		key = fzLayout[h.ch].key
	}
	err := r.pool.HandoffTask(ctx, key, &fzTask{r: r, s: h})
	st := r.pool.State()
	r.mu.Lock()
	if err == nil && h.ch < 0 {
		r.problems = append(r.problems, fmt.Sprintf("Handoff of task %d to an unknown key accepted", t.s.id))
		err = errors.New("accepted")
	}
	if err == nil {
		r.accepted[h.id] = 1
		a, b := fzKey(h.ch, 0, false)
		ev := fzEvent{kind: evPush, id: h.id, q: fzFirst[h.ch], a: a, b: b, heir: true}
		if fzLayout[h.ch].keyed {
			// Into group 0 by Push, unless Close had started: then maybe
			// by Requeue, outside the groups.
			ev.slot = 1
			if st != smartpool.Running {
				ev.slot = -1
			}
		}
		r.events = append(r.events, ev)
	} else {
		r.accepted[h.id] = -1
	}
	r.events = append(r.events, fzEvent{kind: evHandoff, id: h.id, from: t.s.id, err: err, state: st})
	r.mu.Unlock()
	r.sample()
}

// fzLong bounds every wait of the fuzz targets. It is below the fuzz
// worker's own limit of 10 s per input (internal/fuzz panics "deadlocked!"
// in the worker process, whose output the coordinator discards: a hang
// would be reported without a word about where), and each input runs two
// pools; a healthy run waits microseconds to milliseconds.
const fzLong = 3 * time.Second

// fzWait polls cond until it returns nil, failing with its last error and
// every goroutine's stack after fzLong.
func fzWait(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(fzLong)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			var buf bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
			t.Fatalf("%s: not within %v: %v\n%s", what, fzLong, err, buf.String())
		}
		runtime.Gosched()
	}
}

// fzRecv receives from c, failing after fzLong with every goroutine's stack.
func fzRecv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(fzLong):
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		t.Fatalf("%s: not within %v\n%s", what, fzLong, buf.String())
		panic("unreachable")
	}
}

// ghostLocked reports whether accepted task id may have been cancelled: the
// test cancelled its context and it never started. Such a task ends with no
// outcome of its own: the pool counts it in ChannelStats.Cancelled.
func (r *fzRun) ghostLocked(id int) bool { return r.cancelled[id] && r.starts[id] == 0 }

// settled reports nil once the side channels are empty and every accepted
// task has finished, waits for a wake-up nobody sent yet, waits in a Keyed
// channel behind its group's limit (the log shows that many of the group in progress: they hold their
// slots at least that long), or was cancelled and counted so (the channels'
// Cancelled counts equal the tasks cancelled and never started: one that a
// worker took before the cancellation would start soon).
func (r *fzRun) settled() error {
	s := r.stats()
	r.mu.Lock()
	defer r.mu.Unlock()
	var ghosts [fzChans]uint64
	inProgress := r.keyedRunningLocked(nil)
	for id, a := range r.accepted {
		sp := r.specs[id]
		switch {
		case a != 1 || len(r.outcomes[id]) > 0:
		case r.ghostLocked(id):
			ghosts[sp.ch]++
		case r.starts[id] == 0 && fzLayout[sp.ch].keyed && inProgress[[2]int{sp.ch, sp.group}] >= r.kCur:
		case !r.inWait[id].Load() || r.woken[id]:
			var keyed any
			if fzLayout[sp.ch].keyed {
				keyed = r.keyed[sp.ch-fzKC].Stats()
			}
			return fmt.Errorf("task %d has neither finished nor suspended on its wake channel (started %d; its channel: %+v %+v; pool: %d workers, %d suspended, %d wake-ups)",
				id, r.starts[id], s.Channels[sp.ch], keyed, s.Workers, s.Suspended, s.Wakeups)
		}
	}
	for ch := fzSL; ch <= fzSR; ch++ { // side tasks never wait: once polled they end
		if q := s.Channels[ch].Queued; q != 0 {
			return fmt.Errorf("%s still holds %d side tasks", s.Channels[ch].Key, q)
		}
	}
	// A closer task may have started Close before the test's own: a nest's
	// spawn it refused cancelled the nest's group, whose queued tasks are
	// then skipped and counted cancelled (fzNestChans).
	var nestSlack [fzChans]uint64
	if r.pool.State() >= smartpool.Closing {
		var unused [fzChans][5]uint64
		nestSlack = r.nestCounts(&unused)
	}
	for i, c := range s.Channels {
		if c.Cancelled < ghosts[i] || c.Cancelled > ghosts[i]+nestSlack[i] {
			return fmt.Errorf("%s counts %d cancelled; %d were cancelled and have not started", c.Key, c.Cancelled, ghosts[i])
		}
	}
	return nil
}

func (r *fzRun) allDone() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, a := range r.accepted {
		if a == 1 && len(r.outcomes[id]) == 0 && !r.ghostLocked(id) {
			return fmt.Errorf("accepted task %d has no outcome", id)
		}
	}
	return nil
}

// counts returns the ledger's outcomes per channel: ran, panicked, goexited,
// dropped (both kinds), cancelled (accepted, cancelled by the test, never
// started). The gate ran once.
func (r *fzRun) counts() (c [fzChans][5]uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, outs := range r.outcomes {
		ch := r.specs[id].ch
		if ch < 0 { // an unknown-key task has none unless checkLedger fails
			continue
		}
		for _, o := range outs {
			c[ch][min(int(o), 3)]++
		}
		if r.accepted[id] == 1 && len(outs) == 0 && r.ghostLocked(id) {
			c[ch][4]++
		}
	}
	for _, rec := range r.side {
		switch o, ok := rec.endingLocked(); {
		case !ok || o == fzSideRefused:
		case o == fzSideCancelled:
			c[rec.ch][4]++
		default:
			c[rec.ch][min(int(o), 3)]++
		}
	}
	c[fzGate][0] = 1
	return c
}

// countsWithNests is counts with the nests' tasks that ran, and the most
// of their other tasks each channel may count as cancelled.
func (r *fzRun) countsWithNests() (c [fzChans][5]uint64, slack [fzChans]uint64) {
	c = r.counts()
	return c, r.nestCounts(&c)
}

func fzStatCounts(s smartpool.ChannelStats[string]) [5]uint64 {
	return [5]uint64{s.Ran, s.Panicked, s.Goexited, s.Dropped, s.Cancelled}
}

// checkShape checks what every Stats snapshot must satisfy. live: taken by
// the test goroutine, which knows the limit in force and the submitters
// that may wait (a report may predate a SetLimit made during Close).
func (r *fzRun) checkShape(s *smartpool.Stats[string], live bool) error {
	if s.Workers != r.target || len(s.Channels) != fzChans || s.Suspended < 0 {
		return fmt.Errorf("stats: %d workers (want %d), %d channels, %d suspended", s.Workers, r.target, len(s.Channels), s.Suspended)
	}
	maxLimit := r.maxLimit.Load()
	switch {
	case r.limit == 0 && (s.Limit != 0 || s.Admitted != 0 || s.Waiting != 0):
		return fmt.Errorf("stats of a pool without a limit: limit %d, %d admitted, %d waiting", s.Limit, s.Admitted, s.Waiting)
	case r.limit > 0 && (s.Limit < 0 || int64(s.Limit) > maxLimit || live && s.Limit != r.curLimit):
		return fmt.Errorf("stats: limit %d, want %d (never above %d)", s.Limit, r.curLimit, maxLimit)
	case s.Admitted < 0 || int64(s.Admitted) > maxLimit:
		return fmt.Errorf("stats: %d admitted; no limit above %d was ever set", s.Admitted, maxLimit)
	case s.Waiting < 0 || live && s.Waiting > len(r.pending)+r.ownersAtStats:
		return fmt.Errorf("stats: %d waiting, %d WithContext submits left waiting, %d nest owners spawning", s.Waiting, len(r.pending), r.ownersAtStats)
	}
	for i, c := range s.Channels {
		l := fzLayout[i]
		if c.Key != l.key || c.Level != l.level || c.CompleteOnClose != l.coc || c.Queued < 0 {
			return fmt.Errorf("stats channel %d: %+v, want %s on level %d, coc %v", i, c, l.key, l.level, l.coc)
		}
		if l.coc && c.Dropped != 0 && !r.dropRemoved[i] {
			return fmt.Errorf("complete-on-close channel %s dropped %d tasks", l.key, c.Dropped)
		}
	}
	return nil
}

// checkPinned checks a snapshot taken while the only worker is pinned:
// nothing has run, every accepted task is queued (cancelled ones too, until
// a worker skips them), the cancellations seen so far are counted, and the
// pool holds a unit for the gate and each accepted task not cancelled.
func (r *fzRun) checkPinned(s *smartpool.Stats[string]) error {
	var queued [fzChans]int
	r.mu.Lock()
	for _, ev := range r.events {
		if ev.kind == evPush {
			queued[fzQueueCh[ev.q]]++
		}
	}
	r.mu.Unlock()
	for i, c := range s.Channels {
		if c.Queued != queued[i] || c.Finished() != c.Cancelled || c.Cancelled != r.expCancelled[i] {
			return fmt.Errorf("pinned stats of %s: %d queued, %d finished, %d cancelled; want %d queued, none finished but %d cancelled",
				c.Key, c.Queued, c.Finished(), c.Cancelled, queued[i], r.expCancelled[i])
		}
	}
	if r.limit > 0 && (s.Admitted != r.held || s.Waiting != r.alivePending()) {
		return fmt.Errorf("pinned stats: %d admitted, %d waiting; want %d, %d", s.Admitted, s.Waiting, r.held, r.alivePending())
	}
	return nil
}

// resolve waits, in the exact phase, until the pool counted the
// cancellations of queued tasks the test made since the last call and gave
// their units back.
func (r *fzRun) resolve() {
	if len(r.unresolved) == 0 {
		return
	}
	for _, id := range r.unresolved {
		r.expCancelled[r.specs[id].ch]++
		if r.limit > 0 {
			r.held--
		}
	}
	fzWait(r.t, "the pool counting cancelled queued tasks", func() error {
		s := r.stats()
		for i, c := range s.Channels {
			if c.Cancelled != r.expCancelled[i] {
				return fmt.Errorf("%s: %d cancelled, want %d", c.Key, c.Cancelled, r.expCancelled[i])
			}
		}
		if r.limit > 0 && s.Admitted != r.held {
			return fmt.Errorf("%d admitted, want %d", s.Admitted, r.held)
		}
		return nil
	})
	for _, id := range r.unresolved {
		r.log(fzEvent{kind: evCancel, id: id, resolved: true})
	}
	r.unresolved = nil
}

// checkReport checks the report of the first Close to return. Every
// complete-on-close task has finished by then, so those channels match the
// ledger exactly, except Cancelled: a cancellation is counted by the
// context's AfterFunc, which may run after the worker skipped the task.
// DROP channels may still see suspended tasks dropped later.
//
// Admitted is not always zero yet: a DROP task suspended at Close keeps its
// unit until its wait returns and it is dropped; a cancellation's unit comes
// back on the AfterFunc's goroutine; a WithContext submit woken by Close, or a
// submit that raced Close, gives back a unit it took only as it returns. So
// the report is checked against those, and the final Stats (countsMatch)
// must reach zero admitted and zero waiting.
func (r *fzRun) checkReport(rep *smartpool.Report[string]) {
	t := r.t
	if rep == nil {
		t.Fatal("Close returned a nil report")
	}
	if st := r.pool.State(); st != smartpool.Closed {
		t.Fatalf("State after Close returned: %v", st)
	}
	select {
	case <-r.o.Done():
	default:
		t.Fatal("Done not closed after Close returned")
	}
	rep = r.normalize(rep, r.reshapeSnap())
	if err := r.checkShape(rep, false); err != nil {
		t.Fatalf("report: %v", err)
	}
	var dropping [fzChans]uint64
	slack := r.nCancels + r.nPending + max(int(r.nestOwners.Load()), r.ownersAtClose)
	if !r.exact {
		slack++ // a submit racing Close
	}
	r.mu.Lock()
	for id, a := range r.accepted {
		s := r.specs[id]
		if a != 1 {
			continue
		}
		if fzLayout[s.ch].coc && len(r.outcomes[id]) == 0 && !r.ghostLocked(id) {
			t.Errorf("Close returned before complete-on-close task %d (%s) finished", id, fzLayout[s.ch].key)
		}
		if !fzLayout[s.ch].coc && s.yields > 0 {
			slack++
			if len(r.outcomes[id]) == 0 {
				dropping[s.ch]++ // counted as dropped just before OnEnd records it
			}
		}
	}
	for _, rec := range r.side {
		if rec.yield {
			slack++ // suspended at Close, like a DROP task that yields
		}
		if _, ended := rec.endingLocked(); !ended && !fzLayout[rec.ch].coc {
			// Dropped and counted, but not recorded yet: its deferred calls
			// (after a Yield) or its Future or Group (resolved on another
			// goroutine) record it later.
			dropping[rec.ch]++
		}
	}
	r.mu.Unlock()
	// The ledger after dropping: a dropped task's OnEnd that comes between
	// the two is in the ledger and not in dropping, never in both or neither.
	led, nestSlack := r.countsWithNests()
	if rep.Admitted > slack {
		t.Errorf("report: %d units admitted; at most %d may still be held", rep.Admitted, slack)
	}
	for i, c := range rep.Channels {
		if r.reshaped[i] {
			// A removal may have been in flight at Close: which of the
			// channel's counts the report holds and which the removal
			// returned afterwards is not known here (countsMatch is exact).
			continue
		}
		if i >= fzSL && i <= fzSR {
			// Side tasks' endings reach the ledger from other goroutines
			// (Futures, Groups, deferred calls) after Close's report; their
			// channels are checked exactly once everything ended
			// (countsMatch, checkSide).
			continue
		}
		got := fzStatCounts(c)
		if c.Queued != 0 {
			t.Errorf("report: %s still has %d queued", c.Key, c.Queued)
		}
		led[i][3] += dropping[i]
		led[i][4] += nestSlack[i]
		for k := range got {
			if fzLayout[i].coc && k < 4 && got[k] != led[i][k] || got[k] > led[i][k] {
				t.Errorf("report for %s: ran/panicked/goexited/dropped/cancelled %v, ledger %v", c.Key, got, led[i])
				break
			}
		}
	}
}

// countsMatch compares a snapshot with the ledger once everything ended:
// every counter, no unit held, nobody waiting for one, the complete-on-close
// Keyed channel empty with no slot held. (The dropping one may keep a slot:
// a task a worker polls as Close starts is dropped without running and
// never gives its slot back, as channels.Keyed documents.)
func (r *fzRun) countsMatch() error {
	s := r.liveStats()
	if err := r.checkShape(s, true); err != nil {
		return err
	}
	if s.Suspended != 0 {
		return fmt.Errorf("%d tasks still suspended", s.Suspended)
	}
	led, nestSlack := r.countsWithNests()
	for i, c := range s.Channels {
		got := fzStatCounts(c)
		if got[4] >= led[i][4] && got[4] <= led[i][4]+nestSlack[i] {
			got[4] = led[i][4] // a nest's spawn refused at Close, or skipped as cancelled: the test cannot tell
		}
		if got != led[i] || c.Queued != 0 {
			return fmt.Errorf("stats for %s: ran/panicked/goexited/dropped/cancelled %v, %d queued; ledger %v", c.Key, got, c.Queued, led[i])
		}
	}
	if s.Admitted != 0 || s.Waiting != 0 {
		return fmt.Errorf("every task ended, yet %d units admitted and %d submitters waiting", s.Admitted, s.Waiting)
	}
	if k := r.keyed[0].Stats(); k.Queued != 0 || k.Running != 0 || k.Groups != 0 || k.Ready != 0 {
		return fmt.Errorf("kC after the end: %+v", k)
	}
	if k := r.keyed[1].Stats(); k.Queued != 0 || k.Ready != 0 {
		return fmt.Errorf("kD after the end: %+v", k)
	}
	return nil
}

// checkLedger: each accepted task has exactly one outcome (or none, if the
// test cancelled it and it never started: counted cancelled, see counts)
// and started at most once, and it started exactly when it was not dropped
// from a queue; refused ones never ran; complete-on-close tasks are never
// dropped; the panic handler saw each panic once, for the task's channel;
// no more task pieces ran at once than the most workers ever asked for
// (retiring workers finish their task); no Keyed group had more tasks in
// progress than the highest limit ever set.
func (r *fzRun) checkLedger() {
	t := r.t
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.problems {
		t.Error(p)
	}
	for _, ev := range r.events {
		switch {
		case ev.kind == evClose && ev.id >= 0 && !errors.Is(ev.err, smartpool.ErrCloseFromTask):
			t.Errorf("Close from inside task %d returned %v, want ErrCloseFromTask", ev.id, ev.err)
		case ev.kind == evChild && r.gone(r.specs[ev.id].ch, ev.err), ev.kind == evHandoff && r.gone(r.specs[ev.id].ch, ev.err):
			// refused by a channel being removed, or by its key once removed
		case ev.kind == evChild && !r.exact:
			// With two workers a child races Close: only the error kinds
			// are known. (With one, checkOrder knows each result.)
			unknown := r.specs[ev.id].ch < 0
			switch {
			case errors.Is(ev.err, smartpool.ErrClosed):
				if ev.state < smartpool.Closing {
					t.Errorf("child %d refused with ErrClosed while the pool was %v", ev.id, ev.state)
				}
			case errors.Is(ev.err, smartpool.ErrFull) && r.limit > 0 && !unknown:
			case ev.err == nil && unknown, ev.err != nil && !(unknown && errors.Is(ev.err, smartpool.ErrUnknownKey)):
				t.Errorf("child %d (unknown key %v): Submit returned %v", ev.id, unknown, ev.err)
			}
		case ev.kind == evHandoff && !r.exact:
			if err := fzHandoffResult(r.specs[ev.id], ev.err, ev.state >= smartpool.Closing, r.limit > 0, false); err != nil {
				t.Errorf("handoff of task %d to task %d (pool %v): %v", ev.from, ev.id, ev.state, err)
			}
		}
	}
	panicked := map[string]int{}
	for id, outs := range r.outcomes {
		s := r.specs[id]
		starts := r.starts[id]
		switch {
		case r.accepted[id] != 1 && (len(outs) != 0 || starts != 0):
			t.Errorf("task %d was not accepted (%d) but has outcomes %v and %d starts", id, r.accepted[id], outs, starts)
		case r.accepted[id] != 1:
		case len(outs) == 0 && r.ghostLocked(id): // cancelled: countsMatch matched the count
		case len(outs) != 1 || starts > 1:
			t.Errorf("task %d (%s): outcomes %v, %d starts; want exactly one outcome", id, fzLayout[s.ch].key, outs, starts)
		case (outs[0] == outDropped) != (starts == 0):
			t.Errorf("task %d (%s): outcome %v after %d starts", id, fzLayout[s.ch].key, outs[0], starts)
		case fzLayout[s.ch].coc && outs[0] >= outDropped && !r.dropRemoved[s.ch]:
			t.Errorf("complete-on-close task %d (%s) was dropped (%v)", id, fzLayout[s.ch].key, outs[0])
		case outs[0] == outPanicked:
			panicked[fzLayout[s.ch].key]++
		}
		// OnEnd: once for each task the pool accepted, with its outcome
		// (Cancelled for one the test cancelled before it started); never
		// for one it refused.
		want := []smartpool.Outcome(nil)
		switch {
		case r.accepted[id] != 1:
		case len(outs) == 0 && r.ghostLocked(id):
			want = []smartpool.Outcome{smartpool.Cancelled}
		case len(outs) == 1:
			want = []smartpool.Outcome{fzEnding(outs[0])}
		}
		if len(outs) <= 1 && !slices.Equal(r.ends[id], want) {
			t.Errorf("task %d (channel %d, accepted %d, outcomes %v): OnEnd received %v, want %v", id, s.ch, r.accepted[id], outs, r.ends[id], want)
		}
	}
	for k, n := range r.panics {
		if panicked[k] != n {
			t.Errorf("panic handler saw %d panics from %s, ledger %d", n, k, panicked[k])
		}
	}
	for k, n := range panicked {
		if r.panics[k] != n {
			t.Errorf("ledger has %d panics from %s, handler saw %d", n, k, r.panics[k])
		}
	}
	if n := r.phantom.Load(); n != 0 {
		t.Errorf("%d tasks submitted to an unknown key or refused ran", n)
	}
	if p := r.peak.Load(); p > int32(r.maxWorkers) {
		t.Errorf("%d task pieces ran at once; at most %d workers were ever asked for", p, r.maxWorkers)
	}
	if err := r.keyedInProgressLocked(); err != nil {
		t.Error(err)
	}
}

// keyedInProgressLocked walks the log counting, per Keyed group, the tasks
// started and not ended. A task holds its group's slot from the poll that
// took it until its Run ends, which brackets its logged start and end, so
// the count never exceeds what the channel let in progress: the highest
// limit ever set. Only tasks known to take a slot count (a handoff during
// Close may go through Requeue, outside the groups).
func (r *fzRun) keyedInProgressLocked() error {
	var err error
	r.keyedRunningLocked(func(k [2]int, n, id int) {
		if n > r.kMax && err == nil {
			err = fmt.Errorf("%d tasks of group %d of %s in progress at once (task %d started); the limit was never above %d",
				n, k[1], fzLayout[k[0]].key, id, r.kMax)
		}
	})
	return err
}

// keyedRunningLocked returns, per Keyed (channel, group), the tasks the log
// shows started and not ended, calling started (if not nil) with the count
// at each start.
func (r *fzRun) keyedRunningLocked(started func(k [2]int, n, id int)) map[[2]int]int {
	slot := make([]bool, len(r.specs))
	for _, ev := range r.events {
		if ev.kind == evPush && ev.slot == 1 {
			slot[ev.id] = true
		}
	}
	n := map[[2]int]int{}
	for _, ev := range r.events {
		if ev.kind != evStart && ev.kind != evEnd || ev.id < 0 || !slot[ev.id] {
			continue
		}
		k := [2]int{r.specs[ev.id].ch, r.specs[ev.id].group}
		if ev.kind == evEnd {
			n[k]--
			continue
		}
		n[k]++
		if started != nil {
			started(k, n[k], ev.id)
		}
	}
	return n
}

// fzHandoffResult checks Handoff's result for heir h. closed: Close had
// started (exact: before the call; else: maybe only after it). Before Close
// a handoff is accepted, except to an unknown key (ErrUnknownKey; a first
// handoff never needs a free unit). During Close:
//   - with a limit, the heir of a task holding a worker goes through the
//     channel's Requeue: accepted into a complete-on-close channel; into a
//     dropping one refused once Close emptied it (ErrClosed), or accepted
//     just before and then dropped;
//   - without a limit Handoff is SubmitTask and says ErrClosed, although its
//     documentation also says it still queues the heir during Close; both
//     are accepted here until that is settled;
//   - to an unknown key it says ErrUnknownKey with a limit and ErrClosed
//     without one (SubmitTask's order), both accepted.
func fzHandoffResult(h *fzSpec, err error, closed, limited, exact bool) error {
	ok := false
	switch {
	case h.ch < 0:
		ok = errors.Is(err, smartpool.ErrUnknownKey) || closed && errors.Is(err, smartpool.ErrClosed)
	case err == nil:
		ok = true
	case errors.Is(err, smartpool.ErrClosed):
		ok = closed && !(exact && limited && fzLayout[h.ch].coc)
	}
	if !ok {
		return fmt.Errorf("to %d: %v", h.ch, err)
	}
	return nil
}

// ---------------------------------------------------------------------------
// H1: the reference model of one worker (levels highest first, each level's
// queues in rotation from the worker's cursor, FIFO / priority / deadline
// order inside a queue, a Multi's shards as separate queues, a Keyed channel
// as one queue that serves re-entries first, then its oldest task whose
// group has a free slot).
//
// A yield makes the exact order intractable: the resumption is pushed by the
// task's own goroutine while the worker goes on, so whether the worker polls
// it first, and how the rotation cursor moves, is a race. So the predicted
// order is checked exactly up to the start of the first task that yields;
// after that, each start is checked against what stays exact with one
// worker: no task its queue would serve first (a task ahead in its order;
// in a Keyed channel, a re-entry or an older task whose group has a free
// slot, known from the log, which brackets each slot's hold) is still
// queued, and no higher level holds such a task.
//
// What the model covers besides: the in-flight limit (the units held, from
// pushes, ends, handoffs and cancellations in the log, so a child's ErrFull
// is predicted), handoffs (no unit of their own; during Close through
// Requeue), and cancellation: a task that ended cancelled is a ghost, which
// the worker polls and skips (moving the cursor like a run), and a task whose
// context the test cancelled while the worker was pinned must end so: it
// must never start. What it does not cover
// makes the run degrade to the invariants before it gets here (see degrade):
// SetWorkers above one, and waiting WithContext submits that a freed unit
// admits. A cancellation the pool has not counted when the gate opens (the
// cancel op without waiting, just before the gate) makes the units unknown,
// so a child may then get nil or ErrFull; a Keyed SetLimit after the gate
// opened makes the group limit unknown, so the weak Keyed check skips groups
// with tasks in progress. A handoff into a dropping channel during Close that
// is accepted (Close had not emptied it yet) makes the order inexact: the
// worker may poll and drop it, moving its cursor.

type fzItem struct {
	id    int
	a, b  int64
	seq   int
	group int  // Keyed: the group whose slot it takes; -1: a re-entry (Requeue), outside the groups
	ghost bool // cancelled while queued: polled and skipped, never started
}

type fzModel struct {
	queues      [][]fzItem // per global queue
	cursor      [fzLevels]int
	exact       bool
	closed      bool
	seq         int
	running     map[[2]int]int // Keyed (channel, group): tasks started and not ended
	slot        map[int][2]int // task -> the Keyed (channel, group) slot it holds
	klimit      int
	klimitKnown bool
}

// before reports whether queue item o is served before it, in channel ch.
func (m *fzModel) before(ch int, o, it fzItem) bool {
	if fzLayout[ch].keyed {
		if (o.group < 0) != (it.group < 0) {
			return o.group < 0
		}
		return o.seq < it.seq
	}
	return o.a < it.a || o.a == it.a && (o.b < it.b || o.b == it.b && o.seq < it.seq)
}

// takes reports whether a poll of o's queue could return o now (a Keyed
// group with a free slot), and whether that is known; same: o is in the
// group of the task that was polled (whose group had a free slot).
func (m *fzModel) takes(ch int, o fzItem, same bool) (take, known bool) {
	if !fzLayout[ch].keyed || o.group < 0 || same {
		return true, true
	}
	n := m.running[[2]int{ch, o.group}]
	switch {
	case n == 0:
		return true, true
	case m.klimitKnown:
		return n < m.klimit, true
	}
	return false, false
}

func (m *fzModel) head(q int) int {
	ch, best := fzQueueCh[q], -1
	for i, it := range m.queues[q] {
		if take, _ := m.takes(ch, it, false); take && (best < 0 || m.before(ch, it, m.queues[q][best])) {
			best = i
		}
	}
	return best
}

func fzLevelRange(l int) (first, n int) {
	for q, c := range fzQueueCh {
		if fzLayout[c].level == l {
			if n == 0 {
				first = q
			}
			n++
		}
	}
	return first, n
}

// pick is worker.find with HighestFirst and pollLevel's rotation.
func (m *fzModel) pick() int {
	for l := range fzLevels {
		first, n := fzLevelRange(l)
		for k := range n {
			i := (m.cursor[l] + k) % n
			if m.head(first+i) >= 0 {
				m.cursor[l] = (i + 1) % n
				return first + i
			}
		}
	}
	return -1
}

func (m *fzModel) find(id int) (q, at int) {
	for i := range m.queues {
		for j, it := range m.queues[i] {
			if it.id == id {
				return i, j
			}
		}
	}
	return -1, -1
}

func (m *fzModel) remove(q, id int) {
	m.queues[q] = slices.DeleteFunc(m.queues[q], func(it fzItem) bool { return it.id == id })
}

func (m *fzModel) start(id int) error {
	q, at := m.find(id)
	if q < 0 {
		return fmt.Errorf("task %d started but is not queued (dropped at close, refused, or started twice)", id)
	}
	it, ch := m.queues[q][at], fzQueueCh[q]
	if it.ghost {
		return fmt.Errorf("task %d (%s) started, although the test had cancelled its WithContext context while it was queued and the only worker pinned",
			id, fzLayout[ch].key)
	}
	if m.exact && len(m.slot) > 0 {
		m.exact = false // cannot happen: a task in progress at a poll has yielded
	}
	if m.exact {
		for {
			p := m.pick()
			if p < 0 {
				return fmt.Errorf("task %d (queue %d) started; the model has nothing to run", id, q)
			}
			o := m.queues[p][m.head(p)]
			if o.ghost {
				m.remove(p, o.id) // polled and skipped
				continue
			}
			if o.id != id {
				return fmt.Errorf("task %d (queue %d) started; the model expected task %d (queue %d)", id, q, o.id, p)
			}
			break
		}
	} else {
		var skipped []int
		check := func(p int, o fzItem, same bool) error {
			if take, known := m.takes(fzQueueCh[p], o, same); !take || !known {
				return nil
			}
			if o.ghost {
				skipped = append(skipped, o.id) // polled and skipped before
				return nil
			}
			if p == q {
				return fmt.Errorf("task %d started ahead of task %d in queue %d", id, o.id, q)
			}
			return fmt.Errorf("task %d started on level %d while task %d waited in queue %d of a higher level",
				id, fzLayout[ch].level, o.id, p)
		}
		for _, o := range m.queues[q] {
			if o.id != id && m.before(ch, o, it) {
				if err := check(q, o, fzLayout[ch].keyed && o.group >= 0 && o.group == it.group); err != nil {
					return err
				}
			}
		}
		for p := range fzFirst[fzChans] {
			if fzLayout[fzQueueCh[p]].level < fzLayout[ch].level {
				for _, o := range m.queues[p] {
					if err := check(p, o, false); err != nil {
						return err
					}
				}
			}
		}
		for _, g := range skipped {
			gq, _ := m.find(g)
			m.remove(gq, g)
		}
	}
	m.remove(q, id)
	if fzLayout[ch].keyed && it.group >= 0 {
		k := [2]int{ch, it.group}
		m.slot[id] = k
		m.running[k]++
	}
	return nil
}

// checkOrder replays the one-worker log through the model.
func (r *fzRun) checkOrder() {
	t := r.t
	r.mu.Lock()
	events := slices.Clone(r.events)
	// Tasks that ended cancelled: whenever the cancellation came, it came
	// before the worker reached them, which skipped them there.
	ghost := make([]bool, len(r.specs))
	for id := range ghost {
		ghost[id] = r.accepted[id] == 1 && len(r.outcomes[id]) == 0 && r.ghostLocked(id)
	}
	r.mu.Unlock()
	m := &fzModel{queues: make([][]fzItem, fzFirst[fzChans]), exact: true,
		running: map[[2]int]int{}, slot: map[int][2]int{}, klimit: r.klimit, klimitKnown: true}
	// The in-flight limit: the units held (the gate's first), whether that
	// count is known, the limit in force, the tasks that handed their unit
	// on.
	held, heldKnown, limit, opened := 0, true, r.limit, false
	if r.limit > 0 {
		held = 1
	}
	handedOff := map[int]bool{}
	fail := func(i int, format string, args ...any) {
		var b strings.Builder
		for j, ev := range events[:i+1] {
			fmt.Fprintf(&b, "\n  %3d %+v", j, ev)
		}
		t.Fatalf("event %d: %s; log:%s", i, fmt.Sprintf(format, args...), b.String())
	}
	for i, ev := range events {
		switch ev.kind {
		case evPush:
			s, ch := r.specs[ev.id], fzQueueCh[ev.q]
			group := s.group
			if !ev.heir {
				held++
			} else if m.closed {
				if !fzLayout[ch].coc {
					// Requeued into a dropping channel Close had not emptied
					// yet: Close or the worker drops it (the ledger checks),
					// and the worker's cursor may move for it.
					m.exact = false
					continue
				}
				if fzLayout[ch].keyed {
					group = -1 // through Requeue: a re-entry, served first
				}
			}
			m.seq++
			m.queues[ev.q] = append(m.queues[ev.q], fzItem{id: ev.id, a: ev.a, b: ev.b, seq: m.seq, group: group, ghost: ghost[ev.id]})
		case evEnd:
			if ev.id < 0 || !handedOff[ev.id] {
				held--
			}
			if k, ok := m.slot[ev.id]; ok {
				m.running[k]--
				delete(m.slot, ev.id)
			}
		case evOpen:
			opened = true
		case evClose:
			m.closed, heldKnown = true, false
			for q := range m.queues {
				if !fzLayout[fzQueueCh[q]].coc {
					m.queues[q] = nil // dropped by Close; checkLedger checks they were
				}
			}
		case evCancel:
			q, at := m.find(ev.id)
			if q < 0 {
				fail(i, "task %d was cancelled while pinned but is not queued", ev.id)
			}
			m.queues[q][at].ghost = true
			if ev.resolved {
				held--
			} else {
				heldKnown = false // its unit comes back on the AfterFunc's goroutine, at no known point
			}
		case evLimit:
			limit = ev.n
		case evKLimit:
			if opened || r.maxWorkers > 1 {
				m.klimitKnown = false // it takes effect at no known point of a worker's run (logged before SetLimit)
			} else {
				m.klimit = ev.n
			}
		case evChild:
			unknown := r.specs[ev.id].ch < 0
			held := held
			if ev.err == nil {
				held-- // its push, logged before, took the unit
			}
			want := error(nil)
			switch {
			case m.closed:
				want = smartpool.ErrClosed
			case unknown:
				want = smartpool.ErrUnknownKey
			case r.limit > 0 && !heldKnown:
				if ev.err == nil || errors.Is(ev.err, smartpool.ErrFull) {
					continue
				}
				want = smartpool.ErrFull
			case r.limit > 0 && held >= limit:
				want = smartpool.ErrFull
			}
			if !errors.Is(ev.err, want) || (want == nil) != (ev.err == nil) {
				fail(i, "child %d: Submit returned %v, want %v (units held %d, limit %d)", ev.id, ev.err, want, held, limit)
			}
		case evHandoff:
			if err := fzHandoffResult(r.specs[ev.id], ev.err, m.closed, r.limit > 0, true); err != nil {
				fail(i, "handoff of task %d to task %d: %v", ev.from, ev.id, err)
			}
			if ev.err == nil && r.limit > 0 {
				handedOff[ev.from] = true
			}
		case evStart:
			if err := m.start(ev.id); err != nil {
				fail(i, "%v", err)
			}
			if r.specs[ev.id].yields > 0 {
				m.exact = false
			}
		}
	}
	for q, items := range m.queues {
		for _, it := range items {
			if fzLayout[fzQueueCh[q]].coc && !it.ghost {
				fail(len(events)-1, "complete-on-close task %d never started", it.id)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// H1: the driver

type fzCloseResult struct {
	rep *smartpool.Report[string]
	err error
}

// fzExec runs ops on a fresh pool of the given size. The gate task pins one
// worker (with one worker: all of them) until every op up to the first close
// is applied; then, depending on pinnedClose, Close starts while it is still
// pinned (queued DROP tasks all dropped) or the gate opens, the pool runs
// until every task finished or waits for a wake-up, and Close starts then.
// The ops after the first close run while the pool closes.
func fzExec(t *testing.T, workers int, h fzHeader, ops []fzOp, specs []*fzSpec) {
	baseline := runtime.NumGoroutine()
	r := newFzRun(t, workers, h, specs)
	b := r.behavior()
	r.reshaping = slices.ContainsFunc(ops, func(op fzOp) bool { return op.kind == opReshape })
	if r.reshaping {
		b.spare = make([]int, fzLevels) // any channel removable; a removed one's room is the room an add takes
	}
	o, err := smartpool.New[string](b)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r.o, r.pool = o, o.Pool()

	started, release := make(chan struct{}), make(chan struct{})
	if err := r.pool.Submit("gate", func(context.Context) {
		close(started)
		<-release
		r.log(fzEvent{kind: evEnd, id: -1})
	}); err != nil {
		t.Fatalf("gate: %v", err)
	}
	fzRecv(t, started, "the gate task starting")
	if r.limit > 0 {
		r.held = 1 // the gate's unit
	}
	open := func() {
		if r.opened {
			return
		}
		if r.exact && r.alivePending() > 0 && r.pool.State() == smartpool.Running {
			r.degrade() // units free as tasks end: the waiters' pushes race the worker
		}
		// Cancellations the pool has not been seen to count: the worker may
		// reach such a task before the context's AfterFunc claims it, and
		// must still skip it.
		for _, id := range r.unresolved {
			r.log(fzEvent{kind: evCancel, id: id})
		}
		r.unresolved = nil
		r.opened = true
		r.log(fzEvent{kind: evOpen})
		close(release)
	}
	closes := make(chan fzCloseResult, len(ops)+1)
	nCloses := 0
	launchClose := func() {
		nCloses++
		go func() {
			rep, err := o.Close(context.Background())
			closes <- fzCloseResult{rep, err}
		}()
	}
	closing := false
	var paused [fzChans]bool // channels an opPause paused and none resumed
	firstClose := func() {
		closing = true
		r.closeBegun, r.ownersAtClose = true, int(r.nestOwners.Load())
		if h.pinnedClose {
			if r.exact {
				r.resolve()
			}
			launchClose()
			if r.exact {
				// Until Close has emptied the DROP queues, the worker
				// could poll one of their tasks and drop it itself, which
				// moves its rotation cursor differently. Cancelled tasks
				// are not dropped again.
				want := uint64(0)
				r.mu.Lock()
				for _, ev := range r.events {
					if ev.kind == evPush && !fzLayout[fzQueueCh[ev.q]].coc {
						want++
					}
				}
				r.mu.Unlock()
				for i, l := range fzLayout {
					if !l.coc {
						want -= r.expCancelled[i]
					}
				}
				fzWait(t, "Close dropping the queued DROP tasks", func() error {
					if r.pool.State() < smartpool.Closing {
						return errors.New("Close has not started")
					}
					if got := r.pool.Stats().Total().Dropped; got != want {
						return fmt.Errorf("%d dropped, want %d", got, want)
					}
					return nil
				})
				r.log(fzEvent{kind: evClose, id: -1})
			}
			open()
		} else {
			// Paused channels would never settle: resumed, they run their
			// tasks (a pinned Close is the one that meets them paused).
			for ch, p := range paused {
				if p {
					if err := r.pool.Resume(fzLayout[ch].key); err != nil && !errors.Is(err, smartpool.ErrClosed) &&
						!(errors.Is(err, smartpool.ErrUnknownKey) && r.reshaping && r.chState(ch) != fzLive) {
						t.Fatalf("Resume(%s): %v", fzLayout[ch].key, err)
					}
				}
			}
			open()
			fzWait(t, "the pool settling before Close", r.settled)
			r.log(fzEvent{kind: evClose, id: -1}) // nothing is queued: its place in the log is exact
			launchClose()
		}
		if r.exact {
			fzWait(t, "Close starting", func() error {
				if r.pool.State() < smartpool.Closing {
					return errors.New("still running")
				}
				return nil
			})
		}
	}
	// With one worker every result is known (until the run degrades). With
	// two, a submit may race a Close started from inside a task, or the
	// test's own Close, which runs on its own goroutine: ErrClosed is then
	// fine once the pool says so; and tasks end while the test submits, so
	// ErrFull is fine at any time in a pool with a limit.
	expect := func(what string, err, want error, loose ...error) {
		t.Helper()
		if r.exact {
			if (want == nil) != (err == nil) || !errors.Is(err, want) {
				t.Fatalf("%s: %v, want %v", what, err, want)
			}
			return
		}
		if errors.Is(err, smartpool.ErrClosed) {
			if st := r.pool.State(); st < smartpool.Closing {
				t.Fatalf("%s: ErrClosed while the pool is %v", what, st)
			}
			return
		}
		for _, e := range loose {
			if e == nil && err == nil || e != nil && errors.Is(err, e) {
				return
			}
		}
		t.Fatalf("%s: %v, want one of %v or ErrClosed", what, err, loose)
	}
	checkSubmit := func(what string, err error, unknown bool) {
		t.Helper()
		want, loose := error(nil), []error{nil}
		full := r.limit > 0 && !unknown
		switch {
		case unknown:
			loose = []error{smartpool.ErrUnknownKey}
		case full:
			loose = append(loose, smartpool.ErrFull)
		}
		switch {
		case closing:
			want = smartpool.ErrClosed
		case unknown:
			want = smartpool.ErrUnknownKey
		case full && r.held >= r.curLimit:
			want = smartpool.ErrFull
		}
		expect(what, err, want, loose...)
		if r.exact && !closing && err == nil && !unknown {
			r.held++
		}
	}
	// submitCtx submits with WithContext on its own goroutine and waits until it
	// returns or waits for a unit (Stats.Waiting rises above the calls left
	// waiting before); a waiting one is cancelled at once or left waiting.
	submitCtx := func(s *fzSpec) {
		t.Helper()
		key := fzLayout[s.ch].key
		what := fmt.Sprintf("Submit with WithContext of task %d to %s", s.id, key)
		ctx, cancel := context.WithCancel(context.Background())
		r.cancels[s.id] = cancel
		res := make(chan error, 1)
		go func() {
			res <- r.push(s, false, func(task smartpool.Task) (int, error) {
				return 0, r.pool.SubmitTask(key, task, smartpool.WithContext(ctx))
			})
		}()
		mustWait := r.limit > 0 && !closing && r.held >= r.curLimit // exact phase
		waiting := false
		fzWait(t, what+" returning or waiting for a unit", func() error {
			if len(res) > 0 {
				return nil
			}
			// Count the earlier waiters first: they only leave, so a Waiting
			// read after them above their count is this submit's.
			if alive := r.alivePending(); r.limit > 0 && r.pool.Stats().Waiting > alive {
				waiting = true
				return nil
			}
			return errors.New("neither")
		})
		if r.exact && waiting != mustWait {
			t.Fatalf("%s: waits for a unit %v, want %v (%d held, limit %d)", what, waiting, mustWait, r.held, r.curLimit)
		}
		if waiting && s.pend {
			r.pending[s.id] = res
			r.nPending++
			return
		}
		want := error(nil)
		if closing {
			want = smartpool.ErrClosed
		}
		loose := []error{nil}
		if waiting {
			r.cancelled[s.id] = true
			r.nCancels++
			cancel()
			want = context.Canceled
			loose = append(loose, context.Canceled) // nil: a unit freed just before
		}
		err := fzRecv(t, res, what)
		expect(what, err, want, loose...)
		if r.exact && !closing && err == nil {
			r.held++
		}
	}
	for _, op := range ops {
		if r.exact && !closing && op.kind != opClose && op.kind != opCloseCancelled {
			r.resolve()
		}
		switch op.kind {
		case opSubmit:
			s := specs[op.id]
			if r.reshaping && r.chState(s.ch) != fzLive {
				r.submitGone(s)
				break
			}
			if s.ctx {
				submitCtx(s)
				break
			}
			checkSubmit(fmt.Sprintf("submit %d to %s (typed %v)", s.id, fzLayout[s.ch].key, s.typed), r.submit(s, s.typed), false)
		case opWake:
			r.wakeTask(op.id)
		case opClose, opCloseCancelled:
			switch {
			case !closing:
				firstClose()
			case op.kind == opClose:
				launchClose()
			default:
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				rep, err := o.Close(ctx)
				switch {
				case err == nil && rep != nil:
					select {
					case <-o.Done():
					default:
						t.Fatal("Close with a cancelled context returned a report before Done")
					}
				case errors.Is(err, context.Canceled) && rep != nil: // the stats at that moment
				default:
					t.Fatalf("Close with a cancelled context: %v, %v", rep, err)
				}
			}
		case opUnknown:
			checkSubmit("submit to an unknown key", r.pool.Submit("nope", func(context.Context) { r.phantom.Add(1) }), true)
		case opNil:
			key := fzLayout[op.ch].key
			phantom := smartpool.Func(func(context.Context) { r.phantom.Add(1) })
			for what, err := range map[string]error{
				"Submit(nil)":              r.pool.Submit(key, nil),
				"SubmitTask(nil)":          r.pool.SubmitTask(key, nil),
				"Submit(nope, nil)":        r.pool.Submit("nope", nil),
				"Source.Push(nil)":         src(r.chans[op.ch].c).Push(nil, smartpool.Order{}),
				"Submit(nil, WithContext)": r.pool.Submit(key, nil, smartpool.WithContext(context.Background())),
				"Keyed.SubmitTask(g, nil)": r.keyed[0].SubmitTask(op.ch%4, nil),
				"Keyed.Submit(g, nil)":     r.keyed[1].Submit(op.ch%4, nil),
			} {
				if !errors.Is(err, smartpool.ErrNilTask) {
					t.Fatalf("%s on %s: %v, want ErrNilTask", what, key, err)
				}
			}
			if err := r.pool.Handoff(context.Background(), key, phantom); !errors.Is(err, smartpool.ErrNotInTask) {
				t.Fatalf("Handoff outside a task: %v, want ErrNotInTask", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			want := error(context.Canceled)
			if closing {
				want = smartpool.ErrClosed
			}
			loose := []error{context.Canceled}
			if r.reshaping && r.chState(op.ch) != fzLive {
				loose = append(loose, smartpool.ErrUnknownKey, smartpool.ErrClosed) // exact no more: a reshape degraded the run
			}
			expect("Submit with WithContext of a cancelled context", r.pool.Submit(key, phantom, smartpool.WithContext(ctx)), want, loose...)
		case opStats:
			s := r.liveStats()
			if err := r.checkShape(s, true); err != nil {
				t.Fatal(err)
			}
			if r.exact && !closing {
				if err := r.checkPinned(s); err != nil {
					t.Fatal(err)
				}
			}
		case opSetLimit:
			if r.limit > 0 && int64(op.n) > r.maxLimit.Load() {
				r.maxLimit.Store(int64(op.n)) // before the limit can admit more
			}
			waiters := r.alivePending() // before SetLimit, which may let them through
			err := r.pool.SetLimit(op.n)
			want := error(nil)
			switch { // bad values first, then a closed pool
			case r.limit == 0:
				want = smartpool.ErrConfig
			case op.n < 0: // 0 admits nothing until raised
				want = smartpool.ErrBadLimit
			case closing && (r.exact || errors.Is(err, smartpool.ErrClosed)):
				want = smartpool.ErrClosed // with two workers, Close may not have started yet
			case errors.Is(err, smartpool.ErrClosed) && r.pool.State() >= smartpool.Closing:
				want = smartpool.ErrClosed // a closer task closed it
			}
			if (want == nil) != (err == nil) || !errors.Is(err, want) {
				t.Fatalf("SetLimit(%d): %v, want %v", op.n, err, want)
			}
			if err == nil {
				if r.exact && !closing && waiters > 0 && r.held < op.n {
					r.degrade() // a waiting WithContext submit takes the room
				}
				r.curLimit = op.n
				r.log(fzEvent{kind: evLimit, n: op.n})
			}
		case opSetWorkers:
			if op.n > r.maxWorkers && op.n <= smartpool.MaxWorkers {
				r.maxWorkers = op.n
			}
			err := r.pool.SetWorkers(op.n)
			want := error(nil)
			switch {
			case op.n < 1, op.n > smartpool.MaxWorkers:
				want = smartpool.RuleWorkers
			case closing:
				want = smartpool.ErrClosed
			}
			if op.n < 1 || op.n > smartpool.MaxWorkers {
				if !errors.Is(err, want) {
					t.Fatalf("SetWorkers(%d): %v, want %v", op.n, err, want)
				}
			} else {
				expect(fmt.Sprintf("SetWorkers(%d)", op.n), err, want, nil)
			}
			if err == nil {
				r.target = op.n
				if op.n > 1 && r.exact {
					r.degrade() // a second worker runs what the gate holds back
				}
			}
		case opCancel:
			id := op.id
			if r.cancelled[id] || r.cancels[id] == nil {
				break
			}
			r.cancelled[id] = true
			r.nCancels++
			what := fmt.Sprintf("Submit with WithContext of task %d, cancelled while it waits", id)
			if res, ok := r.pending[id]; ok {
				delete(r.pending, id)
				r.cancels[id]()
				// Exact: nothing freed a unit since it began to wait; but a
				// Close since then released it with ErrClosed first.
				err := fzRecv(t, res, what)
				want := context.Canceled
				if closing {
					want = smartpool.ErrClosed
				}
				expect(what, err, want, nil, context.Canceled)
				break
			}
			r.mu.Lock()
			queued := r.accepted[id] == 1
			r.mu.Unlock()
			if queued && r.exact && !closing && r.limit > 0 && r.alivePending() > 0 {
				r.degrade() // its unit goes to a waiting WithContext submit
			}
			r.cancels[id]()
			if queued && r.exact && !closing {
				r.unresolved = append(r.unresolved, id)
				if op.wait {
					r.resolve()
				}
			}
		case opSide:
			// The model knows neither the side tasks' units nor their
			// drops: the one-worker run keeps only the invariants.
			r.degrade()
			r.sideOp(op.n)
		case opNest:
			r.degrade() // the model does not know the nests' tasks either
			r.nestOp(op.n)
		case opReshape:
			if op.n == 3 {
				// The removal in flight waits for the gate (the grace: every
				// worker starts a new turn) and, draining, for its tasks:
				// open the gate, resume the channel, wake its tasks, wait.
				r.rmMu.Lock()
				rm := r.rmPending
				r.rmMu.Unlock()
				if rm == nil {
					break
				}
				if r.alivePending() > 0 || r.nestOwners.Load() > 0 {
					// A by-key call waiting for a unit (a WithContext submit
					// left waiting, a nest owner's Go) stays pinned, and the
					// removal returns only after the by-key callers' grace
					// (reshape.go, 6): wait for it after Close, which ends
					// those waits (reshapeDone).
					break
				}
				open()
				if paused[rm.ch] {
					if err := r.pool.Resume(fzLayout[rm.ch].key); err != nil && !errors.Is(err, smartpool.ErrClosed) && !errors.Is(err, smartpool.ErrUnknownKey) {
						t.Fatalf("Resume(%s) while it is removed: %v", fzLayout[rm.ch].key, err)
					}
					paused[rm.ch] = false
				}
				for id, sp := range specs {
					if sp.ch == rm.ch {
						r.wakeTask(id)
					}
				}
				r.collect(true)
				break
			}
			r.reshapeOp(op, closing)
		case opPause:
			// The order model does not know paused channels: a pause
			// keeps the invariants only, Close's counts among them.
			key := fzLayout[op.ch].key
			pause := op.n == 0
			var err error
			if pause {
				err = r.pool.Pause(key)
			} else {
				err = r.pool.Resume(key)
			}
			switch {
			case err == nil && closing && r.exact:
				t.Fatalf("Pause/Resume(%s) after Close: nil, want ErrClosed", key)
			case err == nil:
				if pause {
					r.degrade()
				}
				paused[op.ch] = pause
			case errors.Is(err, smartpool.ErrClosed) && (closing || r.pool.State() >= smartpool.Closing):
			case errors.Is(err, smartpool.ErrClosed) && r.reshaping && r.chState(op.ch) != fzLive:
				// Being removed: RemoveChannel's doc says Pause and Resume return ErrClosed then.
			case errors.Is(err, smartpool.ErrUnknownKey) && r.reshaping && r.chState(op.ch) != fzLive:
			default:
				t.Fatalf("Pause/Resume(%s): %v", key, err)
			}
		case opKeyedLimit:
			r.kMax = max(r.kMax, op.n)
			if op.n >= 1 {
				// Logged before the calls: a worker may start a task under
				// the new limit before SetLimit returns, and the check
				// must not take that start for one under the old limit.
				r.kCur = op.n
				r.log(fzEvent{kind: evKLimit, n: op.n})
			}
			for _, k := range r.keyed {
				err := k.SetLimit(op.n)
				if (op.n < 1) != errors.Is(err, smartpool.ErrBadLimit) || op.n >= 1 && err != nil {
					t.Fatalf("Keyed.SetLimit(%d): %v", op.n, err)
				}
			}
		}
	}
	if !closing {
		firstClose()
	}
	open()
	for id := range specs {
		r.wakeTask(id)
	}
	close(r.sideWake)

	var rep *smartpool.Report[string]
	for range nCloses {
		res := fzRecv(t, closes, "Close")
		if res.err != nil || res.rep == nil {
			t.Fatalf("Close: %v, %v", res.rep, res.err)
		}
		if rep == nil {
			rep = res.rep
			r.checkReport(rep)
		} else if res.rep != rep {
			t.Fatalf("two Close calls returned different reports")
		}
	}
	// A WithContext submit left waiting returns when Close starts (ErrClosed),
	// or, once the run degraded, maybe with a unit freed before.
	for id, res := range r.pending {
		what := fmt.Sprintf("Submit with WithContext of task %d, left waiting", id)
		if err := fzRecv(t, res, what); !errors.Is(err, smartpool.ErrClosed) && !(err == nil && !r.exact) {
			t.Fatalf("%s: %v, want ErrClosed", what, err)
		}
	}
	// Suspended DROP tasks end (dropped) on their own goroutines after Close.
	fzWait(t, "every accepted task reaching an outcome", r.allDone)
	r.reshapeDone()
	fzWait(t, "every side task ending, its Future or Group resolved", r.sideDone)
	r.checkNests()
	fzWait(t, "final stats matching the ledger", r.countsMatch)
	fzWait(t, "OnEnd's books matching the final stats", r.booksMatch)
	r.checkLedger()
	r.checkSide()
	if r.exact && !t.Failed() {
		r.checkOrder()
	}
	for _, cancel := range r.cancels {
		if cancel != nil {
			cancel()
		}
	}
	fzWait(t, "goroutines back to the baseline", func() error {
		if n := runtime.NumGoroutine(); n > baseline {
			return fmt.Errorf("%d goroutines, %d before the pool", n, baseline)
		}
		return nil
	})
}

// H1 FuzzPoolOps: random operation sequences on a real pool, with one worker
// against the reference model and with two against the invariants.
func FuzzPoolOps(f *testing.F) {
	const (
		hiF, hiP, midD, midF, midM, loP, loM, loF = 0, 1, 2, 3, 4, 5, 6, 7
		// heirs: indexes into fzHeirs
		toHiF, toHiP, toMidD, toMidF, toLoP, toLoF, toKC, toKD, toNope = 0, 1, 2, 3, 4, 5, 6, 7, 8
	)
	all := func(s fzSeed, kind byte) fzSeed {
		return s.each(func(s fzSeed, i int) fzSeed { return s.submit(i, i, kind) }, fzAddr)
	}
	cb := func(ch, param int) byte { return byte(ch | param<<3) }
	seeds := []fzSeed{
		// Paused channels met by Close: every channel's tasks queued, half
		// of the channels paused (one resumed again), Close while pinned:
		// the complete-on-close ones run, the dropping ones are dropped.
		all(fzStartX(true, 0, 2), 0).pause(hiF).pause(hiP).pause(midM).pause(loM).pause(fzKC).pause(fzKD).
			resume(midM).stats().close().pause(loF).resume(hiF).stats(),
		// Paused while a limit holds: SetLimit(0) admits nothing, paused
		// tasks keep their units; resumed before the unpinned Close.
		all(fzStartX(false, 4, 1), kYield1).pause(midD).pause(loP).setLimit(0).submit(hiF, 0, 0).
			pause(hiF).setLimit(3).resume(midD).stats().close(),
		// Submit racing shutdown: a full queue, Close while pinned, then
		// submits of every kind after it, by key and through the channel.
		all(all(fzStart(true), 0), kTyped).close().
			submit(hiF, 0, 0).submit(loM, 3, kTyped).submit(midD, 2, kTyped).unknown().nilSubmit(loF).stats(),
		// Shutdown with blocked work: tasks of every channel suspended on
		// wake-ups that come only after Close started.
		all(fzStart(false), kYield1|kBlock).stats().close().stats().
			each(func(s fzSeed, i int) fzSeed { return s.wake(i) }, fzAddr),
		// Panicking tasks, before and after a yield, between normal ones:
		// the worker lives on and each panic reaches the handler once.
		all(all(fzStart(false), kPanic), kYield2|kPanic).submit(hiF, 0, 0).submit(loP, 1, kTyped).close(),
		// Re-entrant submit: every channel and an unknown key from inside
		// tasks, before Close ...
		fzStart(false).each(func(s fzSeed, i int) fzSeed { return s.submit(i, i, kChild) }, 9).close(),
		// ... and while Close drains (every child refused).
		all(fzStart(true), kChild|kYield1).close().closeCancelled(),
		// Shutdown from inside a task, with DROP and COC work queued behind
		// it, and a closer that then yields across its own close.
		fzStart(false).submit(midF, 0, kCloser).submit(loF, 0, 0).submit(loM, 1, kTyped).
			submit(loP, 4, kTyped).submit(loP, 5, kTyped|kCloser|kYield1).submit(hiP, 2, kCloser|kYield2),
		// Goexit in a task: on the worker, after yields, COC and DROP.
		all(all(fzStart(false), kGoexit), kGoexit|kYield3).submit(hiF, 0, 0).close(),
		// Yields across close: COC tasks suspended while Close drains, woken
		// after it, plus second and cancelled closes while it waits.
		fzStart(true).submit(hiF, 0, kYield2|kBlock).submit(midD, 3, kYield1|kBlock|kTyped).
			submit(midM, 0, kYield3|kBlock).submit(loP, 6, kYield1|kBlock|kTyped).close().close().closeCancelled().
			wake(0).stats().wake(1).wake(2).close().wake(3),
		// DROP tasks suspended at Close and woken after it: dropped once,
		// their goroutines end (background goroutines after close).
		fzStart(false).submit(hiP, 0, kYield1|kBlock).submit(midF, 0, kYield2|kBlock).
			submit(loF, 0, kYield1|kBlock).submit(loM, 0, kYield3|kBlock|kTyped).close().stats().wake(2).wake(0),
		// Deadline and priority order, by key and typed, extremes included.
		fzStart(false).each(func(s fzSeed, i int) fzSeed {
			return s.submit([]int{midD, hiP, loP, loM}[i%4], (i*5)%32, byte(i%2)*kTyped)
		}, 32).stats().close(),
		// Multi shards and the level rotation: interleaved submits to the
		// channels sharing levels 1 and 2, with the COC queues drained
		// after a pinned Close.
		fzStart(true).each(func(s fzSeed, i int) fzSeed {
			return s.submit([]int{midM, midD, loM, loP, midM, loF, midF}[i%7], i, byte(i%3/2)*kTyped)
		}, 35).stats().close(),
		// Followups into a higher level: yields with immediate waits from
		// the low channels, COC and DROP (loF follows up into hiF).
		fzStart(false).submit(loP, 0, kYield3).submit(loF, 0, kYield2).submit(midD, 1, kYield1|kTyped).
			submit(midM, 0, kYield2).submit(loM, 0, kYield1).submit(midF, 0, kYield3).submit(loP, 0, 0).submit(hiF, 0, 0).close(),
		// Bad calls: nil and unknown-key submits before and after Close.
		fzStart(false).each(func(s fzSeed, i int) fzSeed { return s.nilSubmit(i) }, fzAddr).unknown().
			submit(hiF, 0, 0).close().unknown().each(func(s fzSeed, i int) fzSeed { return s.nilSubmit(i) }, fzAddr),
		// Wake-ups before the task runs and twice over.
		fzStart(false).submit(midD, 0, kYield3|kBlock).wake(0).wake(0).submit(hiP, 0, kYield2|kBlock).
			wake(1).close().wake(1).wake(0),
		// Nothing: the implicit Close of an idle pool; then two closes.
		{},
		fzStart(true).close().close(),

		// The in-flight limit (the gate holds a unit): submits of every
		// kind refused with ErrFull while pinned, SetLimit raising it
		// (more admitted at once), lowering it (nothing revoked, admission
		// stops), bad values.
		fzStartX(false, 3, 1).submit(hiF, 0, 0).submit(loP, 3, kTyped).submit(midF, 0, 0).
			keyed(false, 1, 0, kTyped, 0).submit(loM, 1, kTyped).unknown().stats().setLimit(6).
			submit(midM, 0, 0).submit(loM, 2, kTyped).keyed(false, 2, 0, kTyped, 0).keyed(true, 1, 0, kTyped, 0).
			stats().setLimit(1).submit(hiF, 0, 0).setLimit(-1).setLimit(0).stats().close().setLimit(2).stats(),
		// ... the same with Close while pinned.
		fzStartX(true, 2, 1).submit(midF, 0, 0).submit(hiF, 0, 0).stats().setLimit(4).submit(hiF, 0, 0).
			submit(loF, 0, 0).close().submit(hiF, 0, 0).setLimit(1).stats(),
		// A child refused with ErrFull: a task holds its unit while it
		// waits, its child and another's fill the limit.
		fzStartX(false, 3, 1).submit(hiF, loF, kChild|kYield1|kBlock).submit(hiP, loF, kChild).close().wake(0),
		// WithContext at the limit: one waiting and cancelled at once
		// (context.Canceled), one left waiting (Stats.Waiting) that Close
		// releases with ErrClosed; pinned and not.
		fzStartX(true, 2, 1).submit(hiF, 0, 0).submitCtx(midF, 0, 0, false).submitCtx(loF, 0, 0, true).
			stats().submitCtx(hiP, 0, 0, true).stats().close().stats(),
		fzStartX(false, 2, 1).submit(hiF, 0, 0).submitCtx(midF, 0, 0, false).submitCtx(loF, 0, 0, true).stats().close(),
		// Cancellation of queued tasks: counted, units back at once,
		// skipped by the worker (its cursor moves); a second cancel is a
		// no-op; the freed room admits a submit; a DROP one is not
		// dropped again at a pinned Close.
		fzStartX(false, 4, 1).submitCtx(hiF, 0, 0, false).submitCtx(loF, 0, 0, false).submitCtx(midM, 0, 0, false).
			cancel(0, true).stats().cancel(1, true).cancel(0, true).submit(hiF, 0, 0).stats().close(),
		fzStartX(true, 0, 1).submitCtx(loF, 0, 0, false).submitCtx(hiP, 0, kYield1, false).submitCtx(hiF, 0, 0, false).
			cancel(0, true).cancel(2, true).stats().close().cancel(1, true),
		// A cancel op that does not wait: the next op sees it counted.
		fzStartX(false, 3, 1).submitCtx(midF, 0, 0, false).submitCtx(midD, 0, 0, false).cancel(1, false).stats().
			submit(hiF, 0, 0).cancel(0, false).xstats().close(),
		// A raised limit and a cancellation admit waiting submitters: the
		// one-worker run degrades to the invariants.
		fzStartX(false, 2, 1).submit(hiF, 0, 0).submitCtx(loF, 0, 0, true).setLimit(3).stats().
			submitCtx(midF, 0, 0, true).submitCtx(hiP, 0, 0, false).close(),
		fzStartX(false, 3, 1).submitCtx(hiF, 0, 0, false).submitCtx(loF, 0, 0, true).cancel(0, true).stats().close(),
		// Handoff: before and after yields, to every kind of heir (a Keyed
		// channel, an unknown key), the heir panicking or calling Goexit;
		// with a full limit a chain still runs through.
		fzStartX(false, 3, 1).handoff(0, cb(hiF, 0), 0, toKC, false, 0).
			handoff(0, cb(loP, 1), kYield1|kTyped, toMidD, true, 1).handoff(0, cb(midF, 0), kChild, toNope, false, 0).
			close(),
		fzStartX(false, 2, 1).handoff(0, cb(loF, 0), kYield1|kBlock, toHiF, true, 2).
			handoff(0, cb(hiP, 0), 0, toLoP, false, 0).stats().close().wake(0),
		// Handoff while Close drains, with and without a limit: into a
		// complete-on-close channel it continues (Requeue), into a
		// dropping one it is refused.
		fzStartX(true, 4, 1).handoff(0, cb(hiF, 0), 0, toMidD, false, 0).handoff(0, cb(loP, 2), kTyped, toKC, false, 0).
			handoff(0, cb(midM, 0), 0, toLoF, false, 0).handoff(0, cb(loF, 0), 0, toHiF, false, 0).close(),
		fzStartX(true, 0, 1).handoff(0, cb(hiF, 0), 0, toMidD, false, 0).handoff(0, cb(loP, 2), kTyped, toKD, false, 0).
			handoff(0, cb(midD, 1), kTyped, toNope, false, 0).close(),
		// ... late, from a task woken after Close, and from a closer.
		fzStartX(false, 3, 1).handoff(0, cb(hiF, 0), kYield1|kBlock, toKC, true, 0).
			handoff(0, cb(midD, 0), kYield1|kBlock|kTyped, toHiP, true, 0).close().wake(0).wake(2),
		fzStartX(false, 3, 1).handoff(0, cb(midF, 0), kCloser, toHiF, false, 0).
			handoff(0, cb(loP, 0), kCloser|kYield1, toKC, true, 1).submit(loF, 0, 0),
		// SetWorkers: bad values, a grow while pinned (the one-worker run
		// degrades), a shrink, ErrClosed after Close.
		fzStartX(false, 0, 1).setWorkers(0).setWorkers(-1).setWorkers(smartpool.MaxWorkers+1).submit(hiF, 0, 0).
			setWorkers(1).stats().setWorkers(3).submit(loF, 0, kYield1).submit(midM, 0, 0).stats().setWorkers(2).
			close().setWorkers(1).setWorkers(0).stats(),
		fzStartX(true, 3, 1).submit(hiF, 0, kYield1|kBlock).setWorkers(2).submit(loF, 0, 0).close().setWorkers(3).wake(0),
		// Keyed: groups at their limit while a task waits holding its slot,
		// others served past them, by key into group 0, a dropping Keyed
		// emptied at Close; bad and raised limits.
		fzStartX(false, 0, 1).keyed(false, 0, 0, kYield1|kBlock|kTyped, 0).keyed(false, 0, 0, kTyped, 0).
			keyed(false, 1, 0, kTyped, 0).keyed(true, 2, 0, kTyped|kYield1|kBlock, 0).keyed(true, 2, 0, kTyped, 0).
			keyed(false, 0, 0, 0, 0).stats().keyedLimit(0).keyedLimit(2).close().wake(0).wake(3),
		fzStartX(true, 0, 2).keyed(false, 0, 0, kTyped|kYield2, 0).keyed(false, 0, 0, kTyped|kYield1, 0).
			keyed(false, 0, 0, kTyped, 0).keyed(true, 1, 0, kTyped|kYield1|kBlock, 0).keyed(true, 1, 0, kTyped, 0).
			keyed(false, 3, 0, kTyped|kPanic, 0).keyed(false, 3, 0, kTyped|kGoexit, 0).close().keyedLimit(1).wake(3),
		// Keyed with the in-flight limit, WithContext and cancellation
		// through the Keyed's wrapper, and a limit change after the gate.
		fzStartX(false, 4, 1).keyed(false, 0, 0, 0, fCtx).keyed(true, 0, 0, 0, fCtx).cancel(0, true).
			keyed(false, 0, 0, kYield1, 0).keyed(false, 1, 0, kTyped|kYield2, 0).keyed(false, 1, 0, kTyped, 0).
			stats().close().keyedLimit(3).cancel(1, false),
		// Side tasks (opSide). DropLate: late on arrival through the
		// channel's own submit, by key (Go, Group.Go: never late on
		// arrival), on time, with a yield; with the in-flight limit.
		fzStartX(false, 4, 1).side(0, sideOwn, 0, true, false).side(0, sideFuture, 0, true, false).
			side(0, sideGo, 0, false, false).side(0, sideGroup, 1, false, false).side(0, sideOwn, 2, false, true).
			side(0, sideFuture, 0, false, false).close(),
		// DropOldest: each submit to the full channel displaces the one
		// before it, whatever its entry; the last one runs.
		fzStartX(false, 0, 1).side(1, sideOwn, 0, false, false).side(1, sideFuture, 0, false, false).
			side(1, sideGo, 1, false, false).side(1, sideGroup, 2, false, false).side(1, sideOwn, 0, false, true).close(),
		// CallerRuns: the first fills the channel, the rest run on their
		// submitter: returning, panicking, calling Goexit, by every entry.
		fzStartX(false, 0, 1).side(2, sideOwn, 0, false, false).side(2, sideOwn, 1, false, false).
			side(2, sideFuture, 2, false, false).side(2, sideGo, 1, false, false).side(2, sideGroup, 2, false, false).
			side(2, sideGo, 2, false, false).side(2, sideFuture, 0, false, true).close(),
		// Side tasks of the channels' own submits, on time and with room:
		// they run and end every way, or Close drops them; then refused.
		fzStartX(true, 3, 1).side(0, sideOwn, 0, false, false).side(1, sideOwn, 2, false, false).
			side(2, sideOwn, 1, false, false).close().side(0, sideOwn, 0, false, false).side(1, sideGo, 0, false, false).
			side(2, sideGroup, 0, false, false),
		// Side tasks dropped by a pinned Close, then one refused after it
		// (with two workers it may race the Close and run).
		fzStartX(true, 3, 1).side(0, sideOwn, 0, false, false).side(1, sideFuture, 0, false, false).
			side(2, sideGroup, 0, false, false).close().side(0, sideOwn, 0, false, false),
		// Side tasks that run on a worker and end every way, then tasks
		// suspended at Close and dropped when they wake.
		fzStartX(false, 0, 1).side(0, sideOwn, 0, false, false).side(2, sideOwn, 1, false, false).stats().
			side(1, sideOwn, 2, false, false).side(0, sideOwn, 1, false, true).side(2, sideFuture, 0, false, true).
			side(1, sideGroup, 0, false, true).side(0, sideGo, 2, false, true).close(),
		// Side tasks among modelled ones, a lowered limit refusing them
		// (ErrFull: Go's Future and the Group report it), a waiting task.
		fzStartX(false, 5, 2).submit(hiF, 0, kYield1|kBlock).side(0, sideGo, 1, false, true).setLimit(2).
			side(1, sideGroup, 0, false, false).side(2, sideGo, 0, false, false).side(0, sideOwn, 0, true, false).
			setLimit(6).side(2, sideOwn, 0, false, true).side(2, sideOwn, 2, false, false).close().wake(0),
		// Nested group spawning at the group's and the pool's limit (the
		// errgroup crawler): deep and narrow, yielding, spread over
		// channels; a pinned close; a nest started while Close drains.
		fzStartX(false, 2, 1).nest(0, 4, 2, false, false).nest(1, 3, 1, true, true).stats().close(),
		fzStartX(true, 1, 1).nest(2, 4, 2, true, false).nest(0, 2, 1, false, true).close(),
		fzStartX(false, 0, 1).nest(0, 4, 1, false, true).submit(hiF, 0, kYield1|kBlock).nest(1, 2, 3, true, false).
			close().wake(0).nest(2, 2, 2, false, false),
		// Reshaping (opReshape; fzRemovable indexes: 0 hiP, 1 midF, 2 midM,
		// 3 loM, 4 loF). Drain while pinned: the queued tasks run once the
		// gate opens; submits by key and typed refused meanwhile and after;
		// the key added again serves submits.
		all(fzStartX(false, 0, 1), 0).reshape(4, 0).submit(loF, 0, 0).submit(loF, 1, kTyped).stats().reshape(4, 3).
			submit(loF, 0, 0).reshape(4, 2).submit(loF, 0, 0).submit(loF, 0, kTyped).stats().close(),
		// Drop of a complete-on-close Multi: queued tasks dropped, one
		// yielded on a wake re-enters through its followup (hiF) and runs;
		// added again and used, with a limit.
		fzStartX(false, 3, 1).submit(midM, 0, kYield1|kBlock).submit(midM, 0, 0).submit(midM, 1, kTyped).
			reshape(2, 1).stats().reshape(2, 3).reshape(2, 2).submit(midM, 0, 0).submit(midM, 0, kTyped).close(),
		// The followup rule: hiP (midF's followup) and midF (loM's) refused
		// while those are present; removed in order, added back in the
		// reverse order (midF refused until hiP is back).
		all(fzStartX(false, 0, 1), kYield1).reshape(0, 0).reshape(1, 1).reshape(3, 1).reshape(3, 3).
			reshape(1, 0).reshape(1, 3).reshape(0, 1).reshape(0, 3).reshape(1, 2).reshape(0, 2).reshape(1, 2).
			reshape(3, 2).each(func(s fzSeed, i int) fzSeed { return s.submit(i, i, kTyped) }, fzAddr).close(),
		// Close during a removal, pinned: the removal ends with Close; a
		// removal after Close is refused; adding after it too.
		all(fzStartX(true, 3, 1), kYield1).reshape(4, 0).close().reshape(4, 1).reshape(3, 0).reshape(4, 2).stats(),
		// Children and heirs into a channel being removed and removed.
		fzStartX(false, 0, 1).submit(hiF, loF, kChild|kYield1|kBlock).handoff(0, cb(hiP, 0), kYield1|kBlock, toLoF, true, 0).
			submit(loF, 0, kYield1|kBlock).reshape(4, 1).wake(0).reshape(4, 3).wake(1).submit(midF, loF, kChild).close(),
		// A paused channel removed with Drain: it runs once resumed.
		all(fzStartX(false, 2, 1), 0).pause(loM).reshape(3, 0).stats().reshape(3, 3).reshape(3, 2).
			submit(loM, 2, kTyped).pause(loM).close(),
		// Everything at once.
		fzStartX(false, 5, 2).submit(hiF, midF, kChild|kYield1).submitCtx(loP, 1, kYield2, false).
			handoff(fCtx, cb(midD, 0), kYield1|kBlock, toKD, true, 0).keyed(true, 1, 0, kTyped|kYield1, 0).
			cancel(0, false).setLimit(6).handoff(fKeyed, byte(2|1<<3), kTyped, toHiP, false, 0).
			submitCtx(hiP, 0, 0, true).setWorkers(2).keyedLimit(1).stats().close().wake(2).setLimit(3).
			setWorkers(1).cancel(1, true),
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, ops, specs := fzDecode(data)
		fzExec(t, 1, h, ops, specs)
		fzExec(t, 2, h, ops, specs)
	})
}

// ---------------------------------------------------------------------------
// H2 FuzzConfig

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

// ---------------------------------------------------------------------------
// H1: reshaping (opReshape)
//
// An input with a reshape op runs on a pool built with Config.Spare (all
// zeros: a removed channel's own room is what AddChannel reuses). A removal
// runs on a goroutine of its own (Drain waits for the gate and for wakes),
// at most one at a time; the op returns once the channel refuses submits
// (Stats shows it Removing, or gone). Its tasks end as the policy says and
// the ledger (OnEnd) records it: Drain runs what the channel holds, Drop
// drops what has not started (even in a complete-on-close channel), a task
// that yielded re-enters through its followup. Submits to the channel are
// refused from then on (ErrClosed while it is removed, ErrUnknownKey once
// it is), until AddChannel adds a fresh channel under the key again. The
// order model does not know reshaping: a reshape degrades the run to the
// invariants, which keep every count exact: Stats is read with the channels
// in layout order (fzRun.stats), a removed channel's counts (those
// RemoveChannel returned, or Stats.Removed for the removal in flight) added
// to its key's, so the final Stats still match the ledger channel by
// channel, and Stats.Removed sums what the removals returned.

type fzChState uint8

const (
	fzLive     fzChState = iota
	fzRemoving           // its removal is in flight (fzRun.rmPending)
	fzRemoved            // RemoveChannel returned: no channel has the key
)

// fzRemoval is one RemoveChannel call in flight.
type fzRemoval struct {
	ch     int
	policy smartpool.RemovePolicy
	done   chan struct{}
	st     smartpool.ChannelStats[string]
	err    error
}

// fzReshapeSnap is what the test goroutine knows of the removals, taken
// before a Stats read: a channel present in that read had not detached, so
// its RemoveChannel had not returned either.
type fzReshapeSnap struct {
	removed [fzChans][5]uint64
	sum     [5]uint64
	pending int // the channel of the removal in flight; -1: none
}

func (r *fzRun) reshapeSnap() fzReshapeSnap {
	r.rmMu.Lock()
	defer r.rmMu.Unlock()
	sn := fzReshapeSnap{removed: r.removedC, pending: -1}
	for _, c := range r.removedC {
		for k := range c {
			sn.sum[k] += c[k]
		}
	}
	if p := r.rmPending; p != nil {
		sn.pending = p.ch
	}
	return sn
}

// stats is Pool.Stats with the channels in layout order (fzRun.normalize).
func (r *fzRun) stats() *smartpool.Stats[string] {
	if !r.reshaping {
		return r.pool.Stats()
	}
	sn := r.reshapeSnap()
	return r.normalize(r.pool.Stats(), sn)
}

// liveStats is stats for the test goroutine's checks (checkShape with
// live): it first reads the nest owners that may wait in the snapshot into
// ownersAtStats (an owner stops waiting before it stops spawning).
func (r *fzRun) liveStats() *smartpool.Stats[string] {
	r.ownersAtStats = int(r.nestOwners.Load())
	return r.stats()
}

// normalize lists s's channels in layout order, a channel absent (removed)
// with its key, level and close policy, and adds to each the counts of its
// key's removed channels: those RemoveChannel returned, and for the removal
// in flight, if it detached already, what Stats.Removed holds beyond them.
func (r *fzRun) normalize(s *smartpool.Stats[string], sn fzReshapeSnap) *smartpool.Stats[string] {
	if !r.reshaping {
		return s
	}
	out := make([]smartpool.ChannelStats[string], fzChans)
	var seen [fzChans]bool
	for i, l := range fzLayout {
		out[i] = smartpool.ChannelStats[string]{Key: l.key, Level: l.level, CompleteOnClose: l.coc}
	}
	for _, c := range s.Channels {
		i := slices.IndexFunc(fzLayout[:], func(l fzChanSpec) bool { return l.key == c.Key })
		if i < 0 || seen[i] {
			r.problem("Stats lists channel %q at %d (twice: %v)", c.Key, i, i >= 0)
			continue
		}
		out[i], seen[i] = c, true
	}
	add := func(c *smartpool.ChannelStats[string], n [5]uint64) {
		c.Ran += n[0]
		c.Panicked += n[1]
		c.Goexited += n[2]
		c.Dropped += n[3]
		c.Cancelled += n[4]
	}
	for i := range out {
		add(&out[i], sn.removed[i])
	}
	if p := sn.pending; p >= 0 && !seen[p] {
		rem := fzStatCounts(s.Removed)
		for k := range rem {
			rem[k] -= sn.sum[k] // wraps if Removed lost counts: the totals then differ
		}
		add(&out[p], rem)
	}
	n := *s
	n.Channels = out
	return &n
}

func (r *fzRun) chState(ch int) fzChState {
	r.rmMu.Lock()
	defer r.rmMu.Unlock()
	return r.chStates[ch]
}

func (r *fzRun) setChState(ch int, st fzChState) {
	r.rmMu.Lock()
	r.chStates[ch] = st
	r.rmMu.Unlock()
}

// followupOf returns the layout index of channel ch's followup.
func fzFollowupOf(ch int) int {
	f := fzLayout[ch].followup
	if f == "" {
		return ch
	}
	return slices.IndexFunc(fzLayout[:], func(l fzChanSpec) bool { return l.key == f })
}

// collect takes the result of the removal in flight once it returned
// (waiting for it if wait): nil and the channel's final counts, which must
// name it; or ErrClosed if Close started before it (the channel stays).
func (r *fzRun) collect(wait bool) {
	t := r.t
	r.rmMu.Lock()
	rm := r.rmPending
	r.rmMu.Unlock()
	if rm == nil {
		return
	}
	if wait {
		fzRecv(t, (<-chan struct{})(rm.done), fmt.Sprintf("RemoveChannel(%s, %v) returning", fzLayout[rm.ch].key, rm.policy))
	} else if !isClosed(rm.done) {
		return
	}
	l := fzLayout[rm.ch]
	r.rmMu.Lock()
	defer r.rmMu.Unlock()
	r.rmPending = nil
	switch {
	case rm.err == nil:
		st := rm.st
		if st.Key != l.key || st.Level != l.level || st.CompleteOnClose != l.coc || st.Queued != 0 || st.Removing {
			t.Fatalf("RemoveChannel(%s, %v) returned the stats %+v", l.key, rm.policy, st)
		}
		c := fzStatCounts(st)
		for k := range c {
			r.removedC[rm.ch][k] += c[k]
		}
		r.chStates[rm.ch] = fzRemoved
	case errors.Is(rm.err, smartpool.ErrClosed) && r.pool.State() >= smartpool.Closing:
		r.chStates[rm.ch] = fzLive // Close came first: nothing was removed
	default:
		t.Fatalf("RemoveChannel(%s, %v): %v", l.key, rm.policy, rm.err)
	}
}

// reshapeOp runs an opReshape; closing: the test's Close was launched.
func (r *fzRun) reshapeOp(op fzOp, closing bool) {
	t, ch := r.t, op.ch
	l := fzLayout[ch]
	r.collect(false)
	st := r.chState(ch)
	closedOK := func(err error) bool {
		return errors.Is(err, smartpool.ErrClosed) && (closing || r.pool.State() >= smartpool.Closing)
	}
	if op.n >= 2 {
		if st == fzRemoving {
			return // it may have detached and not been collected: the counts would mix
		}
		c := r.newChan(ch)
		f := fzFollowupOf(ch)
		onEnd := func(t smartpool.Task, o smartpool.Outcome) { r.onEnd(ch, t, o) }
		err := r.pool.AddChannel(l.level, smartpool.ChannelParams[string]{Key: l.key, CompleteOnClose: l.coc, OnEnd: onEnd}, c.c, fzLayout[f].key)
		want := error(nil)
		switch {
		case st != fzRemoved:
			want = smartpool.ErrConfig // the key is in use
		case f != ch && r.chState(f) != fzLive:
			want = smartpool.ErrConfig // the followup is gone or going
		}
		switch {
		case closedOK(err):
		case (want == nil) != (err == nil) || !errors.Is(err, want):
			t.Fatalf("AddChannel(%s) (%v, followup %s %v): %v, want %v", l.key, st, fzLayout[f].key, r.chState(f), err, want)
		case err == nil:
			r.degrade()
			r.chans[ch] = c
			r.mu.Lock()
			r.multiNext[ch] = 0
			r.mu.Unlock()
			r.setChState(ch, fzLive)
		}
		return
	}
	policy := smartpool.Drain
	if op.n == 1 {
		policy = smartpool.Drop
	}
	r.rmMu.Lock()
	busy := r.rmPending != nil
	r.rmMu.Unlock()
	if st == fzRemoving || busy {
		return // one removal at a time
	}
	blocked := false
	for j := range fzLayout {
		if j != ch && fzFollowupOf(j) == ch && r.chState(j) != fzRemoved {
			blocked = true
		}
	}
	if st == fzRemoved || blocked || closing {
		if closing && st != fzRemoved {
			fzWait(t, "Close starting", func() error {
				if r.pool.State() < smartpool.Closing {
					return errors.New("still running")
				}
				return nil
			})
		}
		_, err := r.pool.RemoveChannel(context.Background(), l.key, policy)
		want := smartpool.ErrUnknownKey // no channel has the key: looked up first
		switch {
		case st == fzRemoved:
		case closing || r.pool.State() >= smartpool.Closing && errors.Is(err, smartpool.ErrClosed):
			want = smartpool.ErrClosed
		default:
			want = smartpool.ErrConfig // another present channel names it as its followup
		}
		if !errors.Is(err, want) {
			t.Fatalf("RemoveChannel(%s, %v) (%v, followup of a present channel %v): %v, want %v", l.key, policy, st, blocked, err, want)
		}
		return
	}
	r.reshaped[ch] = true
	if policy == smartpool.Drop {
		r.dropRemoved[ch] = true
	}
	r.degrade()
	rm := &fzRemoval{ch: ch, policy: policy, done: make(chan struct{})}
	r.rmMu.Lock()
	r.rmPending = rm
	r.chStates[ch] = fzRemoving
	r.rmMu.Unlock()
	go func() {
		defer close(rm.done)
		rm.st, rm.err = r.pool.RemoveChannel(context.Background(), l.key, policy)
	}()
	fzWait(t, fmt.Sprintf("RemoveChannel(%s, %v) starting", l.key, policy), func() error {
		if isClosed(rm.done) {
			return nil
		}
		if c, ok := r.pool.Stats().Channel(l.key); ok && !c.Removing {
			return errors.New("the channel is not removing yet")
		}
		return nil
	})
}

// submitGone submits s to its channel, which is being removed or removed:
// refused, by key or through its own method, but for a Push through the
// channel's Source (a typed FIFO submit) made before RemoveChannel closed
// the channel, which then ends as the removal's policy says.
func (r *fzRun) submitGone(s *fzSpec) {
	t := r.t
	l := fzLayout[s.ch]
	st := r.chState(s.ch)
	typed := s.typed && !s.ctx
	if typed && r.limit > 0 && l.order == fzFIFO {
		typed = false // as fzRun.submit does
	}
	err := r.push(s, typed, func(task smartpool.Task) (int, error) {
		switch {
		case s.ctx:
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			return 0, r.pool.SubmitTask(l.key, task, smartpool.WithContext(ctx))
		case typed:
			return r.chans[s.ch].typed(task, s)
		}
		return 0, r.pool.SubmitTask(l.key, task)
	})
	ok := errors.Is(err, smartpool.ErrClosed) || errors.Is(err, smartpool.ErrUnknownKey) ||
		r.limit > 0 && errors.Is(err, smartpool.ErrFull) ||
		s.ctx && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) ||
		err == nil && typed && l.order == fzFIFO && l.shards == 0 && st == fzRemoving
	if !ok {
		t.Fatalf("submit %d to %s (%v, typed %v, WithContext %v): %v, want it refused", s.id, l.key, st, typed, s.ctx, err)
	}
}

// reshapeDone waits for the removal in flight, after Close, and checks that
// Stats.Removed sums what the removals returned.
func (r *fzRun) reshapeDone() {
	if !r.reshaping {
		return
	}
	r.collect(true)
	sn := r.reshapeSnap()
	if got := fzStatCounts(r.pool.Stats().Removed); got != sn.sum {
		r.t.Fatalf("Stats.Removed: ran/panicked/goexited/dropped/cancelled %v; the removals returned %v", got, sn.sum)
	}
}

// gone reports whether err is how a channel a removal was started for may
// refuse a submit: ErrClosed while it is removed, ErrUnknownKey after.
func (r *fzRun) gone(ch int, err error) bool {
	return ch >= 0 && r.reshaped[ch] && (errors.Is(err, smartpool.ErrClosed) || errors.Is(err, smartpool.ErrUnknownKey))
}
