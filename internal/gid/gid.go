// Package gid identifies the calling goroutine, so that the pool can tell a
// task's own goroutine from any other goroutine holding the task's context.
//
// Current returns an identifier that no other live goroutine has at the same
// time; once a goroutine has exited, its identifier may be reused. On amd64
// and arm64 it is the address of the runtime's goroutine descriptor, read in
// one instruction (the technique of github.com/petermattis/goid); elsewhere
// it is the goroutine number parsed from runtime.Stack, which costs about a
// microsecond.
package gid
