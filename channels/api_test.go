package channels_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/source"
)

// kind is one channel kind under test, with every submit method it has.
type kind struct {
	name string
	make func() smartpool.Channel
	// submits are the kind's submit methods, each queuing a no-op task.
	submits func(ch smartpool.Channel) map[string]func() error
	// nilSubmits are the same methods given a nil task or function.
	nilSubmits func(ch smartpool.Channel) map[string]func() error
}

func noop(context.Context) {}

var far = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)

func kinds() []kind {
	return []kind{
		{
			name: "FIFO",
			make: func() smartpool.Channel { return channels.NewFIFO() },
			submits: func(ch smartpool.Channel) map[string]func() error {
				f := ch.(*channels.FIFO)
				return map[string]func() error{
					"Submit":      func() error { return f.Submit(noop) },
					"Push":        func() error { return src(f).Push(idTask(0), smartpool.Order{}) },
					"SubmitBatch": func() error { return f.SubmitBatch(noop, noop) },
				}
			},
			nilSubmits: func(ch smartpool.Channel) map[string]func() error {
				f := ch.(*channels.FIFO)
				return map[string]func() error{
					"Submit":      func() error { return f.Submit(nil) },
					"Push":        func() error { return src(f).Push(nil, smartpool.Order{}) },
					"SubmitBatch": func() error { return f.SubmitBatch(noop, nil) },
				}
			},
		},
		{
			name: "Deadline",
			make: func() smartpool.Channel { return channels.NewDeadline() },
			submits: func(ch smartpool.Channel) map[string]func() error {
				d := ch.(*channels.Deadline)
				return map[string]func() error{
					"Submit":     func() error { return d.Submit(far, noop) },
					"SubmitTask": func() error { return d.SubmitTask(far, idTask(0)) },
					"Push":       func() error { return src(d).Push(idTask(0), smartpool.Order{}) },
				}
			},
			nilSubmits: func(ch smartpool.Channel) map[string]func() error {
				d := ch.(*channels.Deadline)
				return map[string]func() error{
					"Submit":     func() error { return d.Submit(far, nil) },
					"SubmitTask": func() error { return d.SubmitTask(far, nil) },
					"Push":       func() error { return src(d).Push(nil, smartpool.Order{}) },
				}
			},
		},
		{
			name: "Priority",
			make: func() smartpool.Channel { return channels.NewPriority() },
			submits: func(ch smartpool.Channel) map[string]func() error {
				p := ch.(*channels.Priority)
				return map[string]func() error{
					"Submit":     func() error { return p.Submit(1, noop) },
					"SubmitTask": func() error { return p.SubmitTask(-1, idTask(0)) },
					"Push":       func() error { return src(p).Push(idTask(0), smartpool.Order{}) },
				}
			},
			nilSubmits: func(ch smartpool.Channel) map[string]func() error {
				p := ch.(*channels.Priority)
				return map[string]func() error{
					"Submit":     func() error { return p.Submit(1, nil) },
					"SubmitTask": func() error { return p.SubmitTask(1, nil) },
					"Push":       func() error { return src(p).Push(nil, smartpool.Order{}) },
				}
			},
		},
		{
			name: "Multi",
			make: func() smartpool.Channel {
				// NewDeadline is variadic, so it needs a wrapper to be a newShard.
				return channels.NewMulti(3, func() *channels.Deadline { return channels.NewDeadline() })
			},
			submits: func(ch smartpool.Channel) map[string]func() error {
				m := ch.(*channels.Multi[*channels.Deadline])
				return map[string]func() error{
					"Submit":           func() error { return m.Submit(noop) },
					"Push":             func() error { return src(m).Push(idTask(0), smartpool.Order{}) },
					"Next().Submit":    func() error { return m.Next().Submit(far, noop) },
					"Shards()[2].Push": func() error { return src(m.Shards()[2]).Push(idTask(0), smartpool.Order{}) },
				}
			},
			nilSubmits: func(ch smartpool.Channel) map[string]func() error {
				m := ch.(*channels.Multi[*channels.Deadline])
				return map[string]func() error{
					"Submit":        func() error { return m.Submit(nil) },
					"Push":          func() error { return src(m).Push(nil, smartpool.Order{}) },
					"Next().Submit": func() error { return m.Next().Submit(far, nil) },
				}
			},
		},
	}
}

func TestNilTask(t *testing.T) {
	for _, k := range kinds() {
		t.Run(k.name, func(t *testing.T) {
			ch := k.make()
			for name, submit := range k.nilSubmits(ch) {
				if err := submit(); !errors.Is(err, smartpool.ErrNilTask) {
					t.Errorf("%s(nil) = %v, want ErrNilTask", name, err)
				}
			}
			if n := ch.Len(); n != 0 {
				t.Errorf("Len = %d after nil submits, want 0", n)
			}
		})
	}
}

func TestSubmitAfterClose(t *testing.T) {
	for _, k := range kinds() {
		for _, drop := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/drop=%v", k.name, drop), func(t *testing.T) {
				ch := served(k.make())
				submits := k.submits(ch)
				for name, submit := range submits {
					if err := submit(); err != nil {
						t.Fatalf("%s before Close: %v", name, err)
					}
				}
				queued := ch.Len()
				out := src(ch).Close(drop)
				for name, submit := range submits {
					if err := submit(); !errors.Is(err, smartpool.ErrClosed) {
						t.Errorf("%s after Close(%v) = %v, want ErrClosed", name, drop, err)
					}
				}
				if drop {
					if len(out) != queued || ch.Len() != 0 || src(ch).Poll(0) != nil {
						t.Errorf("Close(true) returned %d of %d tasks, Len %d", len(out), queued, ch.Len())
					}
					if again := src(ch).Close(true); len(again) != 0 {
						t.Errorf("second Close(true) returned %d tasks", len(again))
					}
					return
				}
				if len(out) != 0 || ch.Len() != queued {
					t.Errorf("Close(false) returned %d tasks, Len %d, want 0 and %d", len(out), ch.Len(), queued)
				}
				polled := 0
				for q := range src(ch).Queues() {
					for src(ch).Poll(q) != nil {
						polled++
					}
				}
				if polled != queued {
					t.Errorf("polled %d tasks after Close(false), want %d", polled, queued)
				}
			})
		}
	}
}

func TestCloseDropReturnsQueuedInOrder(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name string
		fill func() smartpool.Channel
		want []int
	}{
		{"FIFO", func() smartpool.Channel {
			f := served(channels.NewFIFO())
			for i := range 5 {
				mustOK(t, src(f).Push(idTask(i), smartpool.Order{}))
			}
			return f
		}, []int{0, 1, 2, 3, 4}},
		{"Deadline", func() smartpool.Channel {
			d := served(channels.NewDeadline())
			for i, at := range []time.Duration{3, 1, 2, 1, 0} {
				mustOK(t, d.SubmitTask(now.Add(at*time.Second), idTask(i)))
			}
			return d
		}, []int{4, 1, 3, 2, 0}},
		{"Priority", func() smartpool.Channel {
			p := served(channels.NewPriority())
			for i, prio := range []int{0, 2, 2, -1, 5} {
				mustOK(t, p.SubmitTask(prio, idTask(i)))
			}
			return p
		}, []int{4, 1, 2, 0, 3}},
		{"Multi", func() smartpool.Channel {
			m := served(channels.NewMulti(2, channels.NewFIFO))
			for i := range 5 {
				mustOK(t, src(m).Push(idTask(i), smartpool.Order{}))
			}
			return m
		}, []int{0, 2, 4, 1, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ch := c.fill()
			var got []int
			for _, task := range src(ch).Close(true) {
				got = append(got, idOf(t, task))
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("Close(true) = %v, want %v", got, c.want)
			}
		})
	}
}

// spy is a channel that keeps the Bits the pool gave it, so that a test can
// offer the same, attached, Bits to another channel.
type spy struct {
	source.Plug
	inner smartpool.Channel
	bits  source.Bits
}

func newSpy(c smartpool.Channel) *spy {
	s := &spy{inner: c}
	s.Plug = source.NewPlug(spySource{Source: src(c), s: s})
	return s
}

func (s *spy) Len() int { return s.inner.Len() }

// spySource is the spy's Source: the inner channel's, keeping the Bits.
type spySource struct {
	source.Source
	s *spy
}

func (ss spySource) Attach(b source.Bits) error {
	ss.s.bits = b
	return ss.Source.Attach(b)
}

func TestAttachTwice(t *testing.T) {
	s := newSpy(channels.NewFIFO())
	o := newPool(t, poolOpts{workers: 1}, s)
	defer closePool(t, o)
	if !s.bits.Attached() || s.bits.Len() != 1 {
		t.Fatalf("spy got bits %v", s.bits)
	}
	for _, k := range append(kinds(), kind{name: "Multi(1)", make: func() smartpool.Channel {
		return channels.NewMulti(1, channels.NewPriority)
	}}) {
		t.Run(k.name, func(t *testing.T) {
			ch := k.make()
			if src(ch).Queues() != 1 {
				// Bits for a different number of queues: refused, not ErrAttached.
				if err := src(ch).Attach(s.bits); err == nil || errors.Is(err, smartpool.ErrAttached) {
					t.Fatalf("Attach of a 1-queue Bits to a %d-queue channel = %v", src(ch).Queues(), err)
				}
				return
			}
			// Unattached Bits do not bind: the channel stays free.
			mustOK(t, src(ch).Attach(source.Bits{}))
			mustOK(t, src(ch).Attach(source.Bits{}))
			mustOK(t, src(ch).Attach(s.bits))
			if err := src(ch).Attach(s.bits); !errors.Is(err, smartpool.ErrAttached) {
				t.Fatalf("second Attach = %v, want ErrAttached", err)
			}
			if err := src(ch).Attach(source.Bits{}); !errors.Is(err, smartpool.ErrAttached) {
				t.Fatalf("Attach after attach = %v, want ErrAttached", err)
			}
		})
	}
}

func TestSecondPoolRefused(t *testing.T) {
	for _, k := range kinds() {
		t.Run(k.name, func(t *testing.T) {
			ch := k.make()
			o := newPool(t, poolOpts{workers: 1}, ch)
			defer closePool(t, o)
			_, err := smartpool.New[int](&testBehavior{chans: []smartpool.Channel{ch}, opts: poolOpts{workers: 1}})
			if !errors.Is(err, smartpool.ErrAttached) || !errors.Is(err, smartpool.ErrConfig) {
				t.Fatalf("New with an attached channel = %v, want ErrConfig and ErrAttached", err)
			}
		})
	}
}

func TestMultiNoShards(t *testing.T) {
	cases := map[string]*channels.Multi[*channels.FIFO]{
		"n=0":          channels.NewMulti(0, channels.NewFIFO),
		"n<0":          channels.NewMulti(-3, channels.NewFIFO),
		"n huge":       channels.NewMulti(1<<30, channels.NewFIFO),
		"nil newShard": channels.NewMulti[*channels.FIFO](2, nil),
		"nil shard":    channels.NewMulti(2, func() *channels.FIFO { return nil }),
		"zero shard":   channels.NewMulti(2, func() *channels.FIFO { return new(channels.FIFO) }),
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			if src(m).Queues() != 0 || m.Len() != 0 || len(m.Shards()) != 0 || m.Next() != nil {
				t.Fatalf("Queues %d, Len %d, Shards %d, Next %v", src(m).Queues(), m.Len(), len(m.Shards()), m.Next())
			}
			if err := src(m).Push(idTask(1), smartpool.Order{}); !errors.Is(err, smartpool.ErrNoQueues) {
				t.Fatalf("Push = %v, want ErrNoQueues", err)
			}
			if err := m.Submit(nil); !errors.Is(err, smartpool.ErrNilTask) {
				t.Fatalf("Submit(nil) = %v, want ErrNilTask", err)
			}
			if src(m).Poll(0) != nil || src(m).Close(true) != nil {
				t.Fatal("a Multi with no shards returned a task")
			}
			_, err := smartpool.New[int](&testBehavior{chans: []smartpool.Channel{m}, opts: poolOpts{workers: 1}})
			if !errors.Is(err, smartpool.ErrNoQueues) {
				t.Fatalf("New = %v, want ErrNoQueues", err)
			}
		})
	}
}

// noQueues is a broken channel with no queues: a FIFO whose Source says so.
type noQueues struct {
	source.Plug
	*channels.FIFO
}

func newNoQueues() noQueues {
	f := channels.NewFIFO()
	return noQueues{source.NewPlug(noQueuesSource{src(f)}), f}
}

type noQueuesSource struct{ source.Source }

func (noQueuesSource) Queues() int { return 0 }

func TestMultiShardWithoutQueuesRefused(t *testing.T) {
	m := channels.NewMulti(2, func() smartpool.Channel { return newNoQueues() })
	if src(m).Queues() != 0 {
		t.Fatalf("Queues = %d, want 0", src(m).Queues())
	}
}

func TestMultiSameShardTwiceRefused(t *testing.T) {
	f := channels.NewFIFO()
	m := channels.NewMulti(2, func() *channels.FIFO { return f })
	_, err := smartpool.New[int](&testBehavior{chans: []smartpool.Channel{m}, opts: poolOpts{workers: 1}})
	if !errors.Is(err, smartpool.ErrAttached) {
		t.Fatalf("New = %v, want ErrAttached", err)
	}
}

func TestMultiRotation(t *testing.T) {
	m := channels.NewMulti(3, channels.NewFIFO)
	shards := m.Shards()
	for i := range 7 {
		if got, want := m.Next(), shards[i%3]; got != want {
			t.Fatalf("Next #%d is not shard %d", i, i%3)
		}
	}
	shards[0] = nil // Shards returns a copy
	if m.Shards()[0] == nil {
		t.Fatal("Shards shares its slice with the Multi")
	}
	for _, q := range []int{-1, 3, 1 << 20} {
		if src(m).Poll(q) != nil {
			t.Fatalf("Poll(%d) returned a task", q)
		}
	}
}
