package channels_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// BenchmarkPushPoll measures one Push-like submit and one Poll per
// operation, on one goroutine, with depth tasks already queued.
func BenchmarkPushPoll(b *testing.B) {
	task := smartpool.Func(noop)
	base := time.Now()
	for _, depth := range []int{0, 1024} {
		rng := rand.New(rand.NewPCG(1, 2))
		// Random deadlines and priorities keep the queue shuffled at depth.
		deadline := func() time.Time { return base.Add(time.Duration(rng.IntN(1 << 20))) }
		cases := []struct {
			name   string
			ch     smartpool.Channel
			submit func(ch smartpool.Channel) error
		}{
			{"FIFO", served(channels.NewFIFO()), func(ch smartpool.Channel) error { return src(ch).Push(task, smartpool.Order{}) }},
			{"Deadline", served(channels.NewDeadline()), func(ch smartpool.Channel) error {
				return ch.(*channels.Deadline).SubmitTask(deadline(), task)
			}},
			{"Priority", served(channels.NewPriority()), func(ch smartpool.Channel) error {
				return ch.(*channels.Priority).SubmitTask(rng.IntN(64), task)
			}},
			{"Multi4FIFO", served(channels.NewMulti(4, channels.NewFIFO)), func(ch smartpool.Channel) error { return src(ch).Push(task, smartpool.Order{}) }},
		}
		for _, c := range cases {
			b.Run(fmt.Sprintf("%s/depth=%d", c.name, depth), func(b *testing.B) {
				for range depth {
					if err := c.submit(c.ch); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				queues := src(c.ch).Queues()
				q := 0
				for b.Loop() {
					if err := c.submit(c.ch); err != nil {
						b.Fatal(err)
					}
					for src(c.ch).Poll(q) == nil { // a Multi's push and poll rotate apart
						q = (q + 1) % queues
					}
				}
			})
		}
	}
}

// BenchmarkParallelPushPoll has every goroutine push a task and poll one,
// contending on one FIFO or spreading over a Multi of four. (A push-only
// parallel benchmark would grow the queue without bound.)
func BenchmarkParallelPushPoll(b *testing.B) {
	task := smartpool.Func(noop)
	cases := []struct {
		name string
		ch   smartpool.Channel
	}{
		{"FIFO", served(channels.NewFIFO())},
		{"Multi4FIFO", served(channels.NewMulti(4, channels.NewFIFO))},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			queues := src(c.ch).Queues()
			b.RunParallel(func(pb *testing.PB) {
				q := 0
				for pb.Next() {
					if err := src(c.ch).Push(task, smartpool.Order{}); err != nil {
						b.Error(err)
						return
					}
					// Some queue holds a task: every goroutine pushes before
					// it polls.
					for src(c.ch).Poll(q) == nil {
						q = (q + 1) % queues
					}
				}
			})
		})
	}
}

// BenchmarkPoolSubmit runs tasks through a real pool of four workers,
// submitted from parallel goroutines, for FIFO and a Multi of four FIFOs.
func BenchmarkPoolSubmit(b *testing.B) {
	cases := []struct {
		name string
		ch   func() smartpool.Channel
	}{
		{"FIFO", func() smartpool.Channel { return channels.NewFIFO() }},
		{"Multi4FIFO", func() smartpool.Channel { return channels.NewMulti(4, channels.NewFIFO) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ch := c.ch()
			o := newPool(b, poolOpts{workers: 4, coc: true}, ch)
			task := smartpool.Func(func(context.Context) {})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := src(ch).Push(task, smartpool.Order{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			closePool(b, o) // runs what is left: part of the cost
		})
	}
}
