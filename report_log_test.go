package smartpool_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// Close's report gives the tasks finished per second over the pool's life:
// its last Stats call is often the first, which has no interval to measure
// and said 0.
func TestReport_RateOverTheLife(t *testing.T) {
	o := start(t, &behavior{workers: 2, levels: [][]ch{{fifo("jobs")}}})
	for range 100 {
		submit(t, o, "jobs", func(context.Context) {})
	}
	r := closeWithin(t, o, long)
	require.EqualValues(t, 100, r.Total().Ran)
	require.Positive(t, r.Rate)
	require.NotContains(t, r.String(), "rate 0.0/s")
}

// The close lines give the workers asked for when the pool closes, not the
// count it started with.
func TestLog_CloseLinesGiveTheWorkersNow(t *testing.T) {
	logs := &logRecords{}
	o := start(t, &behavior{workers: 2, levels: [][]ch{{fifo("jobs")}}, logger: slog.New(logs)})
	require.NoError(t, o.Pool().SetWorkers(1))
	closeWithin(t, o, long)
	require.Equal(t, "2", logs.lines("smartpool: pool started")[0]["workers"])
	require.Equal(t, "1", logs.lines("smartpool: close begun")[0]["workers"])
	require.Equal(t, "1", logs.lines("smartpool: pool closed")[0]["workers"])
}

// The start line counts the channels listed, and the places Config.Spare
// reserves apart: a pool of one channel and three spare places said
// channels=4.
func TestLog_StartLineCountsSpareApart(t *testing.T) {
	for _, c := range []struct {
		spare      []int
		want, more string
	}{
		{nil, "1", ""},
		{[]int{3}, "1", "3"},
	} {
		logs := &logRecords{}
		o := start(t, &behavior{workers: 1, levels: [][]ch{{fifo("jobs")}}, spare: c.spare, logger: slog.New(logs)})
		closeWithin(t, o, long)
		line := logs.lines("smartpool: pool started")[0]
		require.Equal(t, c.want, line["channels"], "channels with Spare %v", c.spare)
		require.Equal(t, c.more, line["spare"], "spare places with Spare %v", c.spare)
	}
}
