package show

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		n    uint64
		want string
	}{
		{0, 0, "-"},
		{time.Second, 0, "-"},
		{999, 1, "999ns"},
		{12345, 1, "12.3µs"},
		{1234567, 3, "1.23ms"},
		{98765 * time.Millisecond, 1, "1m38.8s"},
		{2 * time.Hour, 1, "2h0m0s"},
	} {
		if got := Duration(c.d, c.n); got != c.want {
			t.Errorf("Duration(%v, %d) = %q, want %q", c.d, c.n, got, c.want)
		}
	}
}
