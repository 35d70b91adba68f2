package smartpool

import (
	"github.com/smartpool-go/smartpool/task"
)

// PanicError carries a panic recovered from a task: the value passed to panic
// and the stack of the goroutine at the moment it was recovered.
type PanicError = task.PanicError
