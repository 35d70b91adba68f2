package statuspage_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/statuspage"
)

// The page and its JSON show the live worker goroutines (Stats.Live): none
// before any work, one per worker that two blocking tasks hold.
func TestLive(t *testing.T) {
	d := &demo{urgent: channels.NewFIFO(), normal: channels.NewFIFO(), bulk: channels.NewBounded(10)}
	o, err := smartpool.New[string](d)
	if err != nil {
		t.Fatal(err)
	}
	h := statuspage.Handler(o.Pool(), statuspage.Options{})
	get := func(query string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/smartpool"+query, nil))
		return rec.Body.String()
	}
	live := func() int {
		var v struct{ Live int }
		if err := json.Unmarshal([]byte(get("?format=json")), &v); err != nil {
			t.Fatal(err)
		}
		return v.Live
	}
	if n := live(); n != 0 {
		t.Errorf("live %d before any work, want 0", n)
	}
	started, release := make(chan struct{}), make(chan struct{})
	for range 2 {
		_ = d.urgent.Submit(func(context.Context) { started <- struct{}{}; <-release })
	}
	<-started
	<-started
	if n := live(); n != 2 {
		t.Errorf("live %d with both workers running, want 2", n)
	}
	if page := get(""); !strings.Contains(page, `(live <b id="live">2</b>, busy <b id="busy">2</b>)`) {
		t.Errorf("the page does not show 2 live workers:\n%s", page)
	}
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := o.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
