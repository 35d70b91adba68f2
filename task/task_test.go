package task_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"go.uber.org/goleak"

	"github.com/smartpool-go/smartpool/task"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOutcomeWords(t *testing.T) {
	want := map[task.Outcome]string{
		task.Ran: "ran", task.Panicked: "panicked", task.Goexited: "goexited",
		task.Cancelled: "cancelled", task.DroppedOnClose: "dropped on close",
		task.DroppedLate: "dropped late", task.DroppedDisplaced: "dropped displaced",
		0: "Outcome(?)",
	}
	for o, s := range want {
		if got := o.String(); got != s {
			t.Errorf("Outcome(%d).String() = %q, want %q", o, got, s)
		}
		if drop := o >= task.DroppedOnClose && o <= task.DroppedDisplaced; o.Dropped() != drop {
			t.Errorf("Outcome(%d).Dropped() = %v", o, o.Dropped())
		}
	}
}

func TestPanicErrorUnwrapsErrorValues(t *testing.T) {
	if err := (&task.PanicError{Value: io.EOF}); !errors.Is(err, io.EOF) {
		t.Errorf("a PanicError of io.EOF does not unwrap to it: %v", err)
	}
	if err := (&task.PanicError{Value: "boom"}); err.Unwrap() != nil || err.Error() != "smartpool: task panicked: boom" {
		t.Errorf("a PanicError of a string: Unwrap %v, Error %q", err.Unwrap(), err.Error())
	}
}

func TestFuncRuns(t *testing.T) {
	ran := false
	var tk task.Task = task.Func(func(context.Context) { ran = true })
	tk.Run(context.Background())
	if !ran {
		t.Error("Func.Run did not call the function")
	}
}
