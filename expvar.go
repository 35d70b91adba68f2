package smartpool

import (
	"expvar"
	"fmt"
	"sync"
)

// publishMu serialises Publish calls, so that two of them cannot both find a
// name free.
var publishMu sync.Mutex

// Publish exposes the pool's live Stats as JSON under name in the expvar
// registry, served by expvar's handler at /debug/vars: each read of the
// variable takes a fresh snapshot. It returns an error, and publishes
// nothing, if name is empty or already published (expvar itself would
// panic). expvar cannot unpublish: the variable outlives the pool and then
// shows its final stats.
func (p *Pool[K]) Publish(name string) (err error) {
	if name == "" {
		return fmt.Errorf("smartpool: Publish: empty expvar name")
	}
	publishMu.Lock()
	defer publishMu.Unlock()
	if expvar.Get(name) != nil {
		return fmt.Errorf("smartpool: Publish: expvar name %q is already published", name)
	}
	defer func() {
		if r := recover(); r != nil { // published meanwhile by a direct expvar.Publish
			err = fmt.Errorf("smartpool: Publish %q: %v", name, r)
		}
	}()
	expvar.Publish(name, expvar.Func(func() any { return p.Stats() }))
	return nil
}
