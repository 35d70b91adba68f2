package statuspage_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/statuspage"
)

// A channel with a start rate shows it as a badge on the page and in the
// JSON, with its throttled count; one without shows none.
func TestRateBadge(t *testing.T) {
	p, url := running(t)
	if err := p.SetRate("bulk", smartpool.Rate{PerSecond: 10, Burst: 2}); err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(page), `<span class="flag rate" title="throttled `) || !strings.Contains(string(page), `>rate 10/s burst 2</span>`) {
		t.Fatalf("no rate badge on the page:\n%s", page)
	}
	res, err = http.Get(url + "?format=json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v struct {
		Levels []struct {
			Channels []struct {
				Key, Rate string
				Throttled uint64
			}
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range v.Levels {
		for _, c := range l.Channels {
			got[c.Key] = c.Rate
		}
	}
	if got["bulk"] != "rate 10/s burst 2" || got["urgent"] != "" {
		t.Fatalf("rates in the JSON: %v", got)
	}
}

// The badge needs no running producers: a rated channel of New shows too.
func TestRateBadgeAtNew(t *testing.T) {
	o, err := smartpool.New[string](smartpool.Levels[string]{{{Key: "api", Channel: channels.NewFIFO(), Rate: smartpool.Rate{PerSecond: 5}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(statuspage.Handler(o.Pool(), statuspage.Options{}))
	defer func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := o.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(page), ">rate 5/s burst 1</span>") {
		t.Fatalf("no rate badge:\n%s", page)
	}
}
