package statuspage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/statuspage"
)

// The page follows a pool that reshapes: a channel added after the handler
// was made appears (its history from its first sample), a removed one goes,
// and paused and removing channels are flagged. The history is kept by key,
// so channels coming and going never mix their sparklines. In a synctest
// bubble: time.Sleep moves the bubble's clock to the next sample.
func TestReshape(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := channels.NewFIFO(), channels.NewFIFO()
		o, err := smartpool.New(smartpool.Levels[string]{{
			{Key: "a", Channel: a, CompleteOnClose: true},
			{Key: "b", Channel: b, CompleteOnClose: true},
		}}.With(smartpool.Config[string]{Workers: 1, StallAfter: -1, Spare: []int{2}, Logger: slog.New(slog.DiscardHandler)}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = o.Close(context.Background()) })
		p := o.Pool()
		h := statuspage.Handler(p, statuspage.Options{}) // a sample with a and b
		time.Sleep(time.Second)
		synctest.Wait() // the sampling timer's goroutine, due at the same instant, has run
		tenant := channels.NewFIFO()
		if err := p.AddChannel(0, smartpool.ChannelParams[string]{Key: "tenant"}, tenant, "tenant"); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := tenant.Submit(func(context.Context) {}); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if _, err := p.RemoveChannel(context.Background(), "b", smartpool.Drain); err != nil {
			t.Fatal(err)
		}
		if err := p.Pause("a"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // a sample with a and tenant
		synctest.Wait()

		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/?format=json", nil))
		var v struct {
			Levels []struct {
				Channels []struct {
					Key    string
					Ran    uint64
					Paused bool
					Spark  []float64
				}
			}
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, l := range v.Levels {
			for i, c := range l.Channels {
				got[c.Key] = i
			}
		}
		if _, ok := got["b"]; ok || len(got) != 2 {
			t.Fatalf("channels on the page %v: want a and tenant, not the removed b", got)
		}
		chans := v.Levels[0].Channels
		if c := chans[got["a"]]; !c.Paused {
			t.Errorf("a is paused, the page says %+v", c)
		}
		c := chans[got["tenant"]]
		if c.Ran != 3 || c.Paused {
			t.Errorf("tenant %+v: want 3 ran, not paused", c)
		}
		var sum float64
		for _, x := range c.Spark {
			sum += x
		}
		if sum != 3 { // one-second intervals: the 3 tasks, counted once, in tenant's line only
			t.Errorf("tenant's sparkline %v sums to %v tasks, want 3", c.Spark, sum)
		}
		if s := chans[got["a"]].Spark; len(s) > 0 && s[len(s)-1] != 0 {
			t.Errorf("a's sparkline %v shows tasks it did not run", s)
		}
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if body := rec.Body.String(); !strings.Contains(body, `class="flag paused"`) {
			t.Errorf("the page does not flag a as paused")
		}
	})
}

// A channel the program removes is listed as removed, with its final
// counts (the growth of Stats.Removed, when it went alone between two
// samples; its last sampled counts, marked so, when several did), for 15
// minutes; the totals keep its counts. In a synctest bubble.
func TestRemovedListed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b, c := channels.NewFIFO(), channels.NewFIFO(), channels.NewFIFO()
		o, err := smartpool.New(smartpool.Levels[string]{{
			{Key: "a", Channel: a}, {Key: "b", Channel: b}, {Key: "c", Channel: c},
		}}.With(smartpool.Config[string]{Workers: 1, StallAfter: -1, Spare: []int{3}, Logger: slog.New(slog.DiscardHandler)}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = o.Close(context.Background()) })
		p := o.Pool()
		h := statuspage.Handler(p, statuspage.Options{})
		type gone struct {
			Key, By, Ago  string
			Exact         bool
			Ran, Canceled uint64
		}
		read := func() (removed []gone, totalRan uint64, page string) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/?format=json", nil))
			var v struct {
				Removed []gone
				Total   struct{ Ran uint64 }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
				t.Fatal(err)
			}
			rec = httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
			return v.Removed, v.Total.Ran, rec.Body.String()
		}
		for ch, n := range map[*channels.FIFO]int{a: 1, b: 3, c: 2} {
			for range n {
				if err := ch.Submit(func(context.Context) {}); err != nil {
					t.Fatal(err)
				}
			}
		}
		synctest.Wait()
		time.Sleep(time.Second) // a sample of a, b and c, their tasks run
		synctest.Wait()
		if _, err := p.RemoveChannel(context.Background(), "b", smartpool.Drain); err != nil {
			t.Fatal(err)
		}
		if err := b.Submit(func(context.Context) {}); err == nil {
			t.Fatal("a removed channel took a task")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		removed, ran, page := read()
		if len(removed) != 1 || removed[0] != (gone{Key: "b", By: "the program", Ago: "0s", Exact: true, Ran: 3}) || ran != 6 {
			t.Fatalf("removed %+v, total ran %d: want b with its 3 tasks, final, and 6 in all", removed, ran)
		}
		if !strings.Contains(page, `<tr data-key="b"><td class="key">b</td><td>0s ago</td><td>the program</td><td class="ran">3</td>`) {
			t.Errorf("the page does not list b as removed:\n%s", page)
		}
		// a and c go between the same two samples: each is listed with its
		// last sampled counts, at least.
		for _, k := range []string{"a", "c"} {
			if _, err := p.RemoveChannel(context.Background(), k, smartpool.Drop); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		synctest.Wait()
		removed, ran, page = read()
		want := []gone{{Key: "a", By: "the program", Ago: "0s", Ran: 1}, {Key: "c", By: "the program", Ago: "0s", Ran: 2}, {Key: "b", By: "the program", Ago: "1s", Exact: true, Ran: 3}}
		if fmt.Sprint(removed) != fmt.Sprint(want) || ran != 6 {
			t.Errorf("removed %+v, total ran %d: want %+v and 6", removed, ran, want)
		}
		if !strings.Contains(page, `<td class="ran">1</td><td>0</td><td>0</td><td>0</td><td>at least</td>`) {
			t.Errorf("the page does not mark a's counts as a lower bound:\n%s", page)
		}
		time.Sleep(15 * time.Minute)
		synctest.Wait()
		if removed, _, page = read(); len(removed) != 0 || !strings.Contains(page, `<table id="removed" class="section" hidden>`) {
			t.Errorf("15 minutes on, removed %+v: want none listed", removed)
		}
	})
}
