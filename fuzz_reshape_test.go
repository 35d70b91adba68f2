// FuzzPoolOps, channels added and removed while it runs: the states of each
// channel slot, and the reshape operations and their checks.
package smartpool_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/smartpool-go/smartpool"
)

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
