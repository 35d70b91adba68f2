package smartpool_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// A group that keeps going after an error, as conc's pools do: every page
// is fetched and Wait reports every failure.
func ExampleGroup_CollectErrors() {
	pages := channels.NewFIFO()
	owned, _ := smartpool.New(smartpool.Levels[string]{{{Key: "pages", Channel: pages}}})
	defer owned.Close(context.Background())
	g := smartpool.NewGroup(context.Background(), owned.Pool())
	g.CollectErrors()
	for _, page := range []string{"a", "missing", "b", "gone"} {
		g.Go("pages", func(ctx context.Context) error {
			if page == "missing" || page == "gone" {
				return fmt.Errorf("fetch %s: not found", page)
			}
			return ctx.Err() // never cancelled by the failures
		})
	}
	err := g.Wait(context.Background())
	fmt.Println(len(err.(interface{ Unwrap() []error }).Unwrap()), "errors")
	// Output:
	// 2 errors
}

// Context is errgroup.WithContext's context: code that closes over it sees
// the first error cancel it, and Wait end it.
func ExampleGroup_Context() {
	jobs := channels.NewFIFO()
	owned, _ := smartpool.New(smartpool.Levels[string]{{{Key: "jobs", Channel: jobs}}})
	defer owned.Close(context.Background())
	g := smartpool.NewGroup(context.Background(), owned.Pool())
	ctx := g.Context()
	errStop := errors.New("stop")
	g.Go("jobs", func(context.Context) error { return errStop })
	fmt.Println("Wait:", g.Wait(context.Background()))
	fmt.Println("cause:", context.Cause(ctx))
	// Output:
	// Wait: stop
	// cause: stop
}
