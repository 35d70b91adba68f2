// Package statuspage serves a live page of a smartpool pool for a program's
// debug mux, in the spirit of golang.org/x/net/trace's /debug/requests:
// levels top to bottom, each channel with its close policy, queued and
// running tasks, tasks per second and queue depth charted over the last 16
// minutes (a point a second over the last minute, every 10 seconds
// before), each chart with its scale, queue wait and run time quantiles
// (sampled, as the pool times them: Config.TimingEvery), and the tasks
// cancelled, yielded, dropped and panicked, with a totals row. Channels that
// dropped tasks in the last minute, or whose tasks wait too long while they
// have work, are highlighted; channels removed in the last 15 minutes are
// listed with their final counts. A stall the pool's watchdog reports
// (smartpool.Config.StallAfter) shows as a banner at the top, with the count
// of stalls so far in the summary. Options.Sections and Options.DeadLetters
// add figures the pool does not keep: a JetStream connection, dead letters.
// The handler records the history from the moment it is made (see
// Handler); the page refreshes itself once a second from a JSON endpoint
// beside it (the same URL with ?format=json). Standard library only:
// html/template, an embedded page, plain JavaScript.
//
//	mux.Handle("/debug/smartpool/", statuspage.Handler(pool, statuspage.Options{}))
//
// The page is read-only unless the program sets Options.Authorize: then an
// operator it authorizes can pause and resume a channel, set its cap, set
// the workers and the in-flight limit, remove a channel, and replay or
// delete a dead letter, from the page. Each action is a POST carrying a
// token the page was given, refused when it is missing or stale, cross
// origin, or not authorized; a GET never changes anything; each action is
// logged (Options.Logger).
//
// # Actions
//
// With Options.Authorize set, the page takes actions: POSTs to its own URL
// whose form (application/x-www-form-urlencoded, at most 8 KiB) holds
// action, token and the action's arguments. The page's buttons send them;
// a script can too, with the token of the page's JSON (its token field,
// served to an authorized caller):
//
//	action=pause&key=K        Pool.Pause
//	action=resume&key=K       Pool.Resume
//	action=cap&key=K&n=N      Pool.SetCap
//	action=workers&n=N        Pool.SetWorkers
//	action=limit&n=N          Pool.SetLimit
//	action=remove&key=K&policy=drain|drop
//	                          Pool.RemoveChannel (202 if not done within Options.ActionTimeout)
//	action=replay&source=S&channel=C&id=ID
//	action=delete&source=S&channel=C&id=ID
//	                          a dead letter of Options.DeadLetters[S]
//
// K is a channel's key as the page prints it (fmt.Sprint): the page looks
// it up among the pool's channels, never parses it into a key, so any key
// type works and a key the pool does not have is a 404. A dead letter must
// be one the page would show (DeadLetterSource.NewestDeadLetters).
//
// Each is checked in this order, and refused with a plain-text answer at
// the first failure: actions off (no Authorize: 403), the caller not
// authorized (403), a cross-origin request (403), a form too large (413)
// or malformed, with an unknown or repeated field (400), a missing or stale
// token (403), then the action's arguments (400, or 404 for an unknown
// key). The pool's refusal comes back in its own words: 404 for
// smartpool.ErrUnknownKey, 400 for ErrBadLimit, 409 for the rest
// (ErrConfig: a cap on an uncapped channel, removing a followup target;
// ErrClosed). A dead-letter source's failure is a 502. A refused action
// changes nothing. An action done is answered 200 with a line saying so (a
// removal's with the channel's final counts). Every action, done or
// refused, is logged (Options.Logger).
package statuspage

import (
	"crypto/rand"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/internal/show"
)

// Options tune the page. The zero value is ready to use: a read-only page.
type Options struct {
	// Title heads the page; "smartpool" if empty.
	Title string
	// SlowWait marks a channel "slow" while it has tasks queued or running
	// and its queue wait p99 over the last minute reaches SlowWait; 0 means
	// 100ms. An idle channel is never marked: its tasks do not wait.
	SlowWait time.Duration
	// LateWait is SlowWait's former name, read when SlowWait is 0.
	//
	// Deprecated: use SlowWait. The mark was called "late", which read as
	// the tasks a channel drops late (smartpool.DroppedLate); it is "slow".
	LateWait time.Duration
	// Sections, if set, is called on each request for tables of figures
	// the pool does not keep, drawn under the levels and served in the
	// JSON: a channel's own counters, such as the jetstream module's
	// Client.StatusSection (connection, dead letters). It must not block
	// for long: the page waits for it.
	Sections func() []Section

	// Authorize turns the page's actions on: pause and resume a channel,
	// set its cap, set the pool's workers and in-flight limit, remove a
	// channel, replay or delete a dead letter (DeadLetters). Without it
	// (the default) the page is read-only: it shows no controls and
	// refuses every action with 403 Forbidden, whoever asks. The page
	// changes a running pool, so who may do that is the program's
	// decision, not the library's: the page cannot know who is behind a
	// request.
	//
	// Authorize is called for each request to the page: for a GET (once
	// a second while the page is open, as it refreshes), to decide whether
	// to show the controls (with a token, see below) to that caller; for a
	// POST, to decide whether to carry out the action.
	// It returns who the caller is, for the log, and whether they may act.
	// A typical one checks a session, a client certificate or basic auth
	// against the program's operators. It must not block for long.
	//
	// Every action is a POST to the page's own URL, with the form values
	// action, token and the action's arguments (see the package's
	// documentation). A GET never changes anything. The token is one the
	// page received from the handler, for that caller, within the last
	// hour (each refresh of the page brings a fresh one), so a page of
	// another site cannot make an operator's browser act: it cannot read
	// the token. Cross-origin POSTs are refused as well
	// (http.CrossOriginProtection).
	Authorize func(r *http.Request) (who string, ok bool)
	// Logger receives a line per action asked of the page, carried out
	// (Info) or refused (Warn): who, from where, what, and the result. Nil
	// means slog.Default(). The page cannot reach the pool's own
	// Config.Logger (the pool does not export it): pass the same logger
	// to keep the lines together.
	Logger *slog.Logger
	// ActionTimeout bounds how long an action waits: a removal that drains
	// the channel's tasks, a dead-letter source's call. A removal still
	// going on when it ends is answered 202 Accepted and carries on (the
	// channel is flagged removing, then listed as removed once its tasks
	// ended, or the pool closed). 0 means 30s.
	ActionTimeout time.Duration

	// DeadLetters are sources of dead letters, such as a JetStream
	// channel's dead-letter stream: the page shows the newest of each channel,
	// DeadLetterRows of them, and, with Authorize set, replay and delete
	// buttons beside each. See DeadLetterSource.
	DeadLetters []DeadLetterSource
	// DeadLetterRows is how many of each channel's newest dead letters the
	// page shows; 0 means 5.
	DeadLetterRows int
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

//go:embed page.html
var pageHTML string

var page = template.Must(template.New("page").Parse(pageHTML))

// Handler returns the page of pool p, and starts recording its history: it
// reads p's Stats once a second, keeping the last minute of readings and a
// reading every 10 seconds for the 15 minutes before, so that the page's
// first view already shows the rates and charts of the time before (or of
// the time since Handler was called, if less). The recording is a timer,
// not a goroutine; it stops once p has closed (in a testing/synctest
// bubble, it keeps fake time moving until then). Each call starts a
// recording of its own: make one handler per pool, when the pool starts.
// Each request reads p's Stats afresh for the other figures.
//
// The handler does not look at the request's path: it serves the page at
// whatever path the mux hands it, and the page's JSON at the same path with
// ?format=json, which the page fetches relative to its own URL; the
// page's actions (Options.Authorize) are POSTs to that URL too. So the
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
	if o.SlowWait <= 0 {
		o.SlowWait = o.LateWait
	}
	if o.SlowWait <= 0 {
		o.SlowWait = 100 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ActionTimeout <= 0 {
		o.ActionTimeout = 30 * time.Second
	}
	if o.DeadLetterRows <= 0 {
		o.DeadLetterRows = 5
	}
	h := &handler[K]{p: p, o: o, fine: ring[K]{n: keep}, coarse: ring[K]{n: coarseKeep}, csrf: http.NewCrossOriginProtection()}
	_, _ = rand.Read(h.secret[:]) // it never fails: see its doc
	h.tick(time.Now())
	return h
}

type handler[K comparable] struct {
	p      *smartpool.Pool[K]
	o      Options
	secret [32]byte // signs the page's action tokens (see token)
	csrf   *http.CrossOriginProtection

	mu      sync.Mutex // guards the fields below
	fine    ring[K]    // a sample a second, the last minute
	coarse  ring[K]    // every coarseEvery-th sample, the last span
	ticks   int        // samples taken
	last    *smartpool.Stats[K]
	lastAt  time.Time
	removed []removed[K] // channels that went away in the last span, oldest first
	letters letterCache  // the dead letters shown, read at most every letterEvery
}

// view is the page's data, also served as JSON.
type view struct {
	Title       string        `json:"title"`
	State       string        `json:"state"`
	Workers     int           `json:"workers"`
	Live        int           `json:"live"` // Stats.Live: worker goroutines now
	Busy        int           `json:"busy"`
	Rate        float64       `json:"rate"`    // tasks finished per second, all channels, over the last second sampled
	History     int           `json:"history"` // seconds the charts span: up to a minute at 1 s, then 15 minutes more at 10 s
	Wakeups     uint64        `json:"wakeups"`
	Limit       int           `json:"limit"`
	Admitted    int           `json:"admitted"`
	Stalls      uint64        `json:"stalls"`  // Stats.Stalls
	Stalled     bool          `json:"stalled"` // Stats.Stalled: a banner at the top of the page
	Levels      []level       `json:"levels"`
	Total       channelView   `json:"total"`       // every channel's, removed ones included (Stats.Total); Key "all channels"
	Removed     []removedView `json:"removed"`     // channels removed in the last 15 minutes, newest first
	Sections    []Section     `json:"sections"`    // Options.Sections
	DeadLetters []letterList  `json:"deadLetters"` // Options.DeadLetters
	SlowWait    string        `json:"slowWait"`    // Options.SlowWait, for the legend
	Actions     bool          `json:"actions"`     // Options.Authorize let this caller act: the page shows its controls
	Who         string        `json:"who,omitempty"`
	Token       string        `json:"token,omitempty"` // for the actions' POSTs, with Actions
}

type level struct {
	Level    int           `json:"level"`
	Channels []channelView `json:"channels"`
}

type channelView struct {
	Key         string    `json:"key"`
	Close       string    `json:"close"` // "complete" or "drop"
	Queued      int       `json:"queued"`
	Running     int       `json:"running"`
	Cap         int       `json:"cap"`
	Held        int       `json:"held"`
	Ran         uint64    `json:"ran"`
	Panicked    uint64    `json:"panicked"`
	Dropped     uint64    `json:"dropped"`
	DropCauses  string    `json:"dropCauses"` // the drops by cause (smartpool.Drops.String), "" when none
	Cancelled   uint64    `json:"cancelled"`
	Yielded     int       `json:"yielded"`
	PerSec      float64   `json:"perSec"`
	WaitP50     string    `json:"waitP50"`
	WaitP99     string    `json:"waitP99"`
	RunP50      string    `json:"runP50"`
	Timed       uint64    `json:"timed"`    // waits timed (Config.TimingEvery samples them): the quantiles' base
	Slow        bool      `json:"slow"`     // queued or running, and the wait p99 of the last minute reached SlowWait
	Dropping    bool      `json:"dropping"` // dropped tasks in the last minute
	Paused      bool      `json:"paused"`   // Pool.Pause: queues, no worker takes its tasks
	Removing    bool      `json:"removing"` // Pool.RemoveChannel in progress
	Spark       []float64 `json:"spark"`    // tasks finished per second, oldest first, between successive samples
	Points      string    `json:"points"`   // Spark drawn in a sparkBox square (see sparkPoints)
	SparkMax    string    `json:"sparkMax"` // the chart's scale: the rate at its top line
	Depth       []float64 `json:"depth"`    // tasks queued at each sample but the first, oldest first
	DepthPoints string    `json:"depthPoints"`
	DepthMax    string    `json:"depthMax"`

	Rate      string `json:"rate"`      // its start rate, "rate 10/s burst 5" (smartpool.Rate); "" if none
	Throttled uint64 `json:"throttled"` // takes that found no start token
}

// removedView is a channel removed in the last span, with its final counts.
type removedView struct {
	Key       string `json:"key"`
	Ago       string `json:"ago"`   // how long ago the page noticed it gone
	By        string `json:"by"`    // "the program", or the page's action and its caller
	Exact     bool   `json:"exact"` // the counts are final; else those last sampled: at least these
	Ran       uint64 `json:"ran"`
	Panicked  uint64 `json:"panicked"`
	Goexited  uint64 `json:"goexited"`
	Dropped   uint64 `json:"dropped"`
	Cancelled uint64 `json:"cancelled"`
}

func (h *handler[K]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPost:
		h.act(w, r)
		return
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		h.refuse(w, r, "", http.StatusMethodNotAllowed, fmt.Sprintf("method %s: the page serves GET and takes actions as POSTs", r.Method))
		return
	}
	if r.URL.Query().Has("action") {
		w.Header().Set("Allow", "GET, HEAD, POST")
		who, _ := h.authorized(r)
		h.refuse(w, r, who, http.StatusMethodNotAllowed, "an action is a POST: a GET changes nothing")
		return
	}
	v := h.view(r)
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Query().Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := page.Execute(w, v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// view reads the pool's stats and builds the page data from them and the
// recorded samples, for the caller of r.
func (h *handler[K]) view(r *http.Request) view {
	s := h.p.Stats()
	samples, was, gone := h.history()
	first, last := samples[0], samples[len(samples)-1]
	now := time.Now()
	v := view{Title: h.o.Title, State: h.p.State().String(), Workers: s.Workers, Live: s.Live, Busy: s.Busy,
		History: int(last.at.Sub(first.at).Round(time.Second) / time.Second),
		Wakeups: s.Wakeups, Limit: s.Limit, Admitted: s.Admitted, Stalls: s.Stalls, Stalled: s.Stalled,
		SlowWait: h.o.SlowWait.String()}
	if h.o.Sections != nil {
		v.Sections = h.o.Sections()
	}
	if who, ok := h.authorized(r); ok {
		v.Actions, v.Who, v.Token = true, who, h.token(who, now)
	}
	var times []float64 // each sample interval's end, for the charts
	for _, x := range samples[1:] {
		times = append(times, x.at.Sub(first.at).Seconds())
	}
	for _, c := range s.Channels {
		for len(v.Levels) <= c.Level {
			v.Levels = append(v.Levels, level{Level: len(v.Levels), Channels: []channelView{}}) // [] in the JSON for a level whose channels all went
		}
		cv := channelView{Key: fmt.Sprint(c.Key), Close: "drop", Queued: c.Queued, Running: c.Running, Cap: c.Cap,
			Held: c.Held, Ran: c.Ran, Panicked: c.Panicked, Dropped: c.Dropped, Cancelled: c.Cancelled, Yielded: c.Yielded,
			WaitP50: show.Duration(c.Wait.P50, c.Wait.Count), WaitP99: show.Duration(c.Wait.P99, c.Wait.Count),
			RunP50: show.Duration(c.Run.P50, c.Run.Count), Timed: c.Wait.Count, Paused: c.Paused, Removing: c.Removing,
			DropCauses: c.DroppedBy.String(), Throttled: c.Throttled}
		if c.Rate != (smartpool.Rate{}) {
			cv.Rate = "rate " + c.Rate.String()
		}
		if c.CompleteOnClose {
			cv.Close = "complete"
		}
		ch := func(x sample[K]) chanSample { return x.chans[c.Key] } // zero for a channel added since x
		cv.Spark, cv.Depth = charts(samples, ch)
		if n := len(cv.Spark); n > 0 {
			cv.PerSec = cv.Spark[n-1]
			v.Rate += cv.PerSec
		}
		cv.Dropping = c.Dropped > ch(was).dropped
		busy := c.Queued > 0 || c.Running > 0
		cv.Slow = busy && p99Since(ch(was).wait, c.Wait.Buckets) >= h.o.SlowWait
		h.draw(&cv, times)
		v.Levels[c.Level].Channels = append(v.Levels[c.Level].Channels, cv)
	}
	t := s.Total()
	v.Total = channelView{Key: "all channels", Queued: t.Queued, Running: t.Running, Held: t.Held, Ran: t.Ran,
		Panicked: t.Panicked, Dropped: t.Dropped, Cancelled: t.Cancelled, Yielded: t.Yielded,
		WaitP50: "", WaitP99: "", RunP50: "", Timed: t.Wait.Count, DropCauses: t.DroppedBy.String()}
	v.Total.Spark, v.Total.Depth = charts(samples, func(x sample[K]) chanSample { return x.total })
	v.Total.PerSec = v.Rate
	v.Total.Dropping = t.Dropped > was.total.dropped
	h.draw(&v.Total, times)
	slices.SortStableFunc(gone, func(a, b removed[K]) int { return b.at.Compare(a.at) }) // newest first
	for _, g := range gone {
		rv := removedView{Key: fmt.Sprint(g.key), Ago: now.Sub(g.at).Round(time.Second).String(), By: "the program", Exact: g.exact,
			Ran: g.ran, Panicked: g.panicked, Goexited: g.goexited, Dropped: g.dropped, Cancelled: g.canceled}
		if g.by != "" {
			rv.By = fmt.Sprintf("this page (%s, by %s)", g.policy, g.by)
		}
		v.Removed = append(v.Removed, rv)
	}
	v.DeadLetters = h.deadLetters(r.Context())
	return v
}

// charts returns the rates (tasks finished per second) between successive
// samples and the queue depth at each sample but the first, of the series
// of figures of, read from each sample.
func charts[K comparable](samples []sample[K], of func(sample[K]) chanSample) (rates, depth []float64) {
	for j := 1; j < len(samples); j++ {
		dt := samples[j].at.Sub(samples[j-1].at).Seconds()
		rates = append(rates, float64(since(of(samples[j-1]).finished, of(samples[j]).finished))/dt)
		depth = append(depth, float64(of(samples[j]).queued))
	}
	return rates, depth
}

// draw fills cv's chart points and scales from its series.
func (h *handler[K]) draw(cv *channelView, times []float64) {
	var top float64
	cv.Points, top = sparkPoints(cv.Spark, times)
	cv.SparkMax = compact(top) + "/s"
	cv.DepthPoints, top = sparkPoints(cv.Depth, times)
	cv.DepthMax = compact(top)
}
