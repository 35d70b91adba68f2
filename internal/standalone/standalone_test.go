package standalone_test

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/internal/standalone"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A channel refuses tasks until something serves it; the harness does, lets
// the test poll and close it, and owns it as a pool would.
func TestAttach_ServesAChannelWithoutAPool(t *testing.T) {
	f := channels.NewFIFO()
	noop := func(context.Context) {}
	if err := f.Submit(noop); !errors.Is(err, smartpool.ErrClosed) {
		t.Fatalf("Submit before Attach = %v, want ErrClosed", err)
	}
	if err := standalone.Attach(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Submit(noop); err != nil {
		t.Fatalf("Submit on the harness = %v", err)
	}
	if f.Poll(0) == nil {
		t.Fatal("Poll found nothing")
	}
	if err := f.Submit(noop); err != nil {
		t.Fatal(err)
	}
	if out := f.Close(true); len(out) != 1 {
		t.Fatalf("Close(true) returned %d tasks, want 1", len(out))
	}
	if err := standalone.Attach(f); !errors.Is(err, smartpool.ErrAttached) {
		t.Fatalf("second Attach = %v, want ErrAttached", err)
	}
	if err := standalone.Attach(42); err == nil {
		t.Fatal("Attach of a non-channel succeeded")
	}
}
