package smartpool

import (
	"fmt"
	"runtime/debug"
)

// PanicError carries a panic recovered from a task: the value passed to panic
// and the stack of the goroutine at the moment it was recovered.
type PanicError struct {
	Value any
	Stack []byte
}

// Error describes the panic value.
func (p *PanicError) Error() string { return fmt.Sprintf("smartpool: task panicked: %v", p.Value) }

// Unwrap returns the panic value when it is an error, so errors.Is and
// errors.As see through the panic.
func (p *PanicError) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

func stack() []byte { return debug.Stack() }
