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

// Options.Sections adds tables of figures the pool does not keep, under the
// levels, in the HTML and in the JSON, read afresh on each request.
func TestSections(t *testing.T) {
	jobs := channels.NewFIFO()
	o, err := smartpool.New(smartpool.Levels[string]{{{Key: "jobs", Channel: jobs}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = o.Close(context.Background()) })
	deadLetters := 0
	h := statuspage.Handler(o.Pool(), statuspage.Options{Sections: func() []statuspage.Section {
		deadLetters++
		return []statuspage.Section{{Title: "queue server", Rows: []statuspage.Row{
			{Name: "connected", Value: "yes"},
			{Name: "dead letters", Value: strings.Repeat("I", deadLetters), Alert: true},
		}}}
	}})
	get := func(query string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/smartpool"+query, nil))
		return rec.Body.String()
	}
	html := get("")
	for _, want := range []string{"queue server", "dead letters", `<tr class="alert"><td class="key">dead letters</td><td>I</td>`} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	var v struct{ Sections []statuspage.Section }
	if err := json.Unmarshal([]byte(get("?format=json")), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Sections) != 1 || len(v.Sections[0].Rows) != 2 || v.Sections[0].Rows[1].Value != "II" || !v.Sections[0].Rows[1].Alert {
		t.Fatalf("JSON sections %+v: want the section read again, its alert kept", v.Sections)
	}
}

// The page says that its wait and run times are sampled, and each wait
// figure how many timed tasks it rests on.
func TestSampledNote(t *testing.T) {
	jobs := channels.NewFIFO()
	o, err := smartpool.New(smartpool.Levels[string]{{{Key: "jobs", Channel: jobs}}}.With(smartpool.Config[string]{TimingEvery: 1}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = o.Close(context.Background()) })
	h := statuspage.Handler(o.Pool(), statuspage.Options{})
	done := make(chan struct{})
	if err := jobs.Submit(func(context.Context) { close(done) }); err != nil {
		t.Fatal(err)
	}
	<-done
	eventually(t, func() bool { c, _ := o.Pool().Stats().Channel("jobs"); return c.Wait.Count == 1 && c.Ran == 1 })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	page := rec.Body.String()
	for _, want := range []string{"Wait and run times are sampled: the pool times one task in Config.TimingEvery", `<td title="of 1 timed tasks">`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
}

// Options.LateWait, SlowWait's former name, still sets the slow mark's
// threshold when SlowWait is 0; SlowWait wins when both are set.
func TestLateWaitAlias(t *testing.T) {
	o, err := smartpool.New(smartpool.Levels[string]{{{Key: "jobs", Channel: channels.NewFIFO()}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = o.Close(context.Background()) })
	for _, c := range []struct {
		o    statuspage.Options
		want string
	}{
		{statuspage.Options{}, "100ms"},
		{statuspage.Options{LateWait: 20 * time.Millisecond}, "20ms"},
		{statuspage.Options{LateWait: 20 * time.Millisecond, SlowWait: 30 * time.Millisecond}, "30ms"},
	} {
		rec := httptest.NewRecorder()
		statuspage.Handler(o.Pool(), c.o).ServeHTTP(rec, httptest.NewRequest("GET", "/?format=json", nil))
		var v struct{ SlowWait string }
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || v.SlowWait != c.want {
			t.Errorf("%+v: slow from %q (%v), want %s", c.o, v.SlowWait, err, c.want)
		}
	}
}
