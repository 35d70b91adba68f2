package prometheus_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	smartprom "github.com/smartpool-go/smartpool/prometheus"
)

// oneWorker is one FIFO on one worker, with a stall watchdog.
type oneWorker struct{ jobs *channels.FIFO }

func (b oneWorker) Config() smartpool.Config[string] {
	return smartpool.Config[string]{Workers: 1, StallAfter: time.Second, Logger: slog.New(slog.DiscardHandler),
		Levels: [][]smartpool.ChannelParams[string]{{{Key: "jobs", CompleteOnClose: true}}}}
}
func (b oneWorker) Channel(string) smartpool.Channel { return b.jobs }
func (b oneWorker) Followup(k string) string         { return k }

// A stall shows in smartpool_stalls_total, and smartpool_stalled is 1 until
// the pool moves on.
func TestStalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := oneWorker{jobs: channels.NewFIFO()}
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
		c := smartprom.NewCollector("jobs", o.Pool())
		expect := func(stalls, stalled int) {
			t.Helper()
			want := strings.NewReader(fmt.Sprintf(`
# HELP smartpool_stalls_total Stalls the watchdog noticed: every worker busy, work queued and no task ended for StallAfter.
# TYPE smartpool_stalls_total counter
smartpool_stalls_total{pool="jobs"} %d
# HELP smartpool_stalled 1 while the last stall goes on: the pool has not moved on since.
# TYPE smartpool_stalled gauge
smartpool_stalled{pool="jobs"} %d
`, stalls, stalled))
			if err := testutil.CollectAndCompare(c, want, "smartpool_stalls_total", "smartpool_stalled"); err != nil {
				t.Fatal(err)
			}
		}
		expect(0, 0)
		for range 2 {
			if err := b.jobs.Submit(func(context.Context) { <-release }); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		expect(1, 1)
		close(release)
		time.Sleep(time.Second)
		synctest.Wait()
		expect(1, 0)
	})
}
