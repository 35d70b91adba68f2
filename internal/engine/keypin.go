package engine

import "github.com/smartpool-go/smartpool/task"

// KeyPin is a by-key call's pin on the slot of the channel it named (see
// "Reshaping", 6, in reshape.go). A removal waits for every pinned call,
// whatever its channel, before the slot can be reused; so no call stays
// pinned through a wait that may last as long as its context, or through
// a task of the user's:
//   - a call that waits for a unit of Config.Limit or for room in its
//     group waits unpinned, and once its wait ended pins again and finds
//     its channel again, as a new call would (unpinned);
//   - a call that waits for room in a full Bounded, or runs a task inline,
//     does so in its channel: it trades the pin for a count in that
//     channel's held (holdInstead), so that a removal of that channel waits
//     for it (its Close ends the wait) and a removal of any other does not.
//
// A keyPin belongs to the goroutine making the call.
type KeyPin struct {
	e    *Engine
	k    int                 // the counter pinned (engine.pin); -1 while unpinned or outside a reshaping pool
	held int                 // the channel counted in held in the pin's place (holdInstead), or -1
	Find func() (int, error) // once pinned again: the index of the call's channel, or why it is gone
}

// PinKey pins a by-key call of e that finds its channel again with find.
func (e *Engine) PinKey(find func() (int, error)) KeyPin {
	return KeyPin{e: e, k: e.Pin(), held: -1, Find: find}
}

// Unpin ends the call's pin, or gives back the count holdInstead took
// (deferred by the call, after its last use of the channel). A nil p does
// nothing.
func (p *KeyPin) Unpin() {
	if p == nil {
		return
	}
	p.e.Unpin(p.k)
	p.k = -1
	if p.held >= 0 {
		p.e.untrack(p.held)
		p.held = -1
	}
}

// holdInstead trades the call's pin for a count in channel ch's held, for
// a wait in ch that may last as long as the call's context. The count is
// taken while pinned, so before any removal could detach ch, and a removal
// that started already refuses it: holdInstead then returns ErrClosed,
// changing nothing. A nil p, or one outside a reshaping pool, does nothing.
func (p *KeyPin) holdInstead(ch int) error {
	if p == nil || p.k < 0 {
		return nil
	}
	if !p.e.HoldUnlessRemoving(ch) {
		return task.ErrClosed
	}
	p.e.Unpin(p.k)
	p.k, p.held = -1, ch
	return nil
}

// HeldInline lets the pin go for a task run inline in channel ch, which
// claimInline (or Group.help) counted in ch's held already: the run holds
// back a removal of ch, and no other. A nil p does nothing.
func (p *KeyPin) HeldInline() {
	if p != nil {
		p.e.Unpin(p.k)
		p.k = -1
	}
}

// Unpinned runs wait, which must not touch channel ch, without the pin,
// then pins again and returns the index of the call's channel now: ch, or
// where a removal and an AddChannel of its key moved it. It returns wait's
// error, else find's, but an error wrapping ErrClosed if the key is gone:
// the key was right, its channel was removed meanwhile. A nil p, or one
// outside a reshaping pool, runs wait alone.
func (p *KeyPin) Unpinned(ch int, wait func() error) (int, error) {
	if p == nil || p.k < 0 {
		return ch, wait()
	}
	p.Unpin()
	err := wait()
	p.k = p.e.Pin()
	if err != nil {
		return ch, err
	}
	i, err := p.Find()
	if ke, ok := err.(*keyError); ok {
		return ch, &removedError{key: ke.key}
	}
	return i, err
}
