package statuspage_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool/statuspage"
)

// driveJS lets the test drive the page: it asks the test for a command
// (GET ?cmd) every 100 ms; a command sets the channel chooser and inputs,
// clicks a button, as often as it says (twice for a button that asks to be
// sure), waits for the action's answer and the refresh after it, and
// posts (?report) the answer the page shows, and the removed channels and
// dead letters it lists.
const driveJS = `<script>
async function drive() {
  let done = 0;
  const wait = async (cond) => { while (!cond()) await new Promise(r => setTimeout(r, 50)); };
  for (;;) {
    await new Promise(r => setTimeout(r, 100));
    let cmd = null;
    try { const res = await fetch("?cmd", {cache: "no-store"}); if (res.status === 200) cmd = await res.json(); } catch (e) {}
    if (!cmd || cmd.seq <= done) continue;
    done = cmd.seq;
    const out = document.getElementById("result"), refreshes = document.getElementById("refreshes");
    const results = +out.dataset.results || 0;
    if (cmd.key) document.getElementById("act-key").value = cmd.key;
    for (const [id, v] of Object.entries(cmd.inputs || {})) document.getElementById(id).value = v;
    const b = document.querySelector(cmd.click);
    let rep = {seq: cmd.seq};
    if (!b) {
      rep.result = "no button " + cmd.click;
    } else {
      for (let i = 0; i < cmd.clicks; i++) b.click();
      await wait(() => (+out.dataset.results || 0) > results);
      const r = +refreshes.dataset.refreshes;
      await wait(() => +refreshes.dataset.refreshes > r); // act refreshes the page after its answer
      rep.result = out.textContent; rep.ok = out.className === "ok";
    }
    rep.removed = [...document.querySelectorAll("#removed tbody tr")].map(tr => tr.dataset.key + ": " + [...tr.cells].map(c => c.textContent).slice(2).join(" "));
    rep.letters = [...document.querySelectorAll("#letters tr[data-id]")].map(tr => tr.closest("table").dataset.channel + "/" + tr.dataset.id);
    rep.options = [...document.getElementById("act-key").options].map(o => o.value);
    fetch("?report", {method: "POST", body: JSON.stringify(rep)}).catch(() => {});
  }
}
drive();
</script>`

// command is what driveJS carries out.
type command struct {
	Seq    int               `json:"seq"`
	Key    string            `json:"key,omitempty"`
	Inputs map[string]string `json:"inputs,omitempty"`
	Click  string            `json:"click"`
	Clicks int               `json:"clicks"`
}

// driveReport is what driveJS posts back.
type driveReport struct {
	Seq     int
	Result  string
	OK      bool
	Removed []string
	Letters []string
	Options []string
}

// driven serves h with driveJS added to its page, hands the page its
// commands, keeps its reports, and records the actions it posts to h.
type driven struct {
	h http.Handler

	mu      sync.Mutex // guards the fields below
	cmd     []byte
	posted  []string // the bodies of the page's POSTs to h
	reports chan driveReport
}

func (d *driven) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case q.Has("cmd"):
		d.mu.Lock()
		cmd := d.cmd
		d.mu.Unlock()
		if cmd == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(cmd)
	case q.Has("report") && r.Method == http.MethodPost:
		var rep driveReport
		if err := json.NewDecoder(r.Body).Decode(&rep); err == nil {
			d.reports <- rep // buffered: one command at a time
		}
	case r.Method == http.MethodPost:
		body, _ := io.ReadAll(r.Body)
		d.mu.Lock()
		d.posted = append(d.posted, string(body))
		d.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		d.h.ServeHTTP(w, r)
	default:
		injected(d.h, driveJS).ServeHTTP(w, r)
	}
}

// browserActions: in the browser, the page's controls carry out each
// action on a live pool, as Stats shows; the pool's refusals show in its
// own words and change nothing; a removal shows the channel's final stats
// and lists it as removed; a dead letter is replayed and deleted. Then the
// very POSTs the page sent (the first 10), without their token, with the caller no longer
// authorized, or as GETs, are refused and change nothing.
func browserActions(t *testing.T, bin string) {
	var open atomic.Bool // whether the program's authorizer lets the operator act
	open.Store(true)
	sh := newShelf(3)
	ap := newActionPool(t, statuspage.Options{
		Authorize:   func(*http.Request) (string, bool) { return "operator", open.Load() },
		DeadLetters: []statuspage.DeadLetterSource{sh},
	})
	for range 2 {
		if err := ap.c.Submit(func(context.Context) {}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, func() bool { c, _ := ap.p.Stats().Channel("c"); return c.Ran == 2 })
	page := &driven{h: ap.h, reports: make(chan driveReport, 1)}
	srv := httptest.NewServer(page)
	t.Cleanup(srv.Close)
	exited := live(t, bin, srv.URL+"/debug/smartpool")

	seq := 0
	step := func(c command) driveReport {
		t.Helper()
		seq++
		c.Seq = seq
		if c.Clicks == 0 {
			c.Clicks = 1
		}
		b, _ := json.Marshal(c)
		page.mu.Lock()
		page.cmd = b
		page.mu.Unlock()
		const bound = 30 * time.Second // the browser's start on a loaded machine, and a refresh
		timeout := time.NewTimer(bound)
		defer timeout.Stop()
		for {
			select {
			case rep := <-page.reports:
				if rep.Seq == seq {
					t.Logf("%s: %s", c.Click, rep.Result)
					return rep
				}
			case <-exited:
				t.Fatalf("the browser quit before it clicked %s", c.Click)
			case <-timeout.C:
				t.Fatalf("no answer to a click on %s within %v; the page's JSON: %s", c.Click, bound, jsonOf(t, srv.URL))
			}
		}
	}
	stats := func(key string) (cap int, paused, ok bool) {
		c, ok := ap.p.Stats().Channel(key)
		return c.Cap, c.Paused, ok
	}
	expect := func(rep driveReport, ok bool, says string) {
		t.Helper()
		if rep.OK != ok || !strings.Contains(rep.Result, says) {
			t.Errorf("the page shows %q (ok %v), want %v saying %q", rep.Result, rep.OK, ok, says)
		}
	}

	expect(step(command{Key: "a", Click: `button[data-action="pause"]`}), true, `200 paused channel "a"`)
	if _, paused, _ := stats("a"); !paused {
		t.Error("a is not paused")
	}
	expect(step(command{Key: "a", Click: `button[data-action="resume"]`}), true, `200 resumed channel "a"`)
	if _, paused, _ := stats("a"); paused {
		t.Error("a is still paused")
	}
	expect(step(command{Key: "a", Inputs: map[string]string{"act-cap": "3"}, Click: `button[data-action="cap"]`}), true, `set the cap of channel "a" to 3`)
	if cap, _, _ := stats("a"); cap != 3 {
		t.Errorf("a's cap is %d, want 3", cap)
	}
	before := state(ap.p)
	expect(step(command{Key: "b", Inputs: map[string]string{"act-cap": "3"}, Click: `button[data-action="cap"]`}), false,
		"409 smartpool: bad configuration: SetCap(b, 3): channel b has no cap: set MaxRunning or MaxInFlight at New")
	expect(step(command{Key: "b", Click: `button[data-action="remove"][data-policy="drain"]`, Clicks: 2}), false,
		"409 smartpool: bad configuration: RemoveChannel(b): it is the followup of c: remove that channel first")
	if after := state(ap.p); after != before {
		t.Errorf("refused actions changed the pool: %s, then %s", before, after)
	}
	expect(step(command{Inputs: map[string]string{"act-workers": "3"}, Click: `button[data-action="workers"]`}), true, "set the workers to 3")
	expect(step(command{Inputs: map[string]string{"act-limit": "7"}, Click: `button[data-action="limit"]`}), true, "set the in-flight limit to 7")
	if s := ap.p.Stats(); s.Workers != 3 || s.Limit != 7 {
		t.Errorf("workers %d, limit %d: want 3 and 7", s.Workers, s.Limit)
	}
	rep := step(command{Key: "c", Click: `button[data-action="remove"][data-policy="drain"]`, Clicks: 2})
	expect(rep, true, `200 removed channel "c" (drain): ran 2, panicked 0, goexited 0, dropped 0, cancelled 0`)
	if _, _, ok := stats("c"); ok {
		t.Error("c is still in the pool")
	}
	if !slices.Equal(rep.Removed, []string{"c: this page (drain, by operator) 2 0 0 0 final"}) || slices.Contains(rep.Options, "c") {
		t.Errorf("after c's removal the page lists removed %q, offers channels %q", rep.Removed, rep.Options)
	}
	if !slices.Equal(rep.Letters, []string{"orders/3", "orders/2", "orders/1"}) {
		t.Errorf("the page shows dead letters %q, want orders' 3, 2, 1", rep.Letters)
	}
	rep = step(command{Click: `#letters tr[data-id="3"] button[data-action="replay"]`})
	expect(rep, true, `replayed dead letter "3" of channel "orders"`)
	rep = step(command{Click: `#letters tr[data-id="1"] button[data-action="delete"]`, Clicks: 2})
	expect(rep, true, `deleted dead letter "1" of channel "orders"`)
	if replayed, deleted := sh.done(); !slices.Equal(replayed, []string{"orders/3"}) || !slices.Equal(deleted, []string{"orders/1"}) {
		t.Errorf("replayed %v, deleted %v: want orders' 3 and 1", replayed, deleted)
	}
	if !slices.Equal(rep.Letters, []string{"orders/2"}) {
		t.Errorf("the page shows dead letters %q, want orders' 2", rep.Letters)
	}

	// The page's own POSTs, sent again: without their token, while the
	// operator is not authorized, and as GETs.
	page.mu.Lock()
	posted := slices.Clone(page.posted)
	page.mu.Unlock()
	if len(posted) != 10 {
		t.Fatalf("the page posted %d actions, want 10: %q", len(posted), posted)
	}
	send := func(method, query, body string) int {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+"/debug/smartpool?"+query, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	// An action of each kind again, on the pool as the clicks left it.
	if err := ap.p.Pause("a"); err != nil {
		t.Fatal(err)
	}
	before = state(ap.p)
	replayed, deleted := sh.done()
	for _, body := range posted {
		f, err := url.ParseQuery(body)
		if err != nil || f.Get("token") == "" {
			t.Fatalf("the page posted %q", body)
		}
		tokenless := url.Values{}
		for k, v := range f {
			if k != "token" {
				tokenless[k] = v
			}
		}
		if s := send("POST", "", tokenless.Encode()); s != http.StatusForbidden {
			t.Errorf("%s without its token: %d, want 403", tokenless.Encode(), s)
		}
		if s := send("GET", body, ""); s != http.StatusMethodNotAllowed {
			t.Errorf("GET ?%s: %d, want 405", body, s)
		}
		open.Store(false)
		if s := send("POST", "", body); s != http.StatusForbidden {
			t.Errorf("%s unauthorized: %d, want 403", body, s)
		}
		open.Store(true)
	}
	if after := state(ap.p); after != before {
		t.Errorf("refused actions changed the pool: %s, then %s", before, after)
	}
	if r, d := sh.done(); !slices.Equal(r, replayed) || !slices.Equal(d, deleted) {
		t.Errorf("refused actions reached the dead letters: replayed %v, deleted %v", r, d)
	}
	// The tokens the page used are good: the first, sent again, acts.
	if s := send("POST", "", posted[1]); s != http.StatusOK { // resume a
		t.Errorf("the page's resume sent again: %d, want 200", s)
	}
	if _, paused, _ := stats("a"); paused {
		t.Error("a is still paused")
	}
	// a's removal leaves level 0 without channels: the page goes on
	// refreshing (the step waits for a refresh after the answer).
	rep = step(command{Key: "a", Click: `button[data-action="remove"][data-policy="drop"]`, Clicks: 2})
	expect(rep, true, `200 removed channel "a" (drop)`)
	if !slices.Equal(rep.Options, []string{"b"}) || len(rep.Removed) != 2 || !strings.HasPrefix(rep.Removed[0], "a: this page (drop, by operator)") {
		t.Errorf("after a's removal the page offers channels %q, lists removed %q", rep.Options, rep.Removed)
	}
}
