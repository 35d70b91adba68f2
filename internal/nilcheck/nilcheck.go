// Package nilcheck tells a nil task from a usable one. An interface that
// holds a nil function or pointer (smartpool.Func(nil), a (*T)(nil)) is not
// nil to ==, yet it would panic on the worker that runs it, far from the
// submit that queued it: the submit refuses it instead.
package nilcheck

import "reflect"

// Nil reports whether v is nil or holds a nil function, pointer, map,
// channel, slice or interface.
func Nil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Func, reflect.Pointer, reflect.Map, reflect.Chan, reflect.Slice, reflect.Interface, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}
