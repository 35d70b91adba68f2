package jetstream

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/smartpool-go/smartpool/statuspage"
)

// StatusSection puts the connection and each channel's figures on the
// pool's live page, dead letters waiting highlighted.
func TestStatusSection(t *testing.T) {
	c := embedded(t, t.TempDir(), false)
	reg := NewRegistry()
	if err := reg.Handle("ok", func(context.Context, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := reg.Handle("bad", func(context.Context, []byte) error { return Permanent(errors.New("bad input")) }); err != nil {
		t.Fatal(err)
	}
	ch, err := c.Channel(testCtx(t), "shown", reg, ChannelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := onePool(t, ch, 1)
	publishN(t, c, "shown", "ok", "ok", 2)
	publishN(t, c, "shown", "bad", "bad", 1)
	until(t, "two acked, one dead letter", func() bool {
		s := ch.Stats()
		return s.Acked == 2 && s.DeadLettered == 1 && s.Held == 0
	})
	sec := c.StatusSection()
	rows := map[string]statuspage.Row{}
	for _, r := range sec.Rows {
		rows[r.Name] = r
	}
	if r := rows["connection"]; !strings.HasPrefix(r.Value, "connected") || r.Alert {
		t.Errorf("connection row %+v", r)
	}
	if r := rows["shown"]; !strings.Contains(r.Value, "acked 2") || !strings.Contains(r.Value, "dead-lettered 1") {
		t.Errorf("channel row %+v", r)
	}
	if r := rows["shown dead letters"]; r.Value != "1" || !r.Alert {
		t.Errorf("dead letters row %+v, want 1, highlighted", r)
	}
	h := statuspage.Handler(p.Pool(), statuspage.Options{Sections: func() []statuspage.Section {
		return []statuspage.Section{c.StatusSection()}
	}})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if body := rec.Body.String(); !strings.Contains(body, "JetStream") || !strings.Contains(body, "shown dead letters") {
		t.Error("the live page lacks the JetStream section")
	}
}
