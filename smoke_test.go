package smartpool_test

import (
	"context"
	"sync"
	"testing"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

type key int

type two struct{ hi, lo *channels.FIFO }

func (b *two) Config() smartpool.Config[key] {
	return smartpool.Config[key]{Workers: 2, Levels: [][]smartpool.ChannelParams[key]{{{Key: 0, CompleteOnClose: true}}, {{Key: 1}}}}
}
func (b *two) Channel(k key) smartpool.Channel {
	if k == 0 {
		return b.hi
	}
	return b.lo
}
func (b *two) Followup(k key) key { return k }

func TestSmoke(t *testing.T) {
	b := &two{channels.NewFIFO(), channels.NewFIFO()}
	o, err := smartpool.New[key](b)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 100000 {
		wg.Add(1)
		b.hi.Submit(func(context.Context) { wg.Done() })
	}
	wg.Wait()
	r, err := o.Close(context.Background())
	t.Log(r.Total(), err)
}

func BenchmarkSmoke(bb *testing.B) {
	b := &two{channels.NewFIFO(), channels.NewFIFO()}
	o, _ := smartpool.New[key](b)
	var wg sync.WaitGroup
	bb.ReportAllocs()
	f := func(context.Context) { wg.Done() }
	wg.Add(bb.N)
	for range bb.N {
		b.hi.Submit(f)
	}
	wg.Wait()
	o.Close(context.Background())
}
