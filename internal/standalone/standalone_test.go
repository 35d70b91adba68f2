package standalone_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
	"github.com/smartpool-go/smartpool/internal/standalone"
	"github.com/smartpool-go/smartpool/source"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A channel refuses tasks until something serves it; the harness does, lets
// the test poll and close it, and owns it as a pool would.
func TestAttach_ServesAChannelWithoutAPool(t *testing.T) {
	f := channels.NewFIFO()
	noop := func(context.Context) {}
	if err := f.Submit(noop); !errors.Is(err, smartpool.ErrNotServed) {
		t.Fatalf("Submit before Attach = %v, want ErrNotServed", err)
	}
	if err := standalone.Attach(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Submit(noop); err != nil {
		t.Fatalf("Submit on the harness = %v", err)
	}
	if source.SourceOf(f).Poll(0) == nil {
		t.Fatal("Poll found nothing")
	}
	if err := f.Submit(noop); err != nil {
		t.Fatal(err)
	}
	if out := source.SourceOf(f).Close(true); len(out) != 1 {
		t.Fatalf("Close(true) returned %d tasks, want 1", len(out))
	}
	if err := standalone.Attach(f); !errors.Is(err, smartpool.ErrAttached) {
		t.Fatalf("second Attach = %v, want ErrAttached", err)
	}
	if err := standalone.Attach(42); err == nil {
		t.Fatal("Attach of a non-channel succeeded")
	}
	if err := standalone.Attach(new(channels.FIFO)); err == nil {
		t.Fatal("Attach of a channel holding no Source succeeded")
	}
}

// AttachOnEnd knows the channel as its own: a task the channel discards
// reaches onEnd with why, and a submit given options goes through the pool.
func TestAttachOnEnd_ReportsDiscards(t *testing.T) {
	d := channels.NewDeadline(channels.DropLate())
	var ends []smartpool.Outcome
	onEnd := func(_ smartpool.Task, why smartpool.Outcome) { ends = append(ends, why) }
	if err := standalone.AttachOnEnd(d, onEnd); err != nil {
		t.Fatal(err)
	}
	if err := d.Submit(time.Time{}, func(context.Context) {}, smartpool.WithContext(context.Background())); err != nil {
		t.Fatal(err)
	}
	if source.SourceOf(d).Poll(0) != nil || len(ends) != 1 || ends[0] != smartpool.DroppedLate {
		t.Fatalf("OnEnd saw %v, want one DroppedLate", ends)
	}
	if err := standalone.AttachOnEnd(channels.NewFIFO(), 42); err == nil {
		t.Fatal("AttachOnEnd with an onEnd of the wrong type succeeded")
	}
}
