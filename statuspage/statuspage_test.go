package statuspage_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/statuspage"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// demo is a pool of three levels: urgent work, normal work and a bulk
// backlog in a bounded channel.
type demo struct {
	urgent, normal *channels.FIFO
	bulk           *channels.Bounded
}

func (d *demo) Config() smartpool.Config[string] {
	return smartpool.Config[string]{Workers: 2, TimingEvery: 1, Levels: [][]smartpool.ChannelParams[string]{
		{{Key: "urgent", CompleteOnClose: true}},
		{{Key: "normal", CompleteOnClose: true, MaxRunning: 1}},
		{{Key: "bulk"}},
	}}
}

func (d *demo) Channel(k string) smartpool.Channel {
	switch k {
	case "urgent":
		return d.urgent
	case "normal":
		return d.normal
	}
	return d.bulk
}

func (d *demo) Followup(k string) string { return k }

// running starts the demo pool with producers that keep every channel busy
// until the test ends, and serves its page.
func running(t *testing.T) (*smartpool.Pool[string], string) {
	d := &demo{urgent: channels.NewFIFO(), normal: channels.NewFIFO(), bulk: channels.NewBounded(50)}
	o, err := smartpool.New[string](d)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	work := func(d time.Duration) func(context.Context) {
		return func(context.Context) {
			for end := time.Now().Add(d); time.Now().Before(end); { // CPU work
			}
		}
	}
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
	produce(5*time.Millisecond, func() error { return d.urgent.Submit(work(100 * time.Microsecond)) })
	produce(2*time.Millisecond, func() error { return d.normal.Submit(work(time.Millisecond)) })
	// Bulk work arrives in bursts that fill its Bounded queue, more than the
	// workers can take however little CPU the producers get: a backlog of
	// 50 tasks of 5 ms on two workers, so the waits are long. (With
	// DropOldest the survivors would be the newest tasks, whose waits are
	// short: the slow highlight would depend on timing.)
	bulkBurst := func() error {
		for range 50 {
			switch err := d.bulk.Submit(work(5 * time.Millisecond)); {
			case errors.Is(err, smartpool.ErrFull):
				return nil // full: the backlog is there
			case err != nil:
				return err
			}
		}
		return nil
	}
	if err := bulkBurst(); err != nil {
		t.Fatal(err)
	}
	produce(time.Millisecond, bulkBurst)
	srv := httptest.NewServer(statuspage.Handler(o.Pool(), statuspage.Options{Title: "smartpool demo", SlowWait: 5 * time.Millisecond}))
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

// The JSON endpoint lists the levels top to bottom with their channels.
func TestJSON(t *testing.T) {
	_, url := running(t)
	res, err := http.Get(url + "?format=json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v struct {
		State  string
		Levels []struct {
			Level    int
			Channels []struct{ Key, Close string }
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	if v.State != "running" || len(v.Levels) != 3 {
		t.Fatalf("state %q, %d levels: %+v", v.State, len(v.Levels), v)
	}
	for i, want := range []string{"urgent complete", "normal complete", "bulk drop"} {
		c := v.Levels[i].Channels[0]
		if v.Levels[i].Level != i || c.Key+" "+c.Close != want {
			t.Errorf("level %d: %d %s %s, want %s", i, v.Levels[i].Level, c.Key, c.Close, want)
		}
	}
}

// eventually polls cond until it holds, failing after 30s; it yields the
// processor between polls: a bounded wait for an event, not a sleep.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
	}
}

// browser returns the path of a Chromium or Chrome, or skips the test
// (fails it if STATUSPAGE_REQUIRE_BROWSER is set, as CI does).
func browser(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no browser: install Debian's chromium (apt-get install -y chromium) to run the page in a real browser"
	if os.Getenv("STATUSPAGE_REQUIRE_BROWSER") != "" { // CI: a missing browser is a failure
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browserArgs returns the flags every run of the browser takes: headless,
// quiet, with a profile of its own in a temporary directory.
func browserArgs(t *testing.T) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir()}
}

// headless runs the browser on url with extra flags and returns its
// standard output.
func headless(t *testing.T, bin, url string, flags ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append(browserArgs(t), flags...)
	// Chromium itself sometimes crashes on a loaded 2-core machine (seen:
	// a segmentation fault under a parallel test run); a crash is retried,
	// any other failure is not.
	for attempt := 1; ; attempt++ {
		out, err := exec.CommandContext(ctx, bin, append(args, url)...).Output()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return string(out)
		case attempt < 3 && errors.As(err, &exit) && !exit.Exited() && ctx.Err() == nil:
			t.Logf("%s crashed (%v); retrying", bin, err)
		default:
			t.Fatalf("%s: %v", bin, err)
		}
	}
}

var (
	rowRE = regexp.MustCompile(`<tr class="chan[^"]*" data-key="([a-z]+)">`)
	ranRE = regexp.MustCompile(`<td class="ran">(\d+)</td>`)
)

// ran returns the channels the DOM shows and their ran figures (not the
// totals row's).
func ran(t *testing.T, dom string) ([]string, []uint64) {
	t.Helper()
	if i := strings.Index(dom, "<tfoot"); i >= 0 {
		dom = dom[:i]
	}
	var keys []string
	for _, m := range rowRE.FindAllStringSubmatch(dom, -1) {
		keys = append(keys, m[1])
	}
	var n []uint64
	for _, m := range ranRE.FindAllStringSubmatch(dom, -1) {
		v, _ := strconv.ParseUint(m[1], 10, 64)
		n = append(n, v)
	}
	return keys, n
}

// The page in a real browser (Chromium, headless): the CI runs this test,
// with every subtest, where a browser is required.
func TestBrowser(t *testing.T) {
	bin := browser(t)
	t.Run("refresh", func(t *testing.T) { browserRefresh(t, bin) })
	t.Run("layout", func(t *testing.T) { browserLayout(t, bin) })
	t.Run("stall", func(t *testing.T) { browserStall(t, bin) })
	t.Run("reshape", func(t *testing.T) { browserReshape(t, bin) })
	t.Run("actions", func(t *testing.T) { browserActions(t, bin) })
}

// browserRefresh: the page, loaded over a running pool, shows the channels
// level by level, and its figures change from one load to the next; the
// script refreshes it from the JSON endpoint, every column included.
func browserRefresh(t *testing.T, bin string) {
	p, url := running(t)

	first := headless(t, bin, url, "--dump-dom")
	keys, ran1 := ran(t, first)
	if strings.Join(keys, " ") != "urgent normal bulk" || len(ran1) != 3 {
		t.Fatalf("the page shows channels %v with ran %v:\n%s", keys, ran1, first)
	}
	for _, want := range []string{"level 0", "level 1", "level 2", ">complete<", ">drop<", "<polyline"} {
		if !strings.Contains(first, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	before := p.Stats().Total().Ran
	eventually(t, func() bool { return p.Stats().Total().Ran >= before+10 })
	// The second load runs the script for a few seconds of virtual time:
	// it must have refreshed the page from the JSON endpoint.
	second := headless(t, bin, url, "--virtual-time-budget=3000", "--dump-dom")
	keys, ran2 := ran(t, second)
	if strings.Join(keys, " ") != "urgent normal bulk" || len(ran2) != 3 {
		t.Fatalf("the refreshed page shows channels %v with ran %v:\n%s", keys, ran2, second)
	}
	if ran2[0]+ran2[1]+ran2[2] <= ran1[0]+ran1[1]+ran1[2] {
		t.Errorf("figures did not change between loads: ran %v then %v", ran1, ran2)
	}
	m := regexp.MustCompile(`data-refreshes="(\d+)"`).FindStringSubmatch(second)
	if m == nil || m[1] == "0" {
		t.Errorf("the script did not refresh the page (refreshes %v)", m)
	} else {
		t.Logf("the script refreshed the page %s times", m[1])
	}
	for i, dom := range []string{first, second} { // as served, as the script redraws it
		for _, col := range []string{"cancelled", "yielded", "dropped", "panicked"} {
			if n := strings.Count(dom, `<td class="`+col+`">`); n != 4 {
				t.Errorf("load %d: the page has %d %s cells, want 4 (3 channels and the totals)", i+1, n, col)
			}
		}
		for _, chart := range []string{"spark rate", "spark depth"} {
			if n := strings.Count(dom, `<svg class="`+chart+`"`); n != 4 {
				t.Errorf("load %d: the page has %d %s charts, want 4 (3 channels and the totals)", i+1, n, chart)
			}
		}
	}
	// The bulk backlog makes its waits long, but how long depends on how
	// much CPU the producers and workers got since the first load: load the
	// page again, a bounded number of times, until the highlight shows.
	slowRow := regexp.MustCompile(`<tr class="chan[^"]*\bslow\b[^"]*" data-key="bulk">`)
	for attempt := 1; !slowRow.MatchString(second); attempt++ {
		if attempt == 5 {
			t.Errorf("the bulk channel waits longer than SlowWait but is not highlighted after %d loads:\n%s", attempt, second)
			break
		}
		t.Logf("load %d: bulk not highlighted yet (JSON: %s)", attempt, jsonOf(t, url))
		second = headless(t, bin, url, "--virtual-time-budget=3000", "--dump-dom")
	}
}

// A channel that dropped tasks within the page's history (the last minute,
// or since its handler was made) is flagged dropping, and one whose waits
// reached SlowWait is flagged slow while it has tasks queued or running:
// the mark clears once the channel is idle.
func TestHighlights(t *testing.T) {
	const slow = 20 * time.Millisecond
	d := &demo{urgent: channels.NewFIFO(), normal: channels.NewFIFO(), bulk: channels.NewBounded(10)}
	o, err := smartpool.New[string](d)
	if err != nil {
		t.Fatal(err)
	}
	p := o.Pool()
	h := statuspage.Handler(p, statuspage.Options{SlowWait: slow})
	type flags struct {
		Key            string
		Slow, Dropping bool
	}
	read := func() []flags {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/smartpool?format=json", nil))
		var v struct{ Levels []struct{ Channels []flags } }
		if err := json.NewDecoder(rec.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		var fs []flags
		for _, l := range v.Levels {
			fs = append(fs, l.Channels...)
		}
		return fs
	}
	read() // a view before any drop or long wait
	started, release := make(chan struct{}), make(chan struct{})
	// block holds a worker until release. It takes the round's channels as
	// arguments: the next round makes new ones while this round's tasks may
	// still be returning.
	block := func(started, release chan struct{}) func(context.Context) {
		return func(context.Context) { started <- struct{}{}; <-release }
	}
	_ = d.urgent.Submit(block(started, release))
	_ = d.urgent.Submit(block(started, release))
	<-started
	<-started // both workers busy
	normalStarted, hold := make(chan struct{}), make(chan struct{})
	if err := d.normal.Submit(func(context.Context) { close(normalStarted); <-hold }); err != nil {
		t.Fatal(err)
	}
	if got := read(); got[1].Slow || got[2].Dropping {
		t.Fatalf("flags before any drop or long wait: %+v", got)
	}
	<-time.After(3 * slow) // the normal task's wait, being measured: not a synchronisation
	close(release)
	<-normalStarted // its wait recorded (TimingEvery 1); it runs until hold
	if got := read(); got[0].Slow || !got[1].Slow {
		t.Errorf("flags %+v while the normal task that waited %v runs: want normal slow, urgent not", got, 3*slow)
	}
	close(hold)
	eventually(t, func() bool { c, _ := p.Stats().Channel("normal"); return c.Running == 0 && c.Queued == 0 })
	if got := read(); got[1].Slow {
		t.Errorf("flags %+v once normal is idle: want its slow mark cleared", got)
	}

	started, release = make(chan struct{}), make(chan struct{})
	_ = d.urgent.Submit(block(started, release))
	_ = d.urgent.Submit(block(started, release))
	<-started
	<-started // both workers busy again
	for range 3 {
		if err := d.bulk.Submit(func(context.Context) {}); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := o.Close(ctx)
		closed <- err
	}()
	eventually(t, func() bool { b, _ := p.Stats().Channel("bulk"); return b.Dropped == 3 })
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	got := read()
	if got[0].Dropping || got[1].Slow || got[1].Dropping || got[2].Slow || !got[2].Dropping {
		t.Errorf("flags %+v, want bulk dropping only", got)
	}
}

// jsonOf returns the page's JSON view, for a failure's log.
func jsonOf(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "?format=json")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
