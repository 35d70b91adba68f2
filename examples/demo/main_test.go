package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The demo prints each channel's books once, in the pool's own report (a
// table of its own beside it said the same again), and says how loaded the
// machine was next to the gap between ticks, which grows with the load.
func TestDemo_OneTableOfBooksAndTheLoad(t *testing.T) {
	var b bytes.Buffer
	out = &b
	*runFor = 200 * time.Millisecond
	t.Cleanup(func() { out = os.Stdout })
	main()
	s := b.String()
	if rows := regexp.MustCompile(`(?m)^\s+(\d+\s+)?Backlog\s`).FindAllString(s, -1); len(rows) != 1 {
		t.Errorf("Backlog's row printed %d times, want once (the report):\n%s", len(rows), s)
	}
	if !strings.Contains(s, "every task accounted for (submitted = ran + panicked + dropped, per channel): true") {
		t.Errorf("the books do not balance:\n%s", s)
	}
	if _, err := os.Stat("/proc/loadavg"); err == nil && !strings.Contains(s, "machine load average") {
		t.Errorf("the gap between ticks is printed without the machine's load:\n%s", s)
	}
}
