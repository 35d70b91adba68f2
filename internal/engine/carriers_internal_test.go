package engine

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/smartpool-go/smartpool/task"
)

// A rehired context equals a new one in every field but those the goroutine
// keeps: a field added to taskContext and not reset by rehire fails here.
func TestRehireResetsEveryField(t *testing.T) {
	e := &Engine{Base: context.Background()}
	w1, w2 := &Worker{id: 1}, &Worker{id: 2}
	tc := newTaskContext(e, w1)
	kept := map[string]bool{"e": true, "owner": true, "grant": true, "release": true, "timer": true, "spare": true}
	v := reflect.ValueOf(tc).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		name := v.Type().Field(i).Name
		if kept[strings.ToLower(name)] || name == "Context" {
			continue
		}
		dirty(t, name, reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem())
	}
	tc.Context = context.TODO()
	tc.timer = time.NewTimer(time.Hour)
	tc.timer.Stop()
	tc.rehire(w2)
	want := reflect.ValueOf(newTaskContext(e, w2)).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if kept[strings.ToLower(name)] {
			continue
		}
		got := reflect.NewAt(v.Field(i).Type(), v.Field(i).Addr().UnsafePointer()).Elem().Interface()
		exp := reflect.NewAt(want.Field(i).Type(), want.Field(i).Addr().UnsafePointer()).Elem().Interface()
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("field %s after rehire: %v, a new context has %v", name, got, exp)
		}
	}
}

// dirty sets f to a value other than its zero value.
func dirty(t *testing.T, name string, f reflect.Value) {
	switch f.Kind() {
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Uint8:
		f.SetUint(3)
	case reflect.Int, reflect.Int64:
		f.SetInt(7)
	case reflect.Pointer:
		f.Set(reflect.New(f.Type().Elem()))
	case reflect.Interface:
		f.Set(reflect.ValueOf(task.Func(func(context.Context) {})))
	case reflect.Slice:
		f.Set(reflect.MakeSlice(f.Type(), 1, 1))
	case reflect.Struct: // Order
		f.Set(reflect.ValueOf(task.Order{Priority: 7, HasPriority: true}))
	default:
		t.Fatalf("field %s: no dirty value for kind %v; teach the test", name, f.Kind())
	}
}
