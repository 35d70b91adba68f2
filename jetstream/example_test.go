package jetstream_test

import (
	"context"
	"fmt"
	"os"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/jetstream"
)

// single is a pool with one JetStream channel.
type single struct{ ch *jetstream.Channel }

func (s single) Config() smartpool.Config[string] {
	return smartpool.Config[string]{Workers: 2, Levels: [][]smartpool.ChannelParams[string]{{{Key: "emails", CompleteOnClose: true}}}}
}
func (s single) Channel(string) smartpool.Channel { return s.ch }
func (s single) Followup(k string) string         { return k }

// An embedded server, a handler, a pool that runs the published tasks.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	c, err := jetstream.Embedded(ctx, jetstream.EmbeddedOptions{Dir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close() // after the pool's Close

	type email struct{ To string }
	sent := make(chan string)
	reg := jetstream.NewRegistry()
	_ = jetstream.HandleJSON(reg, "send", func(ctx context.Context, e email) error {
		sent <- e.To
		return nil
	})
	ch, err := c.Channel(ctx, "emails", reg, jetstream.ChannelOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	pool, err := smartpool.New[string](single{ch})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := jetstream.PublishJSON(ctx, c, "emails", "send", email{To: "ada@example.com"}, jetstream.WithMsgID("welcome-ada")); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("sent to", <-sent)
	report, _ := pool.Close(ctx)
	fmt.Println("ran", report.Total().Ran)
	// Output:
	// sent to ada@example.com
	// ran 1
}
