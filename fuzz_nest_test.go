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
// 3), bits 2-3 the depth minus one, bits 4-5 the limit minus one, bit 6 a
// Yield in every task, bit 7 the second child to the next channel. It must
// end (a spawn at the group's or the pool's limit runs inline, never
// waits), with at most limit of its functions running at once.
type fzNest struct {
	ch, depth, limit int
	yield, spread    bool

	spawned, ran  [fzChans]atomic.Int32
	active, most  atomic.Int32
	res           chan error // Wait's error, sent by the owner
	ownerSpawning atomic.Bool
}

func (r *fzRun) nestOp(arg int) {
	n := &fzNest{ch: fzNestChans[(arg&3)%3], depth: 1 + (arg>>2)&3, limit: 1 + (arg>>4)&3,
		yield: arg&(1<<6) != 0, spread: arg&(1<<7) != 0, res: make(chan error, 1)}
	r.nests = append(r.nests, n)
	n.ownerSpawning.Store(true)
	r.nestOwners.Add(1)
	if r.closeBegun {
		r.ownersAtClose++ // it may race Close too (fzRun.ownersAtClose)
	}
	go func() {
		g := smartpool.NewGroup(context.Background(), r.pool)
		g.SetLimit(n.limit)
		n.spawned[n.ch].Add(1)
		g.Go(fzLayout[n.ch].key, n.page(r, g, 0, n.ch)) // may wait for a unit: Stats.Waiting
		r.nestOwners.Add(-1)
		n.res <- g.Wait(context.Background())
	}()
}

func (n *fzNest) enter(r *fzRun) {
	r.enter()
	v := n.active.Add(1)
	for m := n.most.Load(); v > m && !n.most.CompareAndSwap(m, v); m = n.most.Load() {
	}
}

func (n *fzNest) leave(r *fzRun) { n.active.Add(-1); r.leave() }

func (n *fzNest) page(r *fzRun, g *smartpool.Group[string], d, ch int) func(ctx context.Context) error {
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
			g.Go(fzLayout[c].key, n.page(r, g, d+1, c))
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
		if m := n.most.Load(); m > int32(n.limit) {
			r.t.Errorf("nested group %d: %d of its functions ran at once, limit %d", i, m, n.limit)
		}
	}
}
