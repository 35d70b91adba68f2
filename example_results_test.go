package smartpool_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// A group of results: every value comes back in the order of the Go
// calls, with no sorting, and a failed task's slot holds the zero value.
func ExampleResults() {
	pages := channels.NewFIFO()
	owned, _ := smartpool.New(smartpool.Levels[string]{{{Key: "pages", Channel: pages}}})
	defer owned.Close(context.Background())
	g := smartpool.NewResults[string](context.Background(), owned.Pool())
	g.CollectErrors() // every task runs; without it the first error cancels the rest
	g.SetLimit(2)
	for _, page := range []string{"home", "about", "missing", "contact"} {
		g.Go("pages", func(ctx context.Context) (string, error) {
			if page == "missing" {
				return "", errors.New("fetch missing: not found")
			}
			return strings.ToUpper(page), nil
		})
	}
	titles, err := g.Wait(context.Background())
	fmt.Printf("%q\n", titles)
	fmt.Println("error:", err)
	// Output:
	// ["HOME" "ABOUT" "" "CONTACT"]
	// error: fetch missing: not found
}
