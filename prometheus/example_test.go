package prometheus_test

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	smartprom "github.com/smartpool-go/smartpool/prometheus"
)

// Register a collector per pool; promhttp.Handler then serves its metrics.
func ExampleNewCollector() {
	b := &twoLevels{urgent: channels.NewFIFO(), bulk: channels.NewFIFO()}
	owned, err := smartpool.New[string](b)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer owned.Close(context.Background())

	reg := prometheus.NewRegistry()
	reg.MustRegister(smartprom.NewCollector("jobs", owned.Pool()))
	n, err := testutil.GatherAndCount(reg, "smartpool_tasks_total")
	fmt.Println(n, err) // 8 outcomes (4 of them drops, by cause) × 2 channels
	// Output:
	// 16 <nil>
}
