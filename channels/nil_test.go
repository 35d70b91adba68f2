package channels_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// Every submit method that takes a Task refuses one holding a nil function
// (smartpool.Func(nil)), which would panic on the worker that ran it.
func TestSubmit_RefusesTypedNilTasks(t *testing.T) {
	typedNil := smartpool.Func(nil)
	for name, submit := range map[string]func() error{
		"Deadline.SubmitTask": func() error { return channels.NewDeadline().SubmitTask(time.Now(), typedNil) },
		"Priority.SubmitTask": func() error { return channels.NewPriority().SubmitTask(1, typedNil) },
		"Keyed.SubmitTask": func() error {
			k, err := channels.NewKeyed[string](1)
			if err != nil {
				return err
			}
			return k.SubmitTask("g", typedNil)
		},
		"Bounded.SubmitTask": func() error {
			return channels.NewBounded(1).SubmitTask(typedNil, smartpool.WithContext(context.Background()))
		},
		"Bounded.TrySubmitTask": func() error { return channels.NewBounded(1).SubmitTask(typedNil) },
	} {
		if err := submit(); !errors.Is(err, smartpool.ErrNilTask) {
			t.Errorf("%s(Func(nil)) = %v, want ErrNilTask", name, err)
		}
	}
}
