package statuspage_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/statuspage"
)

// measureJS records, on load and after each refresh of the page, where the
// browser laid out what the tests check, as JSON in the data-measure
// attribute of the <html> element, which --dump-dom shows.
const measureJS = `<script>
function measure() {
  const d = document.documentElement;
  const box = e => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, right: r.right, width: r.width, height: r.height}; };
  d.dataset.measure = JSON.stringify({
    refreshes: +document.getElementById("refreshes").dataset.refreshes,
    scrollWidth: d.scrollWidth, clientWidth: d.clientWidth,
    table: box(document.getElementById("channels")),
    title: box(document.querySelector("h1")),
    stall: box(document.getElementById("stall")),
    sparks: [...document.querySelectorAll("svg.spark")].map(box),
    lines: [...document.querySelectorAll("svg.spark polyline")].map(box),
  });
}
measure();
new MutationObserver(measure).observe(document.getElementById("refreshes"), {attributes: true});
</script>`

// measured serves h with measureJS added to its page.
func measured(h http.Handler) http.Handler { return injected(h, measureJS) }

// injected serves h with js added to the end of its page.
func injected(h http.Handler, js string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("format") == "json" {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = io.WriteString(w, strings.Replace(rec.Body.String(), "</body>", js+"</body>", 1))
	})
}

type rect struct{ Top, Bottom, Right, Width, Height float64 }

// layout is what measureJS records.
type layout struct {
	Refreshes                int
	ScrollWidth, ClientWidth float64
	Table, Title, Stall      rect
	Sparks, Lines            []rect
}

// measure loads url (served by measured) at 1280×900, lets the page
// refresh itself, and returns its layout after the last refresh.
func measure(t *testing.T, bin, url string) layout {
	t.Helper()
	dom := headless(t, bin, url, "--window-size=1280,900", "--virtual-time-budget=3000", "--dump-dom")
	m := regexp.MustCompile(`data-measure="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the page did not record its layout:\n%s", dom)
	}
	var l layout
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &l); err != nil {
		t.Fatal(err)
	}
	if l.Refreshes == 0 {
		t.Fatalf("the page did not refresh: %+v", l)
	}
	return l
}

// within polls cond every 50ms until it holds, failing after d: a bounded
// wait for an event that takes seconds.
func within(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(d); !cond(); <-tick.C {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", d)
		}
	}
}

// game is a pool like the demo's game server (examples/demo): ticks and
// player requests at a steady rate in the top two levels, and a backlog of
// small CPU tasks, more than the two workers can finish, in the lowest.
type game struct {
	realtime, responsive, backlog *channels.FIFO
	deadline                      *channels.Deadline
}

func (g *game) Config() smartpool.Config[string] {
	return smartpool.Config[string]{Workers: 2, Logger: slog.New(slog.DiscardHandler), Levels: [][]smartpool.ChannelParams[string]{
		{{Key: "Realtime", CompleteOnClose: true}},
		{{Key: "Responsive", CompleteOnClose: true}},
		{{Key: "Backlog"}, {Key: "BacklogDeadline"}},
	}}
}

func (g *game) Channel(k string) smartpool.Channel {
	switch k {
	case "Realtime":
		return g.realtime
	case "Responsive":
		return g.responsive
	case "Backlog":
		return g.backlog
	}
	return g.deadline
}

func (g *game) Followup(k string) string { return k }

// spin burns the CPU for d: it stands for real work.
func spin(d time.Duration) func(context.Context) {
	return func(context.Context) {
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
	}
}

// gameServer runs a game pool until the test ends and serves its page,
// measured, with actions on for everyone and a source of three dead
// letters; it returns the pool and the page's URL.
func gameServer(t *testing.T) (*smartpool.Pool[string], string) {
	g := &game{realtime: channels.NewFIFO(), responsive: channels.NewFIFO(), backlog: channels.NewFIFO(), deadline: channels.NewDeadline()}
	o, err := smartpool.New[string](g)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	produce := func(every time.Duration, submit func() error) {
		wg.Go(func() {
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					if err := submit(); err != nil {
						return
					}
				}
			}
		})
	}
	fill := func() error { // keep 20,000 backlog tasks of 40µs queued
		for g.backlog.Len() < 15000 {
			if err := g.backlog.Submit(spin(40 * time.Microsecond)); err != nil {
				return err
			}
		}
		for g.deadline.Len() < 5000 {
			if err := g.deadline.Submit(time.Now().Add(time.Second), spin(40*time.Microsecond)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := fill(); err != nil {
		t.Fatal(err)
	}
	produce(100*time.Millisecond, fill)
	produce(time.Millisecond, func() error { return g.realtime.Submit(spin(20 * time.Microsecond)) })
	produce(2*time.Millisecond, func() error { return g.responsive.Submit(spin(50 * time.Microsecond)) })
	srv := httptest.NewServer(measured(statuspage.Handler(o.Pool(), statuspage.Options{Title: "smartpool demo: a game server",
		Authorize:   func(*http.Request) (string, bool) { return "operator", true },
		Logger:      slog.New(slog.DiscardHandler),
		DeadLetters: []statuspage.DeadLetterSource{newShelf(3)}})))
	t.Cleanup(func() {
		srv.Close()
		stop()
		wg.Wait()
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := o.Close(cctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return o.Pool(), srv.URL + "/debug/smartpool"
}

// historyOf returns the seconds of history the page's sparklines span.
func historyOf(t *testing.T, url string) int {
	var v struct{ History int }
	if err := json.Unmarshal([]byte(jsonOf(t, url)), &v); err != nil {
		t.Fatal(err)
	}
	return v.History
}

// browserLayout: the page of a pool like the demo's, at 1280×900, fits the
// window's width, its sparklines are a readable size and their lines span
// them, and no stall banner shows; with actions on, the controls fit too.
// With STATUSPAGE_SCREENSHOT=path it
// writes the README's screenshot there, once the page has a minute of
// history.
func browserLayout(t *testing.T, bin string) {
	_, url := gameServer(t)
	within(t, 30*time.Second, func() bool { return historyOf(t, url) >= 3 })
	l := measure(t, bin, url)
	t.Logf("at 1280 px: the page is %v px wide, its table ends at %v px, the window's width is %v px", l.ScrollWidth, l.Table.Right, l.ClientWidth)
	if l.ScrollWidth > l.ClientWidth || l.Table.Right > l.ClientWidth {
		t.Errorf("at 1280 px the page is %v px wide, its table ends at %v px: wider than the window's %v px", l.ScrollWidth, l.Table.Right, l.ClientWidth)
	}
	if len(l.Sparks) != 10 || len(l.Lines) != 10 { // throughput and queue depth of 4 channels and the totals
		t.Fatalf("%d sparklines, %d lines: want 10", len(l.Sparks), len(l.Lines))
	}
	for i, s := range l.Sparks {
		if s.Width < 120 || s.Height < 20 {
			t.Errorf("sparkline %d is %v×%v px, want at least 120×20", i, s.Width, s.Height)
		}
		if w := l.Lines[i].Width; w < 0.9*s.Width {
			t.Errorf("sparkline %d: its line is %v px wide of %v", i, w, s.Width)
		}
	}
	if l.Stall.Height != 0 {
		t.Errorf("a pool that does not stall shows the stall banner: %+v", l.Stall)
	}
	if out := os.Getenv("STATUSPAGE_SCREENSHOT"); out != "" {
		within(t, 2*time.Minute, func() bool { return historyOf(t, url) >= 60 })
		headless(t, bin, url, "--virtual-time-budget=3000", "--hide-scrollbars", "--window-size=1280,900", "--screenshot="+out)
		t.Logf("screenshot written to %s", out)
	}
}

// browserStall: while the pool is stalled, the page shows a banner at its
// top, above the title, also after the script refreshed it.
func browserStall(t *testing.T, bin string) {
	jobs := channels.NewFIFO()
	o, err := smartpool.New(smartpool.Levels[string]{{{Key: "jobs", Channel: jobs}}}.With(
		smartpool.Config[string]{Workers: 1, StallAfter: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	t.Cleanup(func() {
		close(release)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := o.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	for range 2 {
		if err := jobs.Submit(func(context.Context) { <-release }); err != nil {
			t.Fatal(err)
		}
	}
	within(t, 10*time.Second, func() bool { return o.Pool().Stats().Stalled })
	srv := httptest.NewServer(measured(statuspage.Handler(o.Pool(), statuspage.Options{})))
	defer srv.Close()
	l := measure(t, bin, srv.URL+"/debug/smartpool")
	if l.Stall.Height == 0 || l.Stall.Top > 50 || l.Stall.Bottom > l.Title.Top {
		t.Errorf("the stall banner is at %+v, the title at %+v: want it shown at the top, above the title", l.Stall, l.Title)
	}
}
