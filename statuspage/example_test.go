package statuspage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

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
