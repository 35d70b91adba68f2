// Package avail is the availability bitfield of a smartpool: one bit per
// queue, grouped by level, with one summary word whose bit l says "level l
// has work". Workers read the summary with a single atomic load to choose a
// level and to decide to sleep; no lock is ever taken.
//
// # The availability-bit protocol
//
// Queue bits are owned by their channel: a channel sets its queue's bit when
// the queue becomes non-empty and clears it when it becomes empty, both while
// holding the channel's own lock, so once that lock is released the bit equals
// "this queue holds an eligible task" (it may be set spuriously for a moment,
// never clear while the queue has work).
//
// The summary bit of a level is derived from the level's words:
//
//   - Set: a word going from no eligible bit to one ORs the level's summary
//     bit; so does any Set that finds the summary bit clear (the first Set
//     may still be on its way to its OR).
//   - Clear: a word going to zero clears the summary bit only if every word of
//     the level reads zero, then re-reads the words and ORs the summary bit
//     back if any is non-zero (repair).
//
// A queue can also be blocked (its channel is at its concurrency cap): its
// bit then does not count. "Eligible" below means set and not blocked; the
// summary follows the eligible bits, and Block and Unblock keep it so with the
// same clear-then-repair step.
//
// Invariant: whenever no Set, Clear, Block or Unblock is in progress, the
// summary bit of level l is set if any queue of level l is eligible. The repair closes the race in
// which a concurrent Set saw an empty word and ORed the summary before this
// Clear cleared it. The summary may be set spuriously (a repair that re-read a
// word another Clear emptied a moment later); workers that find a level empty
// call Tidy, which is Clear's summary step, so a spurious bit never survives a
// worker's visit. During a Clear the summary may read zero while a concurrent
// Set's queue has work; Clear reports a repair so its caller wakes a worker,
// which is how that window cannot lose a wake-up.
//
// All operations use sync/atomic, which is sequentially consistent; the sleep
// protocol in the root package relies on that (a Set followed by a load of the
// idle stack, against a push on the idle stack followed by a load of the
// summary).
package avail

import (
	"errors"
	"math/bits"
	"sync/atomic"
)

// MaxQueues is the largest number of queues (bits) one Field holds.
const MaxQueues = 4096

// MaxLevels is the largest number of levels: one summary bit each.
const MaxLevels = 64

// ErrTooMany is returned by New when the layout exceeds MaxQueues or
// MaxLevels.
var ErrTooMany = errors.New("too many queues or levels")

// pad keeps the summary word and each level's words on their own cache lines,
// so that submitters to one level do not invalidate another level's line.
type pad [64]byte

// Field is the bitfield. It is built once by New and then shared by every
// worker and channel of a pool; all methods are safe for concurrent use.
type Field struct {
	_       pad
	summary atomic.Uint64 // bit l: level l may have work (see protocol)
	_       pad
	levels  []level
	queues  []queueRef // indexed by global queue number
}

type level struct {
	first   int             // global number of the level's first queue
	n       int             // number of queues in the level
	words   []atomic.Uint64 // bit i of words[i/64]: local queue i has work
	blocked []atomic.Uint64 // bit i of blocked[i/64]: local queue i is blocked
}

type queueRef struct {
	word    *atomic.Uint64
	blocked *atomic.Uint64
	mask    uint64
	level   int
}

// New builds a Field for levels whose queue counts are given, highest level
// first. Global queue numbers are assigned in that order.
func New(queuesPerLevel []int) (*Field, error) {
	if len(queuesPerLevel) > MaxLevels {
		return nil, ErrTooMany
	}
	total := 0
	for _, n := range queuesPerLevel {
		total += n
	}
	if total > MaxQueues {
		return nil, ErrTooMany
	}
	f := &Field{levels: make([]level, len(queuesPerLevel)), queues: make([]queueRef, 0, total)}
	for l, n := range queuesPerLevel {
		nw := (n + 63) / 64
		// 8 spare words (one cache line) after each level's words.
		words := make([]atomic.Uint64, nw+8)[:nw]
		blocked := make([]atomic.Uint64, nw+8)[:nw]
		f.levels[l] = level{first: len(f.queues), n: n, words: words, blocked: blocked}
		for i := 0; i < n; i++ {
			f.queues = append(f.queues, queueRef{word: &words[i/64], blocked: &blocked[i/64], mask: 1 << (i % 64), level: l})
		}
	}
	return f, nil
}

// Summary returns the level summary: bit l set means level l may have work.
func (f *Field) Summary() uint64 { return f.summary.Load() }

// Levels returns the number of levels.
func (f *Field) Levels() int { return len(f.levels) }

// LevelRange returns the global number of level l's first queue and its queue count.
func (f *Field) LevelRange(l int) (first, n int) { return f.levels[l].first, f.levels[l].n }

// Has reports whether global queue q's bit is set.
func (f *Field) Has(q int) bool {
	r := &f.queues[q]
	return r.word.Load()&r.mask != 0
}

// Set marks global queue q as having work. Call it with the queue's lock held
// when the queue becomes non-empty.
func (f *Field) Set(q int) {
	r := &f.queues[q]
	old := r.word.Or(r.mask)
	bit := uint64(1) << r.level
	// OR the summary if this is the word's first eligible bit, and also if
	// the summary does not show the level yet: the Set that made the word
	// non-empty may not have reached its own OR, and until it does this
	// queue's work would be invisible (a lower level would be served first).
	if b := r.blocked.Load(); r.mask&^b != 0 && (old&^b == 0 || f.summary.Load()&bit == 0) {
		f.summary.Or(bit)
	}
}

// Clear marks global queue q as empty. Call it with the queue's lock held when
// the queue becomes empty. It reports whether it had to repair the summary
// after a concurrent Set; the caller then wakes a worker (see protocol).
func (f *Field) Clear(q int) (repaired bool) {
	r := &f.queues[q]
	if r.word.And(^r.mask)&^r.mask&^r.blocked.Load() != 0 {
		return false // the word still has other eligible work
	}
	return f.Tidy(r.level)
}

// Block makes global queue q ineligible whatever its bit, and drops the
// level's summary bit if nothing else is eligible. It reports a repair as
// Clear does.
func (f *Field) Block(q int) (repaired bool) {
	r := &f.queues[q]
	r.blocked.Or(r.mask)
	return f.Tidy(r.level)
}

// Blocked reports whether global queue q is blocked.
func (f *Field) Blocked(q int) bool {
	r := &f.queues[q]
	return r.blocked.Load()&r.mask != 0
}

// Unblock makes global queue q eligible again. It reports whether the queue
// has work, in which case the summary was set and the caller wakes a worker.
func (f *Field) Unblock(q int) (hasWork bool) {
	r := &f.queues[q]
	r.blocked.And(^r.mask)
	if r.word.Load()&r.mask == 0 {
		return false
	}
	f.summary.Or(1 << r.level)
	return true
}

// Tidy clears level l's summary bit if all its words are zero, then repairs it
// if a word became non-zero meanwhile. It reports whether it repaired.
func (f *Field) Tidy(l int) (repaired bool) {
	lv := &f.levels[l]
	bit := uint64(1) << l
	if !lv.empty() {
		return false
	}
	f.summary.And(^bit)
	if lv.empty() {
		return false
	}
	f.summary.Or(bit)
	return true
}

func (lv *level) empty() bool {
	for i := range lv.words {
		if lv.words[i].Load()&^lv.blocked[i].Load() != 0 {
			return false
		}
	}
	return true
}

// Next returns the local index of the first eligible queue of level l,
// searching in rotation from local index from (0 <= from < n), or -1 if no
// queue of the level is eligible.
func (f *Field) Next(l, from int) int {
	lv := &f.levels[l]
	nw := len(lv.words)
	if nw == 1 { // the common case: one word
		w := lv.words[0].Load() &^ lv.blocked[0].Load()
		if w == 0 {
			return -1
		}
		if hi := w & (^uint64(0) << uint(from)); hi != 0 {
			return bits.TrailingZeros64(hi)
		}
		return bits.TrailingZeros64(w)
	}
	wi := from / 64
	w := lv.eligible(wi) & (^uint64(0) << uint(from%64))
	for i := 0; i <= nw; i++ {
		if w != 0 {
			return wi*64 + bits.TrailingZeros64(w)
		}
		wi++
		if wi == nw {
			wi = 0
		}
		w = lv.eligible(wi)
	}
	return -1
}

func (lv *level) eligible(wi int) uint64 { return lv.words[wi].Load() &^ lv.blocked[wi].Load() }
