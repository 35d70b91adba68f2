package engine

// # Which goroutine is a task's
//
// A task's waits (Yield, Sleep, Recv, Future.Wait, a Group's waits) give its
// worker back, and Close refuses to wait for the pool from inside one of its
// own tasks. What decides is the calling goroutine, not the context it
// passes: users wait with context.Background() or a request's context as
// often as with the task's, and a wait that holds the worker on a one-worker
// pool deadlocks silently. So every goroutine that carries a worker loop is
// registered here, under its gid, for as long as it runs carrier: a
// goroutine keeps its taskContext across the tasks it carries, and a spare
// stays registered while it waits to be hired.
//
// The task's own context finds the task without the registry (taskOf's fast
// path: one atomic load and a comparison with gid.Current), so the registry
// costs a lookup only where the context is not the task's, and a store and a
// delete per carrier goroutine, never per task.

import (
	"context"
	"sync"

	"github.com/smartpool-go/smartpool/internal/gid"
)

// carriers maps each goroutine running engine.carrier, of any pool, to its
// taskContext. Written only by that goroutine (register, and unregister as
// it ends); any goroutine reads it for itself only (lookup with its own gid).
var carriers registry

// registryShards spreads the carrier goroutines over locks: lookups come
// from every worker at once.
const registryShards = 64

type registry struct {
	shards [registryShards]struct {
		mu sync.Mutex
		m  map[uintptr]*taskContext // guarded by mu
		_  pad
	}
}

// shard picks a shard by a multiplicative hash of a goroutine's gid (on
// amd64 and arm64 the address of its descriptor: the low bits are
// alignment).
func (r *registry) shard(id uintptr) int {
	return int((uint64(id) * 0x9E3779B97F4A7C15) >> 58)
}

func (r *registry) register(id uintptr, tc *taskContext) {
	s := &r.shards[r.shard(id)]
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[uintptr]*taskContext)
	}
	s.m[id] = tc
	s.mu.Unlock()
}

func (r *registry) unregister(id uintptr) {
	s := &r.shards[r.shard(id)]
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

func (r *registry) lookup(id uintptr) *taskContext {
	s := &r.shards[r.shard(id)]
	s.mu.Lock()
	tc := s.m[id]
	s.mu.Unlock()
	return tc
}

// TaskOf returns the task context of the calling goroutine if it is running
// a pool task (holding a worker, or inside a Yield's wait), whatever ctx it
// passes; or nil. ctx is only the fast path: when it is (or derives from)
// the calling goroutine's own task context, no lookup is needed. A task's
// context that reached another goroutine (a child goroutine, a context
// stored for later) finds nothing there: such a goroutine must never touch
// the pool state the context guards, or two goroutines would drive one task.
func TaskOf(ctx context.Context) *taskContext {
	id := gid.Current()
	if tc := taskValue(ctx); tc != nil && tc.owner.Load() == id {
		return tc
	}
	tc := carrierOf(id)
	if tc == nil || tc.Task == nil {
		return nil // not a carrier, or a carrier between tasks (OnEnd, a panic handler, a scheduler's Pick)
	}
	return tc
}

// carrierOf returns the task context of goroutine id (the caller's) if it
// carries a worker loop of any pool now, running a task or between two; or
// nil.
func carrierOf(id uintptr) *taskContext {
	if tc := carriers.lookup(id); tc != nil && tc.owner.Load() == id {
		return tc
	}
	return nil
}

// callbackOf returns the task context of the calling goroutine if it runs
// a callback worker.run makes after a task of tc.cur (OnEnd, the panic
// handler), holding its worker still or not; or nil. See "Waiting in a
// callback".
func callbackOf() *taskContext {
	tc := carrierOf(gid.Current())
	if tc == nil || !tc.inCallback {
		return nil
	}
	return tc
}

// taskValue returns the task context ctx is or derives from, whichever
// goroutine calls, or nil. Only its immutable fields (e) may be read.
func taskValue(ctx context.Context) *taskContext {
	if ctx == nil {
		return nil
	}
	tc, _ := ctx.Value(TaskKey{}).(*taskContext)
	return tc
}

// gidSet is a set of goroutines (by gid), each entered and left by the
// goroutine itself. A goroutine outside the pool that runs an OnEnd the
// pool's close waits for (a cancelled task's, cancel.go) is in its pool's
// set meanwhile, so that a Close called from that OnEnd returns
// ErrCloseFromTask instead of waiting for itself. Rare (a cancellation of
// a task whose channel has an OnEnd), so one mutex will do.
type gidSet struct {
	mu sync.Mutex
	m  map[uintptr]int // guarded by mu: gid -> calls in progress on it
}

func (s *gidSet) add(id uintptr) {
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[uintptr]int)
	}
	s.m[id]++
	s.mu.Unlock()
}

func (s *gidSet) remove(id uintptr) {
	s.mu.Lock()
	if s.m[id]--; s.m[id] == 0 {
		delete(s.m, id)
	}
	s.mu.Unlock()
}

func (s *gidSet) has(id uintptr) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id] > 0
}
