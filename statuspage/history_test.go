package statuspage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/statuspage"
)

// quietPool is one FIFO on one worker, without the stall watchdog, whose
// timer would keep a synctest bubble's clock moving.
type quietPool struct{ jobs *channels.FIFO }

func (q quietPool) Config() smartpool.Config[string] {
	return smartpool.Config[string]{Workers: 1, StallAfter: -1, Logger: slog.New(slog.DiscardHandler),
		Levels: [][]smartpool.ChannelParams[string]{{{Key: "jobs", CompleteOnClose: true}}}}
}
func (q quietPool) Channel(string) smartpool.Channel { return q.jobs }
func (q quietPool) Followup(k string) string         { return k }

// history is the part of the JSON view the sparklines come from.
type history struct {
	Rate    float64
	History int
	Levels  []struct {
		Channels []struct {
			PerSec float64
			Spark  []float64
			Points string
		}
	}
}

// The page records the pool's history from the moment its handler is made,
// not from its first request: the first view shows the last minute's rates,
// the sparkline spans its box, scaled to the data; the recording stops once
// the pool has closed. In a synctest bubble, so the minute is fake time:
// time.Sleep moves the bubble's clock, it synchronises nothing.
func TestHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := quietPool{jobs: channels.NewFIFO()}
		o, err := smartpool.New[string](q)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = o.Close(context.Background()) })
		h := statuspage.Handler(o.Pool(), statuspage.Options{}) // samples at 0s, 1s, 2s...
		read := func() history {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/smartpool?format=json", nil))
			var v history
			if err := json.NewDecoder(rec.Body).Decode(&v); err != nil {
				t.Fatal(err)
			}
			return v
		}
		perSecond := func(k int) int { return k % 4 } // tasks in second k
		time.Sleep(500 * time.Millisecond)
		for k := range 70 { // at k+0.5 s, between two samples
			for range perSecond(k) {
				if err := q.jobs.Submit(func(context.Context) {}); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(time.Second)
		}
		synctest.Wait()
		v := read() // the first request, at 70.5 s
		if v.History != 70 || len(v.Levels) != 1 || len(v.Levels[0].Channels) != 1 {
			t.Fatalf("history of %d s, levels %+v: want 70 s of one channel", v.History, v.Levels)
		}
		c := v.Levels[0].Channels[0]
		// Before the last minute, a point every 10 s: the seconds 0 to 10,
		// at 1.3 tasks a second; then the last minute, a point a second.
		want := []float64{1.3}
		for k := 10; k < 70; k++ {
			want = append(want, float64(perSecond(k)))
		}
		if fmt.Sprint(c.Spark) != fmt.Sprint(want) {
			t.Errorf("the first view's sparkline %v, want the 10 s before the last minute, then its rates %v", c.Spark, want)
		}
		if last := float64(perSecond(69)); v.Rate != last || c.PerSec != last {
			t.Errorf("the first view shows %v tasks/s (channel %v), want %v", v.Rate, c.PerSec, last)
		}
		// The points span the box left to right, the greatest rate (3) at
		// the same height wherever it is, zero at the bottom.
		pts := strings.Fields(c.Points)
		if len(pts) != len(want) {
			t.Fatalf("%d points for %d rates: %q", len(pts), len(want), c.Points)
		}
		ys := map[float64]map[string]bool{}
		var xs []float64
		for i, p := range pts {
			x, y, ok := strings.Cut(p, ",")
			fx, err1 := strconv.ParseFloat(x, 64)
			if _, err2 := strconv.ParseFloat(y, 64); !ok || err1 != nil || err2 != nil {
				t.Fatalf("point %q", p)
			}
			xs = append(xs, fx)
			if ys[want[i]] == nil {
				ys[want[i]] = map[string]bool{}
			}
			ys[want[i]][y] = true
		}
		if xs[0] != 0 || xs[len(xs)-1] != 100 {
			t.Errorf("the sparkline spans x %v to %v of its 100-wide box, want all of it", xs[0], xs[len(xs)-1])
		}
		if len(ys[3]) != 1 || len(ys[0]) != 1 || !ys[3]["20.0"] || !ys[0]["98.0"] {
			t.Errorf("the sparkline's heights by rate %v: want rate 3 at 20.0, 0 at 98.0", ys)
		}

		// Closed, the pool gets one last sample, then none: the history
		// ends with the second the pool closed in (no task), not with a
		// second per tick since.
		if _, err := o.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		c = read().Levels[0].Channels[0]
		// The samples: 0 s and 10 s (coarse), then 11 s to 71 s (fine).
		if n := len(c.Spark); n != 62 || c.Spark[n-2] != float64(perSecond(69)) || c.Spark[n-1] != 0 {
			t.Errorf("5 s after the pool closed (0.5 s after its last task), the sparkline ends %v: still sampling", c.Spark[max(0, n-6):])
		}
	})
}

// The handler serves the page and its JSON at whatever path the mux hands
// it, so a request for the mount point serves it, with or without a
// trailing slash where the pattern has one, with or without StripPrefix.
// The page fetches its JSON from its own URL with ?format=json.
func TestMount(t *testing.T) {
	jobs := channels.NewFIFO()
	o, err := smartpool.New(smartpool.Levels[string]{{{Key: "jobs", Channel: jobs}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = o.Close(context.Background()) })
	h := statuspage.Handler(o.Pool(), statuspage.Options{})
	for _, c := range []struct {
		name  string
		mount func(*http.ServeMux)
		paths []string // paths that serve the page
	}{
		{"exact", func(m *http.ServeMux) { m.Handle("/debug/smartpool", h) }, []string{"/debug/smartpool"}},
		{"subtree", func(m *http.ServeMux) { m.Handle("/debug/smartpool/", h) }, []string{"/debug/smartpool", "/debug/smartpool/"}},
		{"StripPrefix", func(m *http.ServeMux) { m.Handle("/debug/smartpool/", http.StripPrefix("/debug/smartpool", h)) },
			[]string{"/debug/smartpool", "/debug/smartpool/"}},
		{"StripPrefix slash", func(m *http.ServeMux) { m.Handle("/debug/smartpool/", http.StripPrefix("/debug/smartpool/", h)) },
			[]string{"/debug/smartpool", "/debug/smartpool/"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mux := http.NewServeMux()
			c.mount(mux)
			srv := httptest.NewServer(mux)
			defer srv.Close()
			for _, path := range c.paths {
				res, err := http.Get(srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `<table id="channels">`) {
					t.Errorf("GET %s: %s, not the page", path, res.Status)
					continue
				}
				// As the page's script does: fetch("?format=json").
				ref, _ := res.Request.URL.Parse("?format=json")
				res, err = http.Get(ref.String())
				if err != nil {
					t.Fatal(err)
				}
				var v struct{ State string }
				err = json.NewDecoder(res.Body).Decode(&v)
				res.Body.Close()
				if res.StatusCode != http.StatusOK || err != nil || v.State != "running" {
					t.Errorf("GET %s (the JSON of %s): %s, %v, state %q", ref.Path, path, res.Status, err, v.State)
				}
			}
		})
	}
}

// The page shows each channel's cancelled and yielded counts.
func TestCancelledYielded(t *testing.T) {
	d := &demo{urgent: channels.NewFIFO(), normal: channels.NewFIFO(), bulk: channels.NewBounded(10)}
	o, err := smartpool.New[string](d)
	if err != nil {
		t.Fatal(err)
	}
	p := o.Pool()
	h := statuspage.Handler(p, statuspage.Options{})
	yielding, resume := make(chan struct{}), make(chan struct{})
	defer func() {
		close(resume)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := o.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	// An urgent task yields its worker while it waits.
	if err := d.urgent.Submit(func(ctx context.Context) {
		smartpool.Yield(ctx, func() { close(yielding); <-resume })
	}); err != nil {
		t.Fatal(err)
	}
	<-yielding
	// A normal task queued behind two blocked workers is cancelled.
	started, release := make(chan struct{}), make(chan struct{})
	for range 2 {
		_ = d.urgent.Submit(func(context.Context) { started <- struct{}{}; <-release })
	}
	<-started
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	if err := p.Submit("normal", func(context.Context) { t.Error("a cancelled task ran") }, smartpool.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	cancel()
	close(release)
	eventually(t, func() bool {
		s := p.Stats()
		u, _ := s.Channel("urgent")
		n, _ := s.Channel("normal")
		return u.Yielded == 1 && n.Cancelled == 1
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/smartpool", nil))
	page := rec.Body.String()
	for key, want := range map[string]string{"urgent": `<td class="cancelled">0</td><td class="yielded">1</td>`,
		"normal": `<td class="cancelled">1</td><td class="yielded">0</td>`} {
		row := regexp.MustCompile(`(?s)data-key="` + key + `">.*?</tr>`).FindString(page)
		if !strings.Contains(row, want) {
			t.Errorf("the %s row lacks %s:\n%s", key, want, row)
		}
	}
	for _, th := range []string{"<th>cancelled</th>", "<th>yielded</th>"} {
		if !strings.Contains(page, th) {
			t.Errorf("the page lacks the heading %s", th)
		}
	}
}

// The charts span 15 minutes at 10-second steps before the last minute at
// 1-second steps; queue depth is charted beside throughput, each with its
// scale; a totals row sums the channels. In a synctest bubble: time.Sleep
// moves the bubble's clock.
func TestHistorySpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := quietPool{jobs: channels.NewFIFO()}
		o, err := smartpool.New[string](q)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = o.Close(context.Background()) })
		p := o.Pool()
		h := statuspage.Handler(p, statuspage.Options{})
		// Two tasks a second; from 10 minutes on, the channel is paused, so
		// its queue grows by two a second.
		time.Sleep(500 * time.Millisecond)
		for k := range 20 * 60 {
			if k == 10*60 {
				if err := p.Pause("jobs"); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 {
				if err := q.jobs.Submit(func(context.Context) {}); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(time.Second)
		}
		synctest.Wait()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/?format=json", nil))
		type chart struct {
			Key, SparkMax, DepthMax string
			PerSec                  float64
			Queued                  int
			Spark, Depth            []float64
		}
		var v struct {
			History int
			Levels  []struct{ Channels []chart }
			Total   chart
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		// At 1200.5 s: the fine samples from 1140 s to 1200 s, the coarse
		// ones from 240 s (90 steps of 10 s before 1140 s).
		if v.History != 960 {
			t.Errorf("the charts span %d s, want 960 (15 minutes at 10 s steps, then the last minute)", v.History)
		}
		c := v.Levels[0].Channels[0]
		if len(c.Spark) != 150 || len(c.Depth) != 150 {
			t.Fatalf("%d rates, %d depths: want 90 steps of 10 s and 60 of 1 s", len(c.Spark), len(c.Depth))
		}
		// Until 600 s two tasks a second ran; then none, the queue growing.
		if c.Spark[0] != 2 || c.Spark[35] != 2 || c.Spark[36] != 0 || c.Depth[35] != 0 || c.Depth[36] != 20 {
			t.Errorf("around the pause at 600 s: rates %v, depths %v", c.Spark[34:38], c.Depth[34:38])
		}
		if c.Queued != 1200 || c.Depth[149] != 1200 || c.DepthMax != "1.2k" || c.SparkMax != "2/s" {
			t.Errorf("queued %d, last depth %v, scales %q and %q: want 1200, 1200, 1.2k and 2/s", c.Queued, c.Depth[149], c.DepthMax, c.SparkMax)
		}
		if v.Total.Key != "all channels" || v.Total.Queued != 1200 || fmt.Sprint(v.Total.Spark) != fmt.Sprint(c.Spark) || fmt.Sprint(v.Total.Depth) != fmt.Sprint(c.Depth) {
			t.Errorf("the totals row %+v: want the one channel's figures", v.Total)
		}
	})
}
