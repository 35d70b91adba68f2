package statuspage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/statuspage"
)

// reportJS posts to the page's own URL with ?report, on load and after each
// refresh of the page, what its channel table shows: each row's key as
// drawn in its first cell and the flags beside it, read from the DOM.
const reportJS = `<script>
function report() {
  const rows = [...document.querySelectorAll("#rows tr.chan")].map(tr => ({
    key: tr.cells[0].firstChild.textContent,
    flags: [...tr.cells[0].querySelectorAll(".flag")].map(s => s.textContent),
  }));
  const refreshes = +document.getElementById("refreshes").dataset.refreshes;
  fetch("?report", {method: "POST", body: JSON.stringify({refreshes, rows})}).catch(() => {});
}
report();
new MutationObserver(report).observe(document.getElementById("refreshes"), {attributes: true});
</script>`

// domRow is a row of the channel table, as reportJS reads it.
type domRow struct {
	Key   string
	Flags []string
}

// domReport is what reportJS posts.
type domReport struct {
	Refreshes int
	Rows      []domRow
}

// String lists the rows as "key[flag,...]".
func (r domReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "after %d refreshes:", r.Refreshes)
	for _, row := range r.Rows {
		fmt.Fprintf(&b, " %s%v", row.Key, row.Flags)
	}
	return b.String()
}

// row returns the row of key, if the table has one.
func (r domReport) row(key string) (domRow, bool) {
	for _, row := range r.Rows {
		if row.Key == key {
			return row, true
		}
	}
	return domRow{}, false
}

// keys returns the rows' keys, top to bottom.
func (r domReport) keys() []string {
	var ks []string
	for _, row := range r.Rows {
		ks = append(ks, row.Key)
	}
	return ks
}

// reported serves h with reportJS added to its page, and keeps the latest
// report the page posts back.
type reported struct {
	h http.Handler

	mu     sync.Mutex // guards last and got
	last   domReport  // the report with the most refreshes: posts may cross
	got    bool
	failed error // a report that did not decode
}

func (s *reported) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, ok := r.URL.Query()["report"]; ok && r.Method == http.MethodPost {
		var rep domReport
		err := json.NewDecoder(r.Body).Decode(&rep)
		s.mu.Lock()
		switch {
		case err != nil:
			s.failed = err
		case !s.got || rep.Refreshes >= s.last.Refreshes:
			s.last, s.got = rep, true
		}
		s.mu.Unlock()
		return
	}
	injected(s.h, reportJS).ServeHTTP(w, r)
}

// latest returns the latest report, and whether there was one.
func (s *reported) latest(t *testing.T) (domReport, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		t.Fatalf("a report from the page did not decode: %v", s.failed)
	}
	return s.last, s.got
}

// live runs the browser on url until the test ends: the page stays open,
// refreshing itself, while the test changes the pool. At the end the
// browser is asked to quit (SIGTERM, as a desktop's logout does) and
// killed if it has not within 10s.
func live(t *testing.T, bin, url string) (exited <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append(browserArgs(t), url)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done // bounded: WaitDelay
		if t.Failed() {
			t.Logf("%s ended: %v; its stderr:\n%s", bin, waitErr, stderr.String())
		}
	})
	return done
}

// browserReshape: the page stays open in the browser while the pool
// reshapes under it, and its refreshes redraw the channel table: a channel
// added shows as a new row, a paused one is flagged paused, one being
// removed is flagged removing, and once removed its row goes. Each is
// waited for in the DOM, within a bound: the page refreshes once a second.
func browserReshape(t *testing.T, bin string) {
	a, b := channels.NewFIFO(), channels.NewFIFO()
	o, err := smartpool.New(smartpool.Levels[string]{{
		{Key: "a", Channel: a, CompleteOnClose: true},
		{Key: "b", Channel: b, CompleteOnClose: true},
	}}.With(smartpool.Config[string]{Workers: 1, StallAfter: -1, Spare: []int{1}, Logger: slog.New(slog.DiscardHandler)}))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() {
		releaseOnce.Do(func() { close(release) })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := o.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	p := o.Pool()
	page := &reported{h: statuspage.Handler(p, statuspage.Options{})}
	srv := httptest.NewServer(page)
	t.Cleanup(srv.Close)
	exited := live(t, bin, srv.URL+"/debug/smartpool")

	// await polls the page's latest report until cond holds of it.
	await := func(what string, cond func(domReport) bool) domReport {
		t.Helper()
		const bound = 20 * time.Second // a second's refresh, and the browser's start on a loaded machine
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for deadline := time.Now().Add(bound); ; {
			rep, ok := page.latest(t)
			if ok && cond(rep) {
				return rep
			}
			select {
			case <-exited:
				t.Fatalf("the browser quit before the page showed %s; last report: %v", what, rep)
			case <-tick.C:
			}
			if time.Now().After(deadline) {
				t.Fatalf("the page did not show %s within %v; last report (%v): %v; JSON: %s", what, bound, ok, rep, jsonOf(t, srv.URL))
			}
		}
	}
	flagged := func(r domReport, key, flag string) bool {
		row, ok := r.row(key)
		return ok && slices.Contains(row.Flags, flag)
	}

	first := await("channels a and b", func(r domReport) bool { return slices.Equal(r.keys(), []string{"a", "b"}) })
	if flagged(first, "a", "paused") || flagged(first, "b", "removing") {
		t.Fatalf("flags before any pause or removal: %v", first)
	}
	// Each step waits for a refresh after the change: the first report is
	// the page as served, the later ones the script's redraws.
	since := first.Refreshes

	if err := p.AddChannel(0, smartpool.ChannelParams[string]{Key: "tenant"}, channels.NewFIFO(), "tenant"); err != nil {
		t.Fatal(err)
	}
	r := await("the added channel's row", func(r domReport) bool {
		return r.Refreshes > since && slices.Equal(r.keys(), []string{"a", "b", "tenant"})
	})
	if flagged(r, "tenant", "paused") || flagged(r, "tenant", "removing") {
		t.Errorf("the added channel is flagged: %v", r)
	}
	since = r.Refreshes

	if err := p.Pause("a"); err != nil {
		t.Fatal(err)
	}
	r = await("a flagged paused", func(r domReport) bool { return r.Refreshes > since && flagged(r, "a", "paused") })
	if flagged(r, "b", "paused") || flagged(r, "tenant", "paused") {
		t.Errorf("only a is paused: %v", r)
	}
	since = r.Refreshes

	// b's removal waits for its running task: until it ends, b is being
	// removed, flagged so; then its row goes.
	started := make(chan struct{})
	if err := b.Submit(func(context.Context) { close(started); <-release }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("b's task did not start within 10s")
	}
	removed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := p.RemoveChannel(ctx, "b", smartpool.Drain)
		removed <- err
	}()
	r = await("b flagged removing", func(r domReport) bool { return r.Refreshes > since && flagged(r, "b", "removing") })
	since = r.Refreshes
	releaseOnce.Do(func() { close(release) })
	if err := <-removed; err != nil { // bounded: the removal's ctx
		t.Fatalf("RemoveChannel: %v", err)
	}
	r = await("b's row gone", func(r domReport) bool {
		return r.Refreshes > since && slices.Equal(r.keys(), []string{"a", "tenant"})
	})
	if !flagged(r, "a", "paused") || flagged(r, "tenant", "paused") {
		t.Errorf("a stays paused, tenant not: %v", r)
	}
	t.Logf("the page followed the pool: %v", r)
}
