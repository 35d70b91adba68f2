package nilcheck

import (
	"context"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fn func(context.Context)

type task struct{}

func (*task) Run(context.Context) {}

func TestNil(t *testing.T) {
	var nilTask *task
	for _, c := range []struct {
		v    any
		want bool
	}{
		{nil, true},
		{fn(nil), true},
		{nilTask, true},
		{fn(func(context.Context) {}), false},
		{&task{}, false},
		{task{}, false},
		{42, false},
	} {
		if got := Nil(c.v); got != c.want {
			t.Errorf("Nil(%#v) = %v, want %v", c.v, got, c.want)
		}
	}
}
