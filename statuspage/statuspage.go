// Package statuspage serves a live page of a smartpool pool for a program's
// debug mux, in the spirit of golang.org/x/net/trace's /debug/requests:
// levels top to bottom, each channel with its close policy, queued and
// running tasks, tasks per second with a sparkline of the last minute, queue
// wait and run time quantiles, and the tasks cancelled, yielded, dropped and
// panicked. Channels that drop tasks or wait too long are highlighted, and a
// stall the pool's watchdog reports (smartpool.Config.StallAfter) shows as a
// banner at the top, with the count of stalls so far in the summary. The
// handler records the history from the moment it is made (see Handler); the
// page refreshes itself once a second from a JSON endpoint beside it (the
// same URL with ?format=json). Standard library only: html/template, an
// embedded page, a few lines of plain JavaScript.
//
//	mux.Handle("/debug/smartpool/", statuspage.Handler(pool, statuspage.Options{}))
package statuspage

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/internal/show"
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

// window is how far back the sparklines and the highlights look, and every
// how often the page samples the pool's stats: it keeps the samples of the
// last window, keep of them, in a ring.
const (
	window = time.Minute
	every  = time.Second
	keep   = int(window/every) + 1
)

//go:embed page.html
var pageHTML string

var page = template.Must(template.New("page").Parse(pageHTML))

// Handler returns the page of pool p, and starts recording its history: it
// reads p's Stats once a second, keeping the last minute of readings, so
// that the page's first view already shows the rates and sparklines of the
// minute before (or of the time since Handler was called, if less). The
// recording is a timer, not a goroutine; it stops once p has closed (in a
// testing/synctest bubble, it keeps fake time moving until then). Each call
// starts a recording of its own: make one handler per pool, when the pool
// starts. Each request reads p's Stats afresh for the other figures.
//
// The handler does not look at the request's path: it serves the page at
// whatever path the mux hands it, and the page's JSON at the same path with
// ?format=json, which the page fetches relative to its own URL. So the
// mux decides where it is served. A pattern without a trailing slash
// matches that path only:
//
//	mux.Handle("/debug/smartpool", statuspage.Handler(pool, statuspage.Options{}))
//
// serves /debug/smartpool, and /debug/smartpool/ is the mux's 404. A
// pattern with a trailing slash serves both, the mux redirecting
// /debug/smartpool to /debug/smartpool/, with or without http.StripPrefix
// (either prefix, with or without its slash):
//
//	mux.Handle("/debug/smartpool/", http.StripPrefix("/debug/smartpool", statuspage.Handler(pool, statuspage.Options{})))
func Handler[K comparable](p *smartpool.Pool[K], o Options) http.Handler {
	if o.Title == "" {
		o.Title = "smartpool"
	}
	if o.LateWait <= 0 {
		o.LateWait = 100 * time.Millisecond
	}
	h := &handler[K]{p: p, o: o}
	h.tick(time.Now())
	return h
}

type handler[K comparable] struct {
	p *smartpool.Pool[K]
	o Options

	mu   sync.Mutex  // guards ring and next
	ring []sample[K] // up to keep samples; once full, the oldest at next
	next int
}

// sample is what the page remembers of one Stats reading, per channel, by
// key: channels come and go in a pool that reshapes (Pool.AddChannel).
type sample[K comparable] struct {
	at    time.Time
	chans map[K]chanSample
}

type chanSample struct {
	finished, dropped uint64
	wait              []smartpool.TimingBucket
}

// tick records a sample and, unless the pool had closed before it, asks
// for the next one a second after due, when this one was due: the samples
// keep to a one-second grid however late the timer fires, unless it fires
// more than a second late, when the grid starts again from now.
func (h *handler[K]) tick(due time.Time) {
	closed := h.p.State() == smartpool.Closed // before the reading: a pool closed since gets one more
	now := time.Now()
	h.record(takeSample(h.p.Stats(), now))
	if closed {
		return
	}
	next := due.Add(every)
	if next.Before(now) {
		next = now.Add(every)
	}
	time.AfterFunc(time.Until(next), func() { h.tick(next) })
}

// takeSample keeps what the page needs of s, read at now.
func takeSample[K comparable](s *smartpool.Stats[K], now time.Time) sample[K] {
	cur := sample[K]{at: now, chans: make(map[K]chanSample, len(s.Channels))}
	for _, c := range s.Channels {
		cur.chans[c.Key] = chanSample{finished: c.Finished(), dropped: c.Dropped, wait: c.Wait.Buckets}
	}
	return cur
}

// since returns how much a cumulative count grew from then to now, 0 if it
// went back (a channel removed and added again under the same key).
func since(then, now uint64) uint64 {
	if now < then {
		return 0
	}
	return now - then
}

// record adds s to the ring, in place of the oldest sample once it is full.
func (h *handler[K]) record(s sample[K]) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ring) < keep {
		h.ring = append(h.ring, s)
		return
	}
	h.ring[h.next] = s
	h.next = (h.next + 1) % keep
}

// history returns the samples, oldest first.
func (h *handler[K]) history() []sample[K] {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append(slices.Clone(h.ring[h.next:]), h.ring[:h.next]...)
}

// View is the page's data, also served as JSON.
type view struct {
	Title    string    `json:"title"`
	State    string    `json:"state"`
	Workers  int       `json:"workers"`
	Live     int       `json:"live"` // Stats.Live: worker goroutines now
	Busy     int       `json:"busy"`
	Rate     float64   `json:"rate"`    // tasks finished per second, all channels, over the last second sampled
	History  int       `json:"history"` // seconds the sparklines span: up to a minute
	Wakeups  uint64    `json:"wakeups"`
	Limit    int       `json:"limit"`
	Admitted int       `json:"admitted"`
	Stalls   uint64    `json:"stalls"`  // Stats.Stalls
	Stalled  bool      `json:"stalled"` // Stats.Stalled: a banner at the top of the page
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
	Paused    bool      `json:"paused"`   // Pool.Pause: queues, no worker takes its tasks
	Removing  bool      `json:"removing"` // Pool.RemoveChannel in progress
	Spark     []float64 `json:"spark"`    // tasks finished per second, oldest first, between successive samples
	Points    string    `json:"points"`   // Spark drawn in a sparkBox square (see sparkPoints)
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

// view reads the pool's stats and builds the page data from them and the
// recorded samples.
func (h *handler[K]) view() view {
	s := h.p.Stats()
	samples := h.history()
	first, last := samples[0], samples[len(samples)-1]
	v := view{Title: h.o.Title, State: h.p.State().String(), Workers: s.Workers, Live: s.Live, Busy: s.Busy,
		History: int(last.at.Sub(first.at).Round(time.Second) / time.Second),
		Wakeups: s.Wakeups, Limit: s.Limit, Admitted: s.Admitted, Stalls: s.Stalls, Stalled: s.Stalled}
	if h.o.Sections != nil {
		v.Sections = h.o.Sections()
	}
	var times []float64 // each sample interval's end, for the sparklines
	for _, x := range samples[1:] {
		times = append(times, x.at.Sub(first.at).Seconds())
	}
	for _, c := range s.Channels {
		for len(v.Levels) <= c.Level {
			v.Levels = append(v.Levels, level{Level: len(v.Levels)})
		}
		cv := channelView{Key: fmt.Sprint(c.Key), Close: "drop", Queued: c.Queued, Running: c.Running, Cap: c.Cap,
			Held: c.Held, Ran: c.Ran, Panicked: c.Panicked, Dropped: c.Dropped, Cancelled: c.Cancelled, Yielded: c.Yielded,
			WaitP50: show.Duration(c.Wait.P50, c.Wait.Count), WaitP99: show.Duration(c.Wait.P99, c.Wait.Count), RunP50: show.Duration(c.Run.P50, c.Run.Count)}
		if c.CompleteOnClose {
			cv.Close = "complete"
		}
		for j := 1; j < len(samples); j++ {
			dt := samples[j].at.Sub(samples[j-1].at).Seconds()
			cv.Spark = append(cv.Spark, float64(since(samples[j-1].chans[c.Key].finished, samples[j].chans[c.Key].finished))/dt)
		}
		if n := len(cv.Spark); n > 0 {
			cv.PerSec = cv.Spark[n-1]
			v.Rate += cv.PerSec
		}
		was := first.chans[c.Key] // zero for a channel added since
		cv.Dropping = c.Dropped > was.dropped
		cv.Late = p99Since(was.wait, c.Wait.Buckets, c.Wait.Count) >= h.o.LateWait
		cv.Paused, cv.Removing = c.Paused, c.Removing
		cv.Points = sparkPoints(cv.Spark, times)
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

// sparkBox is the side of the square sparkPoints draws in: the page's
// sparklines have viewBox="0 0 100 100" and are stretched to their size.
const sparkBox = 100.0

// sparkPoints draws rates as an SVG polyline in a sparkBox square, each
// rate at its time (seconds, ascending): the first at the left edge, the
// last at the right, from zero just above the bottom to the greatest rate a
// fifth below the top (room to see a level, not the box's edge). A
// single rate is a level line.
func sparkPoints(rates, times []float64) string {
	if len(rates) == 1 {
		rates, times = append(rates, rates[0]), []float64{0, 1}
	}
	top := 1.0
	for _, r := range rates {
		top = max(top, r)
	}
	pts := make([]byte, 0, 12*len(rates))
	for i, r := range rates {
		x := (times[i] - times[0]) / (times[len(times)-1] - times[0]) * sparkBox
		pts = fmt.Appendf(pts, "%.1f,%.1f ", x, sparkBox*(0.98-0.78*r/top))
	}
	return strings.TrimSpace(string(pts))
}
