package statuspage_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool/statuspage"
)

// shelf is a DeadLetterSource in memory: dead letters by channel, oldest
// first, and the replays and deletes asked of it.
type shelf struct {
	mu       sync.Mutex // guards the fields below
	letters  map[string][]statuspage.DeadLetter
	replayed []string // "channel/id"
	deleted  []string
	broken   string // a channel whose letters cannot be read
}

// newShelf returns a shelf with n dead letters in channel orders, IDs 1 to
// n, and none in channel mail.
func newShelf(n int) *shelf {
	s := &shelf{letters: map[string][]statuspage.DeadLetter{"mail": nil}}
	born := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := 1; i <= n; i++ {
		s.letters["orders"] = append(s.letters["orders"], statuspage.DeadLetter{ID: fmt.Sprint(i), Reason: fmt.Sprintf("handler: order %d: card declined", i),
			Attempts: uint64(i), Born: born, Died: born.Add(time.Duration(i) * time.Minute), Payload: []byte(fmt.Sprintf(`{"order":%d,"note":"%s"}`, i, strings.Repeat("é", 40)))})
	}
	return s
}

func (s *shelf) NewestDeadLetters(ctx context.Context, n int) []statuspage.DeadLetterList {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []statuspage.DeadLetterList
	for _, ch := range []string{"mail", "orders"} {
		l := statuspage.DeadLetterList{Channel: ch, Kept: uint64(len(s.letters[ch]))}
		if ch == s.broken {
			l.Err = errors.New("dead-letter stream unavailable")
		}
		ls := s.letters[ch]
		for i := len(ls) - 1; i >= 0 && len(l.Letters) < n && l.Err == nil; i-- {
			l.Letters = append(l.Letters, ls[i])
		}
		out = append(out, l)
	}
	return out
}

func (s *shelf) take(channel, id string) error {
	i := slices.IndexFunc(s.letters[channel], func(d statuspage.DeadLetter) bool { return d.ID == id })
	if i < 0 {
		return fmt.Errorf("no dead letter %s of %s", id, channel)
	}
	s.letters[channel] = slices.Delete(s.letters[channel], i, i+1)
	return nil
}

func (s *shelf) ReplayDeadLetter(ctx context.Context, channel, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if channel == s.broken {
		return errors.New("server unavailable")
	}
	if err := s.take(channel, id); err != nil {
		return err
	}
	s.replayed = append(s.replayed, channel+"/"+id)
	return nil
}

func (s *shelf) DeleteDeadLetter(ctx context.Context, channel, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.take(channel, id); err != nil {
		return err
	}
	s.deleted = append(s.deleted, channel+"/"+id)
	return nil
}

func (s *shelf) done() (replayed, deleted []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.replayed), slices.Clone(s.deleted)
}

// The page shows each channel's newest dead letters, DeadLetterRows of
// them, newest first, with their reason, attempts, times and the first
// bytes of their payload, and a channel's error; with actions on, a replay
// or delete of one it shows goes to the source, and one it does not show
// is refused with 404, the source untouched.
func TestDeadLetters(t *testing.T) {
	sh := newShelf(7)
	ap := newActionPool(t, statuspage.Options{Authorize: operators, DeadLetters: []statuspage.DeadLetterSource{sh}, DeadLetterRows: 3})
	v := ap.read(t, "alice")
	if len(v.DeadLetters) != 2 || v.DeadLetters[0].Channel != "mail" || v.DeadLetters[1].Channel != "orders" {
		t.Fatalf("dead letters %+v: want mail's and orders'", v.DeadLetters)
	}
	o := v.DeadLetters[1]
	if o.Kept != 7 || len(o.Letters) != 3 || o.Letters[0].ID != "7" || o.Letters[2].ID != "5" {
		t.Fatalf("orders' dead letters %+v: want 7 kept, 7, 6 and 5 shown", o)
	}
	d := o.Letters[0]
	if d.Reason != "handler: order 7: card declined" || d.Attempts != 7 || d.Born != "2025-03-01 12:00:00" || d.Died != "2025-03-01 12:07:00" ||
		d.Size != 101 || !strings.HasPrefix(d.Payload, `"{\"order\":7,\"note\":\"éé`) || !strings.HasSuffix(d.Payload, `é"…`) {
		t.Errorf("the newest dead letter shows as %+v", d)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("X-Operator", "alice")
	ap.h.ServeHTTP(rec, req)
	if page := rec.Body.String(); !strings.Contains(page, `data-action="replay" data-source="0" data-channel="orders" data-id="7"`) ||
		!strings.Contains(page, "dead letters of orders: 7 kept, the newest") {
		t.Errorf("the page lacks orders' dead letters and their buttons:\n%s", page)
	}

	tok := v.Token
	for _, c := range []struct {
		form   []string
		status int
		says   string
	}{
		{[]string{"action", "replay", "source", "0", "channel", "orders", "id", "7"}, 200, `replayed dead letter "7" of channel "orders"`},
		{[]string{"action", "delete", "source", "0", "channel", "orders", "id", "6"}, 200, `deleted dead letter "6" of channel "orders"`},
		{[]string{"action", "replay", "source", "0", "channel", "orders", "id", "7"}, 404, "replayed or deleted already?"},
		{[]string{"action", "replay", "source", "0", "channel", "orders", "id", "1"}, 404, "among those the page shows"}, // kept, not shown
		{[]string{"action", "delete", "source", "0", "channel", "mail", "id", "5"}, 404, "among those the page shows"},
		{[]string{"action", "replay", "source", "1", "channel", "orders", "id", "5"}, 400, "source"},
		{[]string{"action", "replay", "source", "-1", "channel", "orders", "id", "5"}, 400, "source"},
		{[]string{"action", "replay", "source", "0", "channel", "orders"}, 400, "an id of 1 to 256 bytes"},
		{[]string{"action", "replay", "source", "0", "channel", "orders", "id", strings.Repeat("9", 300)}, 400, "an id of 1 to 256 bytes"},
	} {
		status, msg := ap.post("alice", form(append(c.form, "token", tok)...))
		if status != c.status || !strings.Contains(msg, c.says) {
			t.Errorf("%v: %d %q, want %d saying %q", c.form, status, msg, c.status, c.says)
		}
	}
	if replayed, deleted := sh.done(); fmt.Sprint(replayed, deleted) != "[orders/7] [orders/6]" {
		t.Errorf("replayed %v, deleted %v: want orders' 7 and 6", replayed, deleted)
	}
	if o := ap.read(t, "alice").DeadLetters[1]; o.Kept != 5 || o.Letters[0].ID != "5" {
		t.Errorf("after the replay and the delete, orders' dead letters %+v: want 5 kept, 5 the newest", o)
	}
	// A source that fails: its error is shown, and a replay's is a 502.
	sh.mu.Lock()
	sh.broken = "orders"
	sh.mu.Unlock()
	status, msg := ap.post("alice", form("action", "replay", "source", "0", "channel", "orders", "id", "5", "token", tok))
	if status != http.StatusNotFound {
		t.Errorf("a replay while orders' letters cannot be read: %d %q, want 404", status, msg)
	}
	if o := ap.read(t, "alice").DeadLetters[1]; o.Err != "dead-letter stream unavailable" {
		t.Errorf("orders' dead letters %+v: want its error shown", o)
	}
	// A read-only page shows the dead letters without buttons.
	ro := newActionPool(t, statuspage.Options{DeadLetters: []statuspage.DeadLetterSource{newShelf(2)}})
	rec = httptest.NewRecorder()
	ro.h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if page := rec.Body.String(); !strings.Contains(page, `<tr data-id="2">`) || strings.Contains(page, `data-action="replay"`) {
		t.Errorf("the read-only page's dead letters:\n%s", page)
	}
}

// A replay the source refuses after the page found the dead letter is a
// 502 with the source's words.
func TestDeadLetterSourceFails(t *testing.T) {
	sh := newShelf(1)
	fail := &failingReplay{shelf: sh}
	ap := newActionPool(t, statuspage.Options{Authorize: operators, DeadLetters: []statuspage.DeadLetterSource{fail}})
	status, msg := ap.post("alice", form("action", "replay", "source", "0", "channel", "orders", "id", "1", "token", ap.read(t, "alice").Token))
	if status != http.StatusBadGateway || msg != `replay dead letter "1" of channel "orders": server unavailable` {
		t.Errorf("%d %q, want 502 with the source's error", status, msg)
	}
}

type failingReplay struct{ *shelf }

func (failingReplay) ReplayDeadLetter(context.Context, string, string) error {
	return errors.New("server unavailable")
}
