package statuspage_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/statuspage"
)

// stallPool is one FIFO on one worker, with a stall watchdog.
type stallPool struct{ jobs *channels.FIFO }

func (s stallPool) Config() smartpool.Config[string] {
	return smartpool.Config[string]{Workers: 1, StallAfter: time.Second, Logger: slog.New(slog.DiscardHandler),
		Levels: [][]smartpool.ChannelParams[string]{{{Key: "jobs", CompleteOnClose: true}}}}
}
func (s stallPool) Channel(string) smartpool.Channel { return s.jobs }
func (s stallPool) Followup(k string) string         { return k }

// The page counts the pool's stalls and shows a banner at its top while one
// goes on, in its HTML and its JSON.
func TestStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := stallPool{jobs: channels.NewFIFO()}
		o, err := smartpool.New[string](b)
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		t.Cleanup(func() {
			select {
			case <-release:
			default:
				close(release)
			}
			_, _ = o.Close(context.Background())
		})
		h := statuspage.Handler(o.Pool(), statuspage.Options{})
		get := func(query string) string {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/smartpool"+query, nil))
			return rec.Body.String()
		}
		type stalls struct {
			Stalls  uint64
			Stalled bool
		}
		read := func() stalls {
			var v stalls
			if err := json.Unmarshal([]byte(get("?format=json")), &v); err != nil {
				t.Fatal(err)
			}
			return v
		}
		flag := regexp.MustCompile(`<body>\s*<div id="stall" role="alert"( hidden)?>`)
		if got := read(); got != (stalls{}) || flag.FindStringSubmatch(get(""))[1] == "" {
			t.Fatalf("a fresh pool shows %+v, or its page flags a stall", got)
		}
		for range 2 {
			if err := b.jobs.Submit(func(context.Context) { <-release }); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got := read(); got != (stalls{1, true}) {
			t.Fatalf("stalled pool shows %+v, want 1 stall, stalled", got)
		}
		page := get("")
		if m := flag.FindStringSubmatch(page); m == nil || m[1] != "" {
			t.Fatalf("the page does not flag the stall:\n%s", page)
		}
		if !regexp.MustCompile(`stalls <b id="stalls">1</b>`).MatchString(page) {
			t.Fatalf("the page does not count the stall:\n%s", page)
		}
		close(release)
		time.Sleep(time.Second)
		synctest.Wait()
		if got := read(); got != (stalls{1, false}) {
			t.Fatalf("pool moved on shows %+v, want 1 stall, not stalled", got)
		}
	})
}
