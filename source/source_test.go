package source_test

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/smartpool-go/smartpool/internal/engine"
	"github.com/smartpool-go/smartpool/internal/standalone"
	"github.com/smartpool-go/smartpool/source"
	"github.com/smartpool-go/smartpool/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The zero Bits belongs to no pool: a channel holding it refuses tasks, and
// its bit calls do nothing.
func TestZeroBits(t *testing.T) {
	var b source.Bits
	if !b.Closed() || b.Attached() || b.Closing() {
		t.Fatalf("zero Bits: Closed %v, Attached %v, Closing %v; want true, false, false", b.Closed(), b.Attached(), b.Closing())
	}
	b.Set(0)
	b.Wake(1)
	b.Clear(0)
	if b.Len() != 0 {
		t.Errorf("zero Bits covers %d queues", b.Len())
	}
	if err := b.Submit(task.Func(func(context.Context) {}), task.Order{}, nil, nil); !errors.Is(err, task.ErrNotServed) {
		t.Errorf("zero Bits' Submit: %v, want ErrNotServed", err)
	}
}

// The package registers the hooks through which the engine and the channel
// harness make its Bits: without them no channel could be attached.
func TestHooksRegistered(t *testing.T) {
	if engine.Attach == nil || standalone.Attach == nil || standalone.AttachOnEnd == nil {
		t.Fatal("package source did not register its attach hooks")
	}
	if err := standalone.Attach(42); err == nil {
		t.Error("the harness attached an int")
	}
}

func TestUnordered(t *testing.T) {
	if err := source.Unordered(task.Order{}); err != nil {
		t.Errorf("Unordered(zero Order) = %v, want nil", err)
	}
	if err := source.Unordered(task.Order{HasPriority: true}); !errors.Is(err, task.ErrOption) {
		t.Errorf("Unordered(priority) = %v, want ErrOption", err)
	}
}
