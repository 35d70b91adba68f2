package smartpool_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/stretchr/testify/require"
)

// A call that waits for a unit of Config.Limit or for room in its group
// holds no channel while it waits: a removal, of another channel or of its
// own, returns at once, and the call finds its channel again when its wait
// ends (the channel re-added under its key, or gone). Each case runs in a
// synctest bubble, where a removal held back by the waiter would wait until
// its context ended.
func TestRemove_NotHeldByWaitingCallers(t *testing.T) {
	type waiter struct {
		name string
		// wait submits a task to "x" that can run only once "hold"'s task
		// ended, and returns the submit's error; ran counts the task's run.
		wait func(p *smartpool.Pool[string], x *channels.FIFO, ran *atomic.Int32) error
		// gone is the error of a wait whose channel was removed meanwhile.
		gone error
		// readded: the call finds a channel re-added under its key.
		readded bool
		// limit is Config.Limit: 1 for the held task to hold the only unit.
		limit int
	}
	task := func(ran *atomic.Int32) func(context.Context) {
		return func(context.Context) { ran.Add(1) }
	}
	waiters := []waiter{
		{name: "Submit WithContext, waiting for a unit", gone: smartpool.ErrClosed, readded: true, limit: 1,
			wait: func(p *smartpool.Pool[string], _ *channels.FIFO, ran *atomic.Int32) error {
				return p.Submit("x", task(ran), smartpool.WithContext(context.Background()))
			}},
		{name: "the channel's own Submit WithContext, waiting for a unit", gone: smartpool.ErrClosed, limit: 1,
			wait: func(_ *smartpool.Pool[string], x *channels.FIFO, ran *atomic.Int32) error {
				return x.Submit(task(ran), smartpool.WithContext(context.Background()))
			}},
		{name: "Group.Go at its limit, waiting for room", gone: smartpool.ErrClosed, readded: true,
			wait: func(p *smartpool.Pool[string], _ *channels.FIFO, ran *atomic.Int32) error {
				g := smartpool.NewGroup(context.Background(), p)
				g.SetLimit(1)
				g.Go("hold", func(context.Context) error { return nil }) // queued behind the held task: the group is at its limit
				g.Go("x", func(ctx context.Context) error { task(ran)(ctx); return nil })
				return g.Wait(context.Background())
			}},
	}
	for _, w := range waiters {
		for _, removed := range []string{"other", "own", "own, re-added"} {
			if removed == "own, re-added" && !w.readded {
				continue
			}
			t.Run(fmt.Sprintf("%s/removed=%s", w.name, removed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					x := channels.NewFIFO()
					o := start(t, &behavior{workers: 1, limit: w.limit, spare: []int{1},
						levels: [][]ch{{fifo("hold"), {key: "x", c: x}, fifo("other")}}})
					p := o.Pool()
					gate := newGate()
					submit(t, o, "hold", gate.task("hold"))
					gate.waitStarted(t, 1)
					release := sync.OnceFunc(func() { close(gate.release) })
					defer release() // before the pool's Close, should the test fail

					var ran atomic.Int32
					done := make(chan error, 1)
					go func() { done <- w.wait(p, x, &ran) }()
					synctest.Wait() // the waiter waits

					key := "other"
					if removed != "other" {
						key = "x"
					}
					ctx, cancel := context.WithTimeout(context.Background(), long)
					defer cancel()
					_, err := p.RemoveChannel(ctx, key, smartpool.Drop)
					require.NoError(t, err)
					require.NoError(t, ctx.Err(), "RemoveChannel waited for a call waiting elsewhere")
					readded := channels.NewFIFO()
					if removed == "own, re-added" {
						require.NoError(t, p.AddChannel(0, smartpool.ChannelParams[string]{Key: "x"}, readded, "x"))
					}

					release()
					err = <-done
					synctest.Wait()
					switch removed {
					case "own":
						require.ErrorIs(t, err, w.gone)
						require.Zero(t, ran.Load())
					default:
						require.NoError(t, err)
						require.Equal(t, int32(1), ran.Load())
					}
					if w.limit > 0 {
						require.Zero(t, p.Stats().Admitted, "a unit taken by a call whose channel went is given back")
					}
					if removed == "own, re-added" {
						st, ok := p.Stats().Channel("x")
						require.True(t, ok)
						require.Equal(t, uint64(1), st.Ran, "the waiting call's task went to the channel its key names now")
					}
				})
			})
		}
	}
}

// A call that waits for room in a full Bounded, or runs a task inline in
// its submitter's place, holds only the channel it waits or runs in: a
// removal of another channel returns at once, and a removal of that channel
// waits for the run (which it cannot end) or ends the wait for room (the
// call returns ErrClosed). Each case runs in a synctest bubble, where a
// removal held back by the call would wait until its context ended.
func TestRemove_HeldOnlyByItsOwnChannel(t *testing.T) {
	type caller struct {
		name string
		// call makes the call from a task of "hold" (the pool's one worker
		// and its one unit); block is what a task run inline waits for.
		call  func(p *smartpool.Pool[string], block <-chan struct{}) error
		limit int  // Config.Limit
		runs  bool // the call runs a task of "x" inline (else it waits for room in "x")
	}
	blocked := func(block <-chan struct{}) func(context.Context) {
		return func(context.Context) { <-block }
	}
	callers := []caller{
		{name: "Submit WithContext, waiting for room in a full Bounded",
			call: func(p *smartpool.Pool[string], block <-chan struct{}) error {
				return p.Submit("x", blocked(block), smartpool.WithContext(context.Background()))
			}},
		{name: "Submit WithContext at the limit, run inline", limit: 1, runs: true,
			call: func(p *smartpool.Pool[string], block <-chan struct{}) error {
				return p.Submit("x", blocked(block), smartpool.WithContext(context.Background()))
			}},
		{name: "Group.Go at the group's limit, run inline", runs: true,
			call: func(p *smartpool.Pool[string], block <-chan struct{}) error {
				g := smartpool.NewGroup(context.Background(), p)
				g.SetLimit(1)
				g.Go("hold", func(context.Context) error { // the parent holds the group's one place
					g.Go("x", func(ctx context.Context) error { blocked(block)(ctx); return nil })
					return nil
				})
				return g.Wait(context.Background())
			}},
	}
	for _, c := range callers {
		for _, removed := range []string{"other", "own"} {
			t.Run(fmt.Sprintf("%s/removed=%s", c.name, removed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					x := channels.NewBounded(1)
					o := start(t, &behavior{workers: 1, limit: c.limit, spare: []int{1},
						levels: [][]ch{{fifo("hold"), {key: "x", c: x}, fifo("other")}}})
					p := o.Pool()
					block := make(chan struct{})
					unblock := sync.OnceFunc(func() { close(block) })
					defer unblock() // before the pool's Close, should the test fail
					done := make(chan error, 1)
					if c.runs {
						submit(t, o, "hold", func(context.Context) { done <- c.call(p, block) })
					} else {
						gate := newGate()
						submit(t, o, "hold", gate.task("hold")) // the worker is held: x's task stays queued
						gate.waitStarted(t, 1)
						defer close(gate.release)
						require.NoError(t, x.Submit(func(context.Context) {}))
						go func() { done <- c.call(p, block) }()
					}
					synctest.Wait() // the call waits, or its task runs inline and blocks

					key := "other"
					if removed == "own" {
						key = "x"
					}
					ctx, cancel := context.WithTimeout(context.Background(), long)
					defer cancel()
					_, err := p.RemoveChannel(ctx, key, smartpool.Drop)
					switch {
					case removed == "own" && c.runs:
						require.ErrorIs(t, err, context.DeadlineExceeded, "the removal of x waits for x's task run inline")
						unblock()
						<-done
						_, err = p.RemoveChannel(context.Background(), key, smartpool.Drop)
						require.NoError(t, err)
					case removed == "own":
						require.NoError(t, err)
						require.NoError(t, ctx.Err(), "RemoveChannel waited for the call waiting in its channel")
						require.ErrorIs(t, <-done, smartpool.ErrClosed, "the removal ends the wait for room")
					default:
						require.NoError(t, err)
						require.NoError(t, ctx.Err(), "RemoveChannel waited for a call in another channel")
					}
				})
			})
		}
	}
}
