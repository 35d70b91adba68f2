package smartpool_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/smartpool-go/smartpool"
)

// ---------------------------------------------------------------------------
// H1: nested group spawning at the limit (opNest)

// fzNestChans are the channels a nest spawns into: complete-on-close ones,
// so that no nest task is dropped and each spawned task either runs or, if
// Close refused a spawn and so cancelled the group, is skipped (Cancelled).
var fzNestChans = [...]int{0, 2, 5} // hiF, midD, loP

// fzNest is one opNest: the errgroup crawler. The owner (a goroutine of its
// own, not a task) makes a Group with SetLimit(limit) and spawns the root;
// every task spawns two children with Go, from inside the group, until
// depth. The argument byte: bits 0-1 the channel (fzNestChans, index mod
// 3; 3 is hiF through a Results in place of the Group), bits 2-3 the depth minus one, bits 4-5 the limit minus one, bit 6 a
// Yield in every task, bit 7 the second child to the next channel. It must
// end (a spawn at the group's or the pool's limit runs inline, never
// waits), with at most limit of its functions running at once. Through a
// Results, each task returns its number in the tree (the root 1, the
// children of k 2k and 2k+1), and Wait's values must hold one slot per Go
// with each task's number at most once, every parent before its children
// and a first child before its sibling (the order of the Go calls).
type fzNest struct {
	ch, depth, limit int
	yield, spread    bool
	results          bool
	vals             []int // Results' values, written by the owner before it sends on res

	spawned, ran  [fzChans]atomic.Int32
	active, most  atomic.Int32
	res           chan error // Wait's error, sent by the owner
	ownerSpawning atomic.Bool
}

func (r *fzRun) nestOp(arg int) {
	n := &fzNest{ch: fzNestChans[(arg&3)%3], depth: 1 + (arg>>2)&3, limit: 1 + (arg>>4)&3,
		yield: arg&(1<<6) != 0, spread: arg&(1<<7) != 0, results: arg&3 == 3, res: make(chan error, 1)}
	r.nests = append(r.nests, n)
	n.ownerSpawning.Store(true)
	r.nestOwners.Add(1)
	if r.closeBegun {
		r.ownersAtClose++ // it may race Close too (fzRun.ownersAtClose)
	}
	if n.results {
		go n.resultsOwner(r)
		return
	}
	go func() {
		g := smartpool.NewGroup(context.Background(), r.pool)
		g.SetLimit(n.limit)
		var spawn func(c, d, id int)
		spawn = func(c, d, id int) { g.Go(fzLayout[c].key, n.page(r, spawn, d, c, id)) }
		n.spawned[n.ch].Add(1)
		spawn(n.ch, 0, 1) // may wait for a unit: Stats.Waiting
		r.nestOwners.Add(-1)
		n.res <- g.Wait(context.Background())
	}()
}

// resultsOwner is the owner of a nest through a Results.
func (n *fzNest) resultsOwner(r *fzRun) {
	g := smartpool.NewResults[int](context.Background(), r.pool)
	g.SetLimit(n.limit)
	var spawn func(c, d, id int)
	spawn = func(c, d, id int) {
		body := n.page(r, spawn, d, c, id)
		g.Go(fzLayout[c].key, func(ctx context.Context) (int, error) { return id, body(ctx) })
	}
	n.spawned[n.ch].Add(1)
	spawn(n.ch, 0, 1)
	r.nestOwners.Add(-1)
	vals, err := g.Wait(context.Background())
	n.vals = vals
	n.res <- err
}

// checkResults checks a Results nest's values (see fzNest) once Wait
// returned err, after spawned Go calls.
func (n *fzNest) checkResults(spawned int32, err error) error {
	if len(n.vals) != int(spawned) {
		return fmt.Errorf("%d values for %d Go calls", len(n.vals), spawned)
	}
	pos := map[int]int{}
	for i, v := range n.vals {
		switch _, seen := pos[v]; {
		case v == 0 && err == nil:
			return fmt.Errorf("slot %d is zero, yet Wait returned nil", i)
		case v == 0:
		case v < 0 || v >= 1<<(n.depth+1) || seen:
			return fmt.Errorf("slot %d holds %d: not a task's number, or twice (values %v)", i, v, n.vals)
		default:
			pos[v] = i
		}
	}
	for v, i := range pos {
		if p, ok := pos[v/2]; ok && v > 1 && p > i {
			return fmt.Errorf("task %d's slot %d comes before its parent's %d (values %v)", v, i, p, n.vals)
		}
		if s, ok := pos[v+1]; ok && v%2 == 0 && s < i {
			return fmt.Errorf("task %d's slot %d comes after its later sibling's %d (values %v)", v, i, s, n.vals)
		}
	}
	return nil
}

func (n *fzNest) enter(r *fzRun) {
	r.enter()
	v := n.active.Add(1)
	for m := n.most.Load(); v > m && !n.most.CompareAndSwap(m, v); m = n.most.Load() {
	}
}

func (n *fzNest) leave(r *fzRun) { n.active.Add(-1); r.leave() }

// page returns the function of task id, at depth d of channel ch, which
// spawns its children through spawn.
func (n *fzNest) page(r *fzRun, spawn func(c, d, id int), d, ch, id int) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		n.enter(r)
		if n.yield {
			n.leave(r)
			smartpool.Yield(ctx, func() {})
			n.enter(r)
		}
		for i := range 2 {
			if d >= n.depth {
				break
			}
			c := ch
			if n.spread && i == 1 {
				c = fzNestChans[(indexOf(fzNestChans[:], ch)+1)%len(fzNestChans)]
			}
			n.spawned[c].Add(1)
			n.leave(r)
			spawn(c, d+1, 2*id+i)
			n.enter(r)
		}
		n.leave(r)
		n.ran[ch].Add(1)
		return nil
	}
}

func indexOf(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// nestCounts adds the nests' tasks to the ledger's counts: those that ran,
// and how many of the others (refused, or skipped as cancelled) the pool
// may have counted as cancelled, at most.
func (r *fzRun) nestCounts(c *[fzChans][5]uint64) (slack [fzChans]uint64) {
	for _, n := range r.nests {
		for ch := range fzChans {
			ran := uint64(n.ran[ch].Load())
			c[ch][0] += ran
			slack[ch] += uint64(n.spawned[ch].Load()) - ran
		}
	}
	return slack
}

// checkNests waits for every nest to end, within the bound, and checks it:
// Wait's error is nil (then every spawned task ran) or says Close stopped
// it; at most its limit of its functions ran at once.
func (r *fzRun) checkNests() {
	for i, n := range r.nests {
		err := fzRecv(r.t, n.res, fmt.Sprintf("nested group %d (depth %d, limit %d) ending", i, n.depth, n.limit))
		var spawned, ran int32
		for ch := range fzChans {
			spawned += n.spawned[ch].Load()
			ran += n.ran[ch].Load()
		}
		switch {
		case err == nil && ran != spawned:
			r.t.Errorf("nested group %d: Wait returned nil with %d of %d tasks run", i, ran, spawned)
		case err != nil && !errors.Is(err, smartpool.ErrClosed) && !errors.Is(err, context.Canceled):
			r.t.Errorf("nested group %d: Wait: %v", i, err)
		case err == nil && spawned != 1<<(n.depth+1)-1:
			r.t.Errorf("nested group %d: %d tasks spawned, want %d", i, spawned, 1<<(n.depth+1)-1)
		}
		if n.results {
			if err := n.checkResults(spawned, err); err != nil {
				r.t.Errorf("nested group %d through a Results: %v", i, err)
			}
		}
		if m := n.most.Load(); m > int32(n.limit) {
			r.t.Errorf("nested group %d: %d of its functions ran at once, limit %d", i, m, n.limit)
		}
	}
}
