package engine

// # Stall watchdog
//
// A task that blocks outside the pool (a plain channel, a lock, a handler
// that never returns) keeps its worker, and the pool cannot break the wait.
// When every worker is held so while work waits, the pool is stalled; the
// watchdog makes that visible instead of silent. One timer per pool fires
// four times per Config.StallAfter and reads what the pool keeps anyway:
//
//   - work queued: the availability summary and e.buffered (hasWork), or,
//     when that reads empty, the channels' Len (a channel at its cap is
//     hidden from the summary); or work waiting to be queued: a submit
//     waiting for a unit of Config.Limit (WithContext, Group.Go), which
//     the busy tasks hold;
//   - every worker busy: each worker below target was created and has its
//     running mark set (timing.go);
//   - no task ended: the sum of the outcome counters the workers keep per
//     channel (taskStats), plus those of tasks that ended inside a Yield's
//     wait or on a submitter's goroutine, did not change.
//
// So a task pays nothing for it. The pool is stalled when all three held at
// every check for StallAfter; the watchdog then logs once at Warn, with the
// stacks of the goroutines running its tasks (stallStacks), and counts the
// stall in Stats.Stalls. When a check finds a task ended, a worker free or no
// work queued, it logs at Info that the pool moved on. The timer runs from
// start until the pool has closed, so a drain that hangs in Close is
// reported too.

import (
	"bytes"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"weak"
)

// watchdog is a pool's stall watchdog. Its timer's callback (check) and stop
// take mu; Stats reads stalls and stalled from any goroutine.
type watchdog struct {
	// pool is the engine, weakly: the timer holds the watchdog, and a pool
	// dropped without Close must still be collected (its timer then stops).
	pool  weak.Pointer[Engine]
	after time.Duration    // Config.StallAfter resolved, > 0; read-only
	keyOf func(ch int) any // the key of channel ch, for the log; read-only

	stalls  atomic.Uint64 // stalls noticed (Stats.Stalls)
	stalled atomic.Bool   // the current stall was reported and the pool has not moved on (Stats.Stalled)

	mu      sync.Mutex // guards the fields below: check and stop
	timer   *time.Timer
	stopped bool      // the pool has closed: check does nothing, the timer is not re-armed
	ended   uint64    // tasks ended, at the last check
	since   time.Time // the first check of the current stretch with work queued, every worker busy and no task ended; zero if the last check saw none
}

// newWatchdog returns the watchdog of e for Config.StallAfter resolved
// (after), nil if after is not positive (off); keyOf names channel ch in the
// log.
func newWatchdog(e *Engine, after time.Duration, keyOf func(ch int) any) *watchdog {
	if after <= 0 {
		return nil
	}
	return &watchdog{pool: weak.Make(e), after: after, keyOf: keyOf}
}

// period is the time between two checks: a stall shows between StallAfter
// and 1.25 StallAfter after it began.
func (d *watchdog) period() time.Duration { return max(d.after/4, time.Nanosecond) }

// start arms the timer; engine.start calls it once. Nil-safe.
func (d *watchdog) start() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.timer = time.AfterFunc(d.period(), d.check)
}

// stop stops the timer and waits for a check in progress; engine e calls it
// as its last worker exits, before the report is built. A stall still
// reported ends here, with its Info line. Nil-safe.
func (d *watchdog) stop(e *Engine) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	if d.timer != nil {
		d.timer.Stop()
	}
	if d.stalled.Load() {
		d.over(e, "pool closed", time.Now())
	}
}

// check runs on the timer's goroutine, period after period, until stop or
// until the pool, dropped without Close, was collected.
func (d *watchdog) check() {
	d.mu.Lock()
	defer d.mu.Unlock()
	e := d.pool.Value()
	if d.stopped || e == nil {
		return
	}
	defer d.timer.Reset(d.period())
	now := time.Now()
	ended := e.tasksEnded()
	why := ""
	switch { // cheapest first: the last runs only when the pool looks stuck
	case ended != d.ended:
		why = "a task ended"
	case !e.allBusy():
		why = "a worker is free"
	case !e.anyQueued() && e.admit.waiters.Load() == 0:
		why = "no work queued"
	}
	d.ended = ended
	switch {
	case why != "":
		if d.stalled.Load() {
			d.over(e, why, now)
		}
		d.since = time.Time{}
	case d.since.IsZero():
		d.since = now
	case !d.stalled.Load() && now.Sub(d.since) >= d.after:
		d.stalls.Add(1)
		d.stalled.Store(true)
		d.report(e, now)
	}
}

// over logs the end of the reported stall. Under mu.
func (d *watchdog) over(e *Engine, why string, now time.Time) {
	d.stalled.Store(false)
	e.log.Info("smartpool: stall over", "reason", why, "stalled", now.Sub(d.since).Round(time.Millisecond))
}

// report logs a stall just noticed, at Warn. Under mu.
func (d *watchdog) report(e *Engine, now time.Time) {
	unlock := e.reshape.lock() // keys and channel tables hold still (reshape.go); not while logging
	busy := map[string]int{}
	for i := range int(e.target.Load()) {
		if w := e.worker(i); w != nil {
			if r := int(w.running.Load()); r > 0 && r <= len(e.Chans) {
				busy[fmt.Sprint(d.keyOf(r-1))]++
			}
		}
	}
	queued := 0
	for _, n := range e.queued() {
		queued += n
	}
	unlock()
	e.log.Warn("smartpool: stalled: every worker is busy, work is queued or waiting for a unit and no task has ended",
		"for", now.Sub(d.since).Round(time.Millisecond), "workers", e.target.Load(), "queued", queued,
		"waiting", e.admit.waiters.Load(), // submits waiting for a unit of the limit
		"running", busyByChannel(busy), "stalls", d.stalls.Load(), "tasks", stallStacks(e))
}

// busyByChannel logs the busy workers' count per channel key.
type busyByChannel map[string]int

// LogValue implements slog.LogValuer.
func (b busyByChannel) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, len(b))
	for k, n := range b {
		attrs = append(attrs, slog.Int(k, n))
	}
	return slog.GroupValue(attrs...)
}

// tasksEnded sums every outcome counter of every channel: tasks that ran,
// panicked or called Goexit, on a worker, in a Yield's wait or on a
// submitter's goroutine.
func (e *Engine) tasksEnded() uint64 {
	var n uint64
	add := func(s *taskStats) { n += s.ran.Load() + s.panicked.Load() + s.goexited.Load() }
	for i := range e.Chans {
		add(&e.Chans[i].inWait)
		add(&e.Chans[i].inline)
	}
	e.EachWorker(func(w *Worker) {
		for i := range w.stats {
			add(&w.stats[i])
		}
	})
	return n
}

// anyQueued reports whether some task waits: in the summary or a run buffer
// (hasWork), or in a channel at its cap, whose queues the summary hides
// (limit.go).
func (e *Engine) anyQueued() bool {
	if e.hasWork() {
		return true
	}
	for _, n := range e.queued() {
		if n > 0 {
			return true
		}
	}
	return false
}

// allBusy reports whether every worker below target exists and is busy
// (running mark set: running a task, hosting one, or between two).
func (e *Engine) allBusy() bool {
	n := int(e.target.Load())
	if int(e.born.Load()) < n {
		return false // a worker not created yet is idle in effect (workers.go)
	}
	for i := range n {
		if w := e.worker(i); w == nil || w.running.Load() == 0 {
			return false
		}
	}
	return true
}

// Bounds of a stall's log line.
const (
	stallGoroutines = 16      // goroutines listed
	stallFrames     = 24      // frames per goroutine, from the top
	stallDumpMax    = 8 << 20 // bytes of runtime.Stack read at most
)

// pkgPath prefixes the pool's own function names in a stack trace.
var pkgPath = reflect.TypeFor[Worker]().PkgPath()

var (
	runFrame   = []byte(pkgPath + ".(*Worker).Run(")
	yieldFrame = []byte(pkgPath + ".YieldFor(")
)

// stallStacks returns the stacks of the goroutines running a task of pool e
// now: those with a frame of worker.run whose first argument is one of e's
// workers, minus tasks waiting in a Yield (they hold no worker). Each is
// trimmed to the frames above worker.run: the task's own.
func stallStacks(e *Engine) taskStacks {
	ws := map[string]bool{}
	e.EachWorker(func(w *Worker) { ws[fmt.Sprintf("%p", w)] = true })
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= stallDumpMax {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out taskStacks
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		lines := bytes.Split(bytes.TrimSpace(g), []byte("\n"))
		run := -1
		for i, l := range lines {
			if bytes.HasPrefix(l, yieldFrame) {
				run = -1
				break
			}
			if bytes.HasPrefix(l, runFrame) {
				arg, _, _ := bytes.Cut(l[len(runFrame):], []byte(","))
				if ws[string(bytes.TrimSuffix(arg, []byte("?")))] { // "?": a value the traceback may have wrong
					run = i
				}
				break
			}
		}
		if run < 0 {
			continue
		}
		out.found++
		if len(out.stacks) == stallGoroutines {
			continue
		}
		out.stacks = append(out.stacks, trimStack(lines[0], lines[1:run]))
	}
	return out
}

// trimStack keeps a goroutine's header and its top frames, each as
// "function file:line".
func trimStack(header []byte, frames [][]byte) taskStack {
	s := taskStack{header: string(bytes.TrimSuffix(header, []byte(":")))}
	for i := 0; i+1 < len(frames) && len(s.frames) < stallFrames; i += 2 {
		fn := bytes.TrimSpace(frames[i])
		if j := bytes.LastIndexByte(fn, '('); j > 0 {
			fn = fn[:j]
		}
		loc := bytes.TrimSpace(frames[i+1])
		if j := bytes.LastIndex(loc, []byte(" +0x")); j >= 0 {
			loc = loc[:j]
		}
		s.frames = append(s.frames, string(fn)+" "+string(loc))
	}
	return s
}

// taskStacks is the stalled tasks' stacks, as a log attribute.
type taskStacks struct {
	stacks []taskStack
	found  int // goroutines found; stacks holds the first stallGoroutines
}

type taskStack struct {
	header string // "goroutine 42 [chan receive, 2 minutes]"
	frames []string
}

// LogValue implements slog.LogValuer: a group per goroutine ("g42", with its
// state and its frames "0", "1", ... from the top), and "omitted", the
// goroutines left out.
func (t taskStacks) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, len(t.stacks)+1)
	for _, s := range t.stacks {
		id, state, _ := bytes.Cut([]byte(s.header), []byte(" ["))
		g := make([]slog.Attr, 0, len(s.frames)+1)
		g = append(g, slog.String("state", string(bytes.TrimSuffix(state, []byte("]")))))
		for i, f := range s.frames {
			g = append(g, slog.String(strconv.Itoa(i), f))
		}
		attrs = append(attrs, slog.Attr{Key: "g" + string(bytes.TrimPrefix(id, []byte("goroutine "))), Value: slog.GroupValue(g...)})
	}
	if n := t.found - len(t.stacks); n > 0 {
		attrs = append(attrs, slog.Int("omitted", n))
	}
	return slog.GroupValue(attrs...)
}

// StackFrames presents a debug.Stack trace as a group of attributes, one per
// frame ("0", "1", ...: "function file:line"), starting at the frame that
// panicked, so that text and JSON handlers print it readably instead of as
// one escaped line.
type StackFrames []byte

// LogValue implements slog.LogValuer.
func (s StackFrames) LogValue() slog.Value {
	lines := bytes.Split(bytes.TrimSpace(s), []byte("\n"))
	var frames []string
	for i := 1; i+1 < len(lines); i += 2 { // lines[0]: "goroutine N [running]:"
		fn := string(bytes.TrimSpace(lines[i]))
		loc := bytes.TrimSpace(lines[i+1])
		if j := bytes.LastIndex(loc, []byte(" +0x")); j >= 0 {
			loc = loc[:j]
		}
		if bytes.HasPrefix(lines[i], []byte("panic(")) {
			frames = frames[:0] // the frames above are the recovery's own
			continue
		}
		frames = append(frames, fn+" "+string(loc))
	}
	if len(frames) == 0 {
		return slog.StringValue(string(s))
	}
	attrs := make([]slog.Attr, len(frames))
	for i, f := range frames {
		attrs[i] = slog.String(strconv.Itoa(i), f)
	}
	return slog.GroupValue(attrs...)
}
