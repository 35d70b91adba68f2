package statuspage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/statuspage"
)

// Mount the page on a debug mux; its JSON is the same URL with
// ?format=json.
func ExampleHandler() {
	d := &demo{urgent: channels.NewFIFO(), normal: channels.NewFIFO(), bulk: channels.NewBounded(10)}
	owned, err := smartpool.New[string](d)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer owned.Close(context.Background())

	mux := http.NewServeMux()
	mux.Handle("/debug/smartpool/", statuspage.Handler(owned.Pool(), statuspage.Options{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res, err := http.Get(srv.URL + "/debug/smartpool?format=json")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer res.Body.Close()
	var page struct {
		State  string
		Levels []struct {
			Channels []struct{ Key, Close string }
		}
	}
	_ = json.NewDecoder(res.Body).Decode(&page)
	fmt.Println(page.State)
	for i, l := range page.Levels {
		for _, c := range l.Channels {
			fmt.Println("level", i, c.Key, c.Close)
		}
	}
	// Output:
	// running
	// level 0 urgent complete
	// level 1 normal complete
	// level 2 bulk drop
}

// Turn the page's actions on behind an authorizer: here, operators named
// by the X-Operator header, a stand-in for the program's sessions or
// client certificates. The page then shows its controls to them; a script
// acts as the page does, with the token of the page's JSON. Each action is
// logged through Options.Logger.
func ExampleOptions_authorize() {
	d := &demo{urgent: channels.NewFIFO(), normal: channels.NewFIFO(), bulk: channels.NewBounded(10)}
	owned, err := smartpool.New[string](d)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer owned.Close(context.Background())

	mux := http.NewServeMux()
	mux.Handle("/debug/smartpool/", statuspage.Handler(owned.Pool(), statuspage.Options{
		Authorize: func(r *http.Request) (who string, ok bool) {
			who = r.Header.Get("X-Operator")
			return who, who == "alice"
		},
		Logger: slog.New(slog.DiscardHandler), // the program's logger
	}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	page := srv.URL + "/debug/smartpool/"

	do := func(method, target, who string, form url.Values) *http.Response {
		req, _ := http.NewRequest(method, target, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Operator", who)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return nil
		}
		return res
	}
	answer := func(res *http.Response) {
		if res == nil {
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		fmt.Printf("%d %s", res.StatusCode, b)
	}

	// The token comes with the page, and its JSON, for an authorized caller.
	res := do("GET", page+"?format=json", "alice", nil)
	if res == nil {
		return
	}
	var v struct{ Token string }
	_ = json.NewDecoder(res.Body).Decode(&v)
	res.Body.Close()

	answer(do("POST", page, "alice", url.Values{"action": {"pause"}, "key": {"bulk"}, "token": {v.Token}}))
	answer(do("POST", page, "alice", url.Values{"action": {"cap"}, "key": {"urgent"}, "n": {"2"}, "token": {v.Token}}))
	answer(do("POST", page, "alice", url.Values{"action": {"pause"}, "key": {"nosuch"}, "token": {v.Token}}))
	answer(do("POST", page, "alice", url.Values{"action": {"resume"}, "key": {"bulk"}}))
	answer(do("POST", page, "mallory", url.Values{"action": {"resume"}, "key": {"bulk"}, "token": {v.Token}}))
	bulk, _ := owned.Pool().Stats().Channel("bulk")
	fmt.Println("bulk paused:", bulk.Paused)
	// Output:
	// 200 paused channel "bulk"
	// 409 smartpool: bad configuration: SetCap(urgent, 2): channel urgent has no cap: set MaxRunning or MaxInFlight at New
	// 404 no channel "nosuch" in the pool
	// 403 missing or stale token: reload the page (a token is good for an hour; the page renews it as it refreshes)
	// 403 not authorized to act on this pool
	// bulk paused: true
}
