package smartpool

import (
	"testing"
	"testing/synctest"
	"time"
)

// The rate is the finished count over the last interval of at least a
// second.
func TestRateWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r rateWindow
		if got := r.update(10); got != 0 {
			t.Fatalf("first rate %v, want 0", got)
		}
		time.Sleep(500 * time.Millisecond)
		if got := r.update(20); got != 0 {
			t.Fatalf("rate before a second passed %v, want 0", got)
		}
		time.Sleep(1500 * time.Millisecond)
		if got := r.update(210); got != 100 {
			t.Fatalf("rate %v, want 100/s", got)
		}
		time.Sleep(time.Second)
		if got := r.update(260); got != 50 {
			t.Fatalf("rate %v, want 50/s", got)
		}
	})
}
