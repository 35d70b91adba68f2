// Package statuspage serves a live page of a smartpool pool for a program's
// debug mux, in the spirit of golang.org/x/net/trace's /debug/requests:
// levels top to bottom, each channel with its close policy, queued and
// running tasks, tasks per second with a sparkline of the last minute, and
// queue-wait quantiles; channels that drop tasks or wait too long are
// highlighted, and so is a stall the pool's watchdog reports
// (smartpool.Config.StallAfter), with the count of stalls so far. The page refreshes itself once a second from a JSON endpoint
// beside it (the same URL with ?format=json). Standard library only:
// html/template, an embedded page, a few lines of plain JavaScript.
//
//	mux.Handle("/debug/smartpool", statuspage.Handler(pool, statuspage.Options{}))
package statuspage

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"github.com/smartpool-go/smartpool/internal/show"
	"html/template"
	"net/http"
	"sync"
	"time"

	"github.com/smartpool-go/smartpool"
)

// Options tune the page. The zero value is ready to use.
type Options struct {
	// Title heads the page; "smartpool" if empty.
	Title string
	// LateWait highlights a channel whose queue wait p99 over the last
	// minute reaches it; 0 means 100ms.
	LateWait time.Duration
	// Sections, if set, is called on each request for tables of figures
	// the pool does not keep, drawn under the levels and served in the
	// JSON: a channel's own counters, such as the jetstream module's
	// Client.StatusSection (connection, dead letters). It must not block
	// for long: the page waits for it.
	Sections func() []Section
}

// Section is a table of extra figures on the page.
type Section struct {
	Title string `json:"title"`
	Rows  []Row  `json:"rows"`
}

// Row is one figure of a Section; Alert highlights it (an outage, dead
// letters waiting).
type Row struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Alert bool   `json:"alert"`
}

// Window is how far back the sparklines and the highlights look.
const window = time.Minute

// minGap is the least time between two samples: two browser tabs refreshing
// do not sample twice as often.
const minGap = 500 * time.Millisecond

//go:embed page.html
var pageHTML string

var page = template.Must(template.New("page").Parse(pageHTML))

// Handler returns the page of pool p. It reads p's Stats on each request
// and keeps the last minute of samples; it starts no goroutine.
func Handler[K comparable](p *smartpool.Pool[K], o Options) http.Handler {
	if o.Title == "" {
		o.Title = "smartpool"
	}
	if o.LateWait <= 0 {
		o.LateWait = 100 * time.Millisecond
	}
	return &handler[K]{p: p, o: o}
}

type handler[K comparable] struct {
	p *smartpool.Pool[K]
	o Options

	mu      sync.Mutex // guards samples
	samples []sample   // oldest first, spanning about a window
}

// sample is what the page remembers of one Stats reading, per channel.
type sample struct {
	at                time.Time
	finished, dropped []uint64
	wait              [][]smartpool.TimingBucket
}

// View is the page's data, also served as JSON.
type view struct {
	Title    string    `json:"title"`
	State    string    `json:"state"`
	Workers  int       `json:"workers"`
	Live     int       `json:"live"` // Stats.Live: worker goroutines now
	Busy     int       `json:"busy"`
	Rate     float64   `json:"rate"`
	Wakeups  uint64    `json:"wakeups"`
	Limit    int       `json:"limit"`
	Admitted int       `json:"admitted"`
	Stalls   uint64    `json:"stalls"`  // Stats.Stalls
	Stalled  bool      `json:"stalled"` // Stats.Stalled: flagged on the page
	Levels   []level   `json:"levels"`
	Sections []Section `json:"sections"` // Options.Sections
}

type level struct {
	Level    int           `json:"level"`
	Channels []channelView `json:"channels"`
}

type channelView struct {
	Key       string    `json:"key"`
	Close     string    `json:"close"` // "complete" or "drop"
	Queued    int       `json:"queued"`
	Running   int       `json:"running"`
	Cap       int       `json:"cap"`
	Held      int       `json:"held"`
	Ran       uint64    `json:"ran"`
	Panicked  uint64    `json:"panicked"`
	Dropped   uint64    `json:"dropped"`
	Cancelled uint64    `json:"cancelled"`
	Yielded   int       `json:"yielded"`
	PerSec    float64   `json:"perSec"`
	WaitP50   string    `json:"waitP50"`
	WaitP99   string    `json:"waitP99"`
	RunP50    string    `json:"runP50"`
	Late      bool      `json:"late"`
	Dropping  bool      `json:"dropping"`
	Spark     []float64 `json:"spark"` // tasks finished per second, oldest first, over the window
	Points    string    `json:"points"`
}

func (h *handler[K]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v := h.view()
	if r.URL.Query().Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(v)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := page.Execute(w, v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// view reads the pool's stats, records a sample and builds the page data.
func (h *handler[K]) view() view {
	s := h.p.Stats()
	now := time.Now()
	cur := sample{at: now, finished: make([]uint64, len(s.Channels)), dropped: make([]uint64, len(s.Channels)),
		wait: make([][]smartpool.TimingBucket, len(s.Channels))}
	for i, c := range s.Channels {
		cur.finished[i], cur.dropped[i], cur.wait[i] = c.Finished(), c.Dropped, c.Wait.Buckets
	}
	h.mu.Lock()
	if n := len(h.samples); n == 0 || now.Sub(h.samples[n-1].at) >= minGap {
		h.samples = append(h.samples, cur)
	}
	for len(h.samples) > 2 && now.Sub(h.samples[1].at) >= window {
		h.samples = h.samples[1:]
	}
	samples := append([]sample(nil), h.samples...)
	h.mu.Unlock()

	v := view{Title: h.o.Title, State: h.p.State().String(), Workers: s.Workers, Live: s.Live, Busy: s.Busy, Rate: s.Rate,
		Wakeups: s.Wakeups, Limit: s.Limit, Admitted: s.Admitted, Stalls: s.Stalls, Stalled: s.Stalled}
	if h.o.Sections != nil {
		v.Sections = h.o.Sections()
	}
	first := samples[0]
	for i, c := range s.Channels {
		for len(v.Levels) <= c.Level {
			v.Levels = append(v.Levels, level{Level: len(v.Levels)})
		}
		cv := channelView{Key: fmt.Sprint(c.Key), Close: "drop", Queued: c.Queued, Running: c.Running, Cap: c.Cap,
			Held: c.Held, Ran: c.Ran, Panicked: c.Panicked, Dropped: c.Dropped, Cancelled: c.Cancelled, Yielded: c.Yielded,
			WaitP50: show.Duration(c.Wait.P50, c.Wait.Count), WaitP99: show.Duration(c.Wait.P99, c.Wait.Count), RunP50: show.Duration(c.Run.P50, c.Run.Count)}
		if c.CompleteOnClose {
			cv.Close = "complete"
		}
		var ages []float64
		for j := 1; j < len(samples); j++ {
			dt := samples[j].at.Sub(samples[j-1].at).Seconds()
			cv.Spark = append(cv.Spark, float64(samples[j].finished[i]-samples[j-1].finished[i])/dt)
			ages = append(ages, now.Sub(samples[j].at).Seconds())
		}
		if n := len(cv.Spark); n > 0 {
			cv.PerSec = cv.Spark[n-1]
		}
		cv.Dropping = c.Dropped > first.dropped[i]
		cv.Late = p99Since(first.wait[i], c.Wait.Buckets, c.Wait.Count) >= h.o.LateWait
		cv.Points = sparkPoints(cv.Spark, ages)
		v.Levels[c.Level].Channels = append(v.Levels[c.Level].Channels, cv)
	}
	return v
}

// p99Since estimates the 99th percentile of the waits recorded between two
// readings of a channel's cumulative buckets (now: total waits recorded),
// as the lower bound of the bucket that holds it: within a factor of two.
func p99Since(then, now []smartpool.TimingBucket, total uint64) time.Duration {
	if len(now) == 0 {
		return 0
	}
	base := func(i int) uint64 {
		if i < len(then) {
			return then[i].Count
		}
		return 0
	}
	var thenTotal uint64
	if len(then) > 0 {
		thenTotal = then[len(then)-1].Count // waits beyond the last bound are ignored: rare
	}
	n := now[len(now)-1].Count - thenTotal
	if n == 0 {
		return 0
	}
	for i, b := range now {
		if float64(b.Count-base(i)) >= 0.99*float64(n) {
			if i == 0 {
				return 0
			}
			return now[i-1].Le // the bucket's lower bound: late only if surely late
		}
	}
	return now[len(now)-1].Le
}

// sparkPoints draws rates as an SVG polyline in a 120×24 box: time runs
// left to right over the window (ages: seconds before now), rates are
// scaled to their maximum.
func sparkPoints(rates, ages []float64) string {
	const w, h = 120.0, 24.0
	top := 1.0
	for _, r := range rates {
		top = max(top, r)
	}
	pts := make([]byte, 0, 12*len(rates))
	for i, r := range rates {
		x := max(0, w-ages[i]/window.Seconds()*w)
		pts = fmt.Appendf(pts, "%.1f,%.1f ", x, h-1-r/top*(h-2))
	}
	return string(pts)
}
