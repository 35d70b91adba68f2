package statuspage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/statuspage"
)

// operators authorizes the requests whose X-Operator header names alice or
// bob: a stand-in for a program's sessions or client certificates.
func operators(r *http.Request) (string, bool) {
	who := r.Header.Get("X-Operator")
	return who, who == "alice" || who == "bob"
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// actionPool is a running pool for the actions: channels a (capped at 2),
// b (uncapped), and c, whose followup is b; 2 workers, an in-flight limit
// of 10, spare room for removals. Its handler serves the page with o,
// logging to the returned buffer unless o has a logger.
type actionPool struct {
	p       *smartpool.Pool[string]
	a, b, c *channels.FIFO
	h       http.Handler
	log     *syncBuffer
}

func newActionPool(t *testing.T, o statuspage.Options) *actionPool {
	t.Helper()
	ap := &actionPool{a: channels.NewFIFO(), b: channels.NewFIFO(), c: channels.NewFIFO(), log: &syncBuffer{}}
	b := "b"
	owned, err := smartpool.New(smartpool.Levels[string]{
		{{Key: "a", Channel: ap.a, MaxRunning: 2, CompleteOnClose: true}},
		{{Key: "b", Channel: ap.b, CompleteOnClose: true}, {Key: "c", Channel: ap.c, Followup: &b}},
	}.With(smartpool.Config[string]{Workers: 2, Limit: 10, Spare: []int{2, 2}, StallAfter: -1, TimingEvery: 1,
		Logger: slog.New(slog.DiscardHandler)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := owned.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(ap.log, nil))
	}
	ap.p, ap.h = owned.Pool(), statuspage.Handler(owned.Pool(), o)
	return ap
}

// state is what an action may change of a pool, printed.
func state(p *smartpool.Pool[string]) string {
	s := p.Stats()
	out := fmt.Sprintf("workers %d, limit %d, removed %d;", s.Workers, s.Limit, s.Removed.Ran+s.Removed.Dropped)
	for _, c := range s.Channels {
		out += fmt.Sprintf(" %s[cap %d paused %v removing %v]", c.Key, c.Cap, c.Paused, c.Removing)
	}
	return out
}

// view is the part of the page's JSON the action tests read.
type actionView struct {
	Actions bool
	Who     string
	Token   string
	Removed []struct {
		Key, By             string
		Exact               bool
		Ran, Dropped        uint64
		Panicked, Cancelled uint64
		Goexited            uint64
	}
	DeadLetters []struct {
		Source  int
		Channel string
		Kept    uint64
		Err     string
		Letters []struct {
			ID, Reason, Payload, Died, Born string
			Attempts                        uint64
			Size                            int
		}
	}
}

// read GETs the page's JSON as who ("" for an anonymous caller).
func (ap *actionPool) read(t *testing.T, who string) actionView {
	t.Helper()
	req := httptest.NewRequest("GET", "/debug/smartpool?format=json", nil)
	if who != "" {
		req.Header.Set("X-Operator", who)
	}
	rec := httptest.NewRecorder()
	ap.h.ServeHTTP(rec, req)
	var v actionView
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	return v
}

// post sends form as who to the handler, with the extra headers hdr, and
// returns the answer's status and text.
func (ap *actionPool) post(who string, form url.Values, hdr ...string) (int, string) {
	req := httptest.NewRequest("POST", "/debug/smartpool", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if who != "" {
		req.Header.Set("X-Operator", who)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	ap.h.ServeHTTP(rec, req)
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

// form builds a form from name, value pairs.
func form(kv ...string) url.Values {
	f := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Add(kv[i], kv[i+1])
	}
	return f
}

// Without Options.Authorize the page is read-only: no controls, no token,
// and every action is refused with 403 and changes nothing, whoever asks.
func TestActionsOffByDefault(t *testing.T) {
	ap := newActionPool(t, statuspage.Options{})
	on := newActionPool(t, statuspage.Options{Authorize: operators}) // for a token that is good elsewhere
	tok := on.read(t, "alice").Token
	if v := ap.read(t, "alice"); v.Actions || v.Token != "" {
		t.Fatalf("a read-only page offers actions: %+v", v)
	}
	rec := httptest.NewRecorder()
	ap.h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if page := rec.Body.String(); !strings.Contains(page, `<form id="actions" data-token="" onsubmit="return false" hidden>`) {
		t.Errorf("the read-only page shows its controls:\n%s", page)
	}
	before := state(ap.p)
	for _, action := range []url.Values{form("action", "pause", "key", "a", "token", tok), form("action", "workers", "n", "5", "token", tok),
		form("action", "remove", "key", "a", "policy", "drop", "token", tok)} {
		status, msg := ap.post("alice", action)
		if status != http.StatusForbidden || !strings.Contains(msg, "read-only") {
			t.Errorf("%v: %d %q, want 403 saying the page is read-only", action, status, msg)
		}
	}
	if after := state(ap.p); after != before {
		t.Errorf("refused actions changed the pool: %s, then %s", before, after)
	}
	if log := ap.log.String(); strings.Count(log, "statuspage: action refused") != 3 || !strings.Contains(log, "status=403") {
		t.Errorf("the refusals are not logged:\n%s", log)
	}
}

// An action is carried out only for an authorized caller with a token the
// page gave that caller, in a same-origin POST. Without the token, with a
// token of someone else or a forged one, without authorization, from
// another site, or as a GET or any other method, it is refused with a 4xx
// and the pool is unchanged. Carried out or refused, each is logged with
// who asked, what, and the result.
func TestActionsRefused(t *testing.T) {
	ap := newActionPool(t, statuspage.Options{Authorize: operators})
	if v := ap.read(t, ""); v.Actions || v.Token != "" {
		t.Fatalf("an unauthorized caller is offered actions: %+v", v)
	}
	v := ap.read(t, "alice")
	if !v.Actions || v.Who != "alice" || v.Token == "" {
		t.Fatalf("alice is not offered actions: %+v", v)
	}
	tok := v.Token
	pause := func(token string) url.Values { return form("action", "pause", "key", "a", "token", token) }
	forged := []byte(tok)
	forged[len(forged)/2] ^= 1
	before := state(ap.p)
	for _, c := range []struct {
		name   string
		who    string
		form   url.Values
		hdr    []string
		status int
		says   string
	}{
		{"no token", "alice", form("action", "pause", "key", "a"), nil, http.StatusForbidden, "token"},
		{"empty token", "alice", pause(""), nil, http.StatusForbidden, "token"},
		{"forged token", "alice", pause(string(forged)), nil, http.StatusForbidden, "token"},
		{"another's token", "bob", pause(tok), nil, http.StatusForbidden, "token"},
		{"not authorized", "mallory", pause(tok), nil, http.StatusForbidden, "not authorized"},
		{"anonymous", "", pause(tok), nil, http.StatusForbidden, "not authorized"},
		{"cross-site", "alice", pause(tok), []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, "cross-origin"},
		{"other origin", "alice", pause(tok), []string{"Origin", "https://evil.example"}, http.StatusForbidden, "cross-origin"},
	} {
		status, msg := ap.post(c.who, c.form, c.hdr...)
		if status != c.status || !strings.Contains(msg, c.says) {
			t.Errorf("%s: %d %q, want %d saying %q", c.name, status, msg, c.status, c.says)
		}
	}
	// The same action as a GET, with its query or without the form's
	// content type; and under other methods.
	for _, c := range []struct{ method, target, body string }{
		{"GET", "/debug/smartpool?" + pause(tok).Encode(), ""},
		{"GET", "/debug/smartpool?format=json&" + pause(tok).Encode(), ""},
		{"HEAD", "/debug/smartpool?" + pause(tok).Encode(), ""},
		{"PUT", "/debug/smartpool", pause(tok).Encode()},
		{"DELETE", "/debug/smartpool?" + pause(tok).Encode(), ""},
		{"PATCH", "/debug/smartpool", pause(tok).Encode()},
	} {
		req := httptest.NewRequest(c.method, c.target, strings.NewReader(c.body))
		req.Header.Set("X-Operator", "alice")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		ap.h.ServeHTTP(rec, req)
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d %q, want 405", c.method, c.target, rec.Code, rec.Body)
		}
	}
	if status, msg := ap.post("alice", nil); status != http.StatusForbidden {
		t.Errorf("an empty POST: %d %q, want 403 (no token)", status, msg)
	}
	if after := state(ap.p); after != before {
		t.Fatalf("refused actions changed the pool: %s, then %s", before, after)
	}

	// With the token, alice pauses a; bob, with his own, resumes it.
	if status, msg := ap.post("alice", pause(tok)); status != http.StatusOK || msg != `paused channel "a"` {
		t.Fatalf("alice's pause: %d %q", status, msg)
	}
	if c, _ := ap.p.Stats().Channel("a"); !c.Paused {
		t.Fatalf("a is not paused after alice's pause")
	}
	if status, msg := ap.post("bob", form("action", "resume", "key", "a", "token", ap.read(t, "bob").Token)); status != http.StatusOK {
		t.Fatalf("bob's resume: %d %q", status, msg)
	}
	if c, _ := ap.p.Stats().Channel("a"); c.Paused {
		t.Fatalf("a is paused after bob's resume")
	}
	log := ap.log.String()
	for _, want := range []string{
		`level=INFO msg="statuspage: action" who=alice remote=192.0.2.1:1234 action=pause args="key=a" status=200 result="paused channel \"a\""`,
		`level=INFO msg="statuspage: action" who=bob`,
		`level=WARN msg="statuspage: action refused" who=mallory`,
		`status=403 result="missing or stale token`,
		`who=alice remote=192.0.2.1:1234 method=GET action=pause args="" status=405 result="an action is a POST: a GET changes nothing"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, tok) {
		t.Errorf("the log shows a token:\n%s", log)
	}
}

// malformed lists actions that are refused, each with the status and a
// piece of the answer it gets (the pool's own words where it refuses).
var malformed = []struct {
	name   string
	form   []string // name, value pairs; the token is added
	status int
	says   string
}{
	{"unknown key", []string{"action", "pause", "key", "zzz"}, 404, `no channel "zzz"`},
	{"no key", []string{"action", "resume"}, 400, "no key"},
	{"key with a space", []string{"action", "pause", "key", "a "}, 404, `no channel "a "`},
	{"negative cap", []string{"action", "cap", "key", "a", "n", "-1"}, 400, "a cap must be at least 0"},
	{"huge cap", []string{"action", "cap", "key", "a", "n", "99999999999999999999"}, 400, "out of range"},
	{"cap not a number", []string{"action", "cap", "key", "a", "n", "two"}, 400, "not a whole number"},
	{"cap as a float", []string{"action", "cap", "key", "a", "n", "1e3"}, 400, "not a whole number"},
	{"cap without n", []string{"action", "cap", "key", "a"}, 400, "no n"},
	{"cap on an uncapped channel", []string{"action", "cap", "key", "b", "n", "3"}, 409, "channel b has no cap: set MaxRunning or MaxInFlight at New"},
	{"no workers", []string{"action", "workers", "n", "0"}, 409, "SetWorkers(0): want 1 to 65536 workers"},
	{"too many workers", []string{"action", "workers", "n", "1000000"}, 409, "want 1 to 65536 workers"},
	{"huge workers", []string{"action", "workers", "n", "-9223372036854775809"}, 400, "out of range"},
	{"negative limit", []string{"action", "limit", "n", "-5"}, 400, "a limit must be at least 0"},
	{"remove a followup target", []string{"action", "remove", "key", "b", "policy", "drain"}, 409, "followup"},
	{"remove without policy", []string{"action", "remove", "key", "a"}, 400, "policy"},
	{"remove with a bad policy", []string{"action", "remove", "key", "a", "policy", "nuke"}, 400, `policy "nuke"`},
	{"remove an unknown key", []string{"action", "remove", "key", "zzz", "policy", "drop"}, 404, `no channel "zzz"`},
	{"no action", []string{"key", "a"}, 400, "no action"},
	{"unknown action", []string{"action", "explode", "key", "a"}, 400, `unknown action "explode"`},
	{"a field twice", []string{"action", "pause", "key", "a", "key", "b"}, 400, "field key given 2 times"},
	{"unknown field", []string{"action", "pause", "key", "a", "force", "1"}, 400, `unknown field "force"`},
	{"a dead letter without sources", []string{"action", "replay", "source", "0", "channel", "a", "id", "1"}, 400, "source"},
	{"oversized", []string{"action", "pause", "key", strings.Repeat("a", 10<<10)}, 413, "larger than 8192 bytes"},
}

// Malformed actions get a 4xx with a clear message, and change nothing.
func TestActionsMalformed(t *testing.T) {
	ap := newActionPool(t, statuspage.Options{Authorize: operators})
	tok := ap.read(t, "alice").Token
	before := state(ap.p)
	for _, c := range malformed {
		status, msg := ap.post("alice", form(append(c.form, "token", tok)...))
		if status != c.status || !strings.Contains(msg, c.says) {
			t.Errorf("%s: %d %q, want %d saying %q", c.name, status, msg, c.status, c.says)
		}
	}
	if after := state(ap.p); after != before {
		t.Errorf("refused actions changed the pool: %s, then %s", before, after)
	}
}

// Whatever the form holds, an action is answered with a 2xx or a 4xx,
// never a 5xx nor a panic, and a refused one changes nothing.
func FuzzActions(f *testing.F) {
	for _, c := range malformed {
		if c.name == "oversized" {
			continue
		}
		v := form(c.form...)
		f.Add(v.Get("action"), v.Get("key"), v.Get("n"), v.Get("policy"), "")
	}
	f.Add("pause", "a", "", "", "")
	f.Add("cap", "a", "1", "", "")
	f.Add("remove", "c", "", "drop", "")
	f.Add("workers", "", "3", "", "")
	f.Add("limit", "", "0", "", "")
	f.Add("pause", "a", "", "", "x=1&key=b")
	f.Fuzz(func(t *testing.T, action, key, n, policy, extra string) {
		ap := newActionPool(t, statuspage.Options{Authorize: operators, Logger: slog.New(slog.DiscardHandler)})
		body := form("action", action, "key", key, "n", n, "policy", policy, "token", ap.read(t, "alice").Token).Encode() + "&" + extra
		before := state(ap.p)
		req := httptest.NewRequest("POST", "/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Operator", "alice")
		rec := httptest.NewRecorder()
		ap.h.ServeHTTP(rec, req)
		msg, _ := io.ReadAll(rec.Body)
		switch {
		case rec.Code >= 500 || rec.Code < 200:
			t.Fatalf("%s: %d %q", body, rec.Code, msg)
		case rec.Code >= 400 && state(ap.p) != before:
			t.Fatalf("%s: refused (%d %q) but the pool changed: %s, then %s", body, rec.Code, msg, before, state(ap.p))
		case rec.Code >= 400 && len(bytes.TrimSpace(msg)) == 0:
			t.Fatalf("%s: refused (%d) without a word", body, rec.Code)
		}
	})
}

// Each action, carried out from the page, changes the pool as its method
// does; a removal answers with the channel's final stats and lists it
// among the removed channels, with them, as removed by this page.
func TestActionsDone(t *testing.T) {
	ap := newActionPool(t, statuspage.Options{Authorize: operators})
	do := func(kv ...string) string {
		t.Helper()
		status, msg := ap.post("alice", form(append(kv, "token", ap.read(t, "alice").Token)...))
		if status != http.StatusOK {
			t.Fatalf("%v: %d %q", kv, status, msg)
		}
		return msg
	}
	do("action", "pause", "key", "b")
	if c, _ := ap.p.Stats().Channel("b"); !c.Paused {
		t.Errorf("b not paused")
	}
	do("action", "resume", "key", "b")
	do("action", "cap", "key", "a", "n", "0")
	if c, _ := ap.p.Stats().Channel("a"); c.Cap != 0 {
		t.Errorf("a's cap %d, want 0", c.Cap)
	}
	do("action", "cap", "key", "a", "n", "5")
	do("action", "workers", "n", "3")
	do("action", "limit", "n", "7")
	if s := ap.p.Stats(); s.Workers != 3 || s.Limit != 7 {
		t.Errorf("workers %d, limit %d: want 3 and 7", s.Workers, s.Limit)
	}
	if c, _ := ap.p.Stats().Channel("a"); c.Cap != 5 {
		t.Errorf("a's cap %d, want 5", c.Cap)
	}
	// c ran 4 tasks; its removal drains it.
	for range 4 {
		if err := ap.c.Submit(func(context.Context) {}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, func() bool { c, _ := ap.p.Stats().Channel("c"); return c.Ran == 4 })
	if msg := do("action", "remove", "key", "c", "policy", "drain"); msg != `removed channel "c" (drain): ran 4, panicked 0, goexited 0, dropped 0, cancelled 0` {
		t.Errorf("the removal answers %q", msg)
	}
	if _, ok := ap.p.Stats().Channel("c"); ok {
		t.Fatal("c is still in the pool")
	}
	rm := ap.read(t, "").Removed
	if len(rm) != 1 || rm[0].Key != "c" || rm[0].Ran != 4 || !rm[0].Exact || rm[0].By != "this page (drain, by alice)" {
		t.Errorf("the removed channels listed: %+v", rm)
	}
	// a goes too: level 0 is left without channels, level 1 with b.
	do("action", "remove", "key", "a", "policy", "drain")
	rec := httptest.NewRecorder()
	ap.h.ServeHTTP(rec, httptest.NewRequest("GET", "/?format=json", nil))
	var lv struct {
		Levels []struct{ Channels []struct{ Key string } }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &lv); err != nil || len(lv.Levels) != 2 || lv.Levels[0].Channels == nil ||
		len(lv.Levels[0].Channels) != 0 || len(lv.Levels[1].Channels) != 1 || !strings.Contains(rec.Body.String(), `"channels":[]`) {
		t.Errorf("with level 0 empty the levels are %+v (%v): want [] for it, b in level 1", lv.Levels, err)
	}
	// With c gone, b is no followup target: it can go, dropping its queue.
	do("action", "pause", "key", "b")
	for range 3 {
		if err := ap.b.Submit(func(context.Context) { t.Error("a dropped task ran") }); err != nil {
			t.Fatal(err)
		}
	}
	if msg := do("action", "remove", "key", "b", "policy", "drop"); !strings.Contains(msg, "dropped 3") {
		t.Errorf("the removal answers %q", msg)
	}
}

// A removal that drains for longer than ActionTimeout is answered 202: it
// carries on, and the channel is flagged removing.
func TestActionsRemoveTimeout(t *testing.T) {
	ap := newActionPool(t, statuspage.Options{Authorize: operators, ActionTimeout: 50 * time.Millisecond})
	started, release := make(chan struct{}), make(chan struct{})
	if err := ap.c.Submit(func(context.Context) { close(started); <-release }); err != nil {
		t.Fatal(err)
	}
	<-started
	status, msg := ap.post("alice", form("action", "remove", "key", "c", "policy", "drain", "token", ap.read(t, "alice").Token))
	if status != http.StatusAccepted || !strings.Contains(msg, "carries on") {
		t.Errorf("a removal waiting for a running task: %d %q, want 202", status, msg)
	}
	if c, ok := ap.p.Stats().Channel("c"); !ok || !c.Removing {
		t.Errorf("c is not being removed: %+v", c)
	}
	close(release)
	eventually(t, func() bool { _, ok := ap.p.Stats().Channel("c"); return !ok })
}
