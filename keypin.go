package smartpool

// keyPin is a by-key call's pin on the slot of the channel it named (see
// "Reshaping", 6, in reshape.go). A removal waits for every pinned call,
// whatever its channel, before the slot can be reused; so a call that waits
// for a unit of Config.Limit or for room in its group, which may last as
// long as its context, waits unpinned, and once its wait ended pins again
// and finds its channel again, as a new call would. A wait for room in a
// full Bounded stays pinned: it waits in the channel itself, whose removal
// ends it by closing the channel.
//
// A keyPin belongs to the goroutine making the call.
type keyPin struct {
	e    *engine
	k    int                 // the counter pinned (engine.pin); -1 while unpinned or outside a reshaping pool
	find func() (int, error) // once pinned again: the index of the call's channel, or why it is gone
}

// pinKey pins a by-key call of e that finds its channel again with find.
func (e *engine) pinKey(find func() (int, error)) keyPin {
	return keyPin{e: e, k: e.pin(), find: find}
}

// unpin ends the call's pin (deferred by the call).
func (p *keyPin) unpin() {
	p.e.unpin(p.k)
	p.k = -1
}

// unpinned runs wait, which must not touch channel ch, without the pin,
// then pins again and returns the index of the call's channel now: ch, or
// where a removal and an AddChannel of its key moved it. It returns wait's
// error, else find's, but an error wrapping ErrClosed if the key is gone:
// the key was right, its channel was removed meanwhile. A nil p, or one
// outside a reshaping pool, runs wait alone.
func (p *keyPin) unpinned(ch int, wait func() error) (int, error) {
	if p == nil || p.k < 0 {
		return ch, wait()
	}
	p.unpin()
	err := wait()
	p.k = p.e.pin()
	if err != nil {
		return ch, err
	}
	i, err := p.find()
	if ke, ok := err.(*keyError); ok {
		return ch, &removedError{key: ke.key}
	}
	return i, err
}
