package smartpool_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/smartpool-go/smartpool"
	"github.com/smartpool-go/smartpool/channels"
)

// logged is a TaskObserver of one task that prints what the pool tells it.
type logged struct {
	name string
	mu   *sync.Mutex
}

func (l logged) Start(ctx context.Context) context.Context { l.print("start"); return ctx }
func (l logged) Yield()                                    { l.print("yield") }
func (l logged) Resume()                                   { l.print("resume") }
func (l logged) End(o smartpool.Outcome, err error)        { l.print(fmt.Sprintf("end %v %v", o, err)) }
func (l logged) print(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Println(l.name, s)
}

// Config.Observe follows every task from its submit to its end: the hook
// the otel module traces with, and yours for instrumentation of your own.
func ExampleTaskObserver() {
	var mu sync.Mutex
	jobs := channels.NewFIFO()
	owned, _ := smartpool.New(smartpool.Levels[string]{{{Key: "jobs", Channel: jobs, CompleteOnClose: true}}}.
		With(smartpool.Config[string]{Workers: 1,
			Observe: func(ctx context.Context, key string, level int) smartpool.TaskObserver {
				return logged{name: fmt.Sprintf("%s@%d", key, level), mu: &mu}
			}}))
	done := make(chan struct{})
	_ = jobs.Submit(func(ctx context.Context) {
		_ = smartpool.Sleep(ctx, 0) // a wait: Yield, then Resume
		close(done)
	})
	<-done
	_, _ = owned.Close(context.Background())
	// Output:
	// jobs@0 start
	// jobs@0 yield
	// jobs@0 resume
	// jobs@0 end ran <nil>
}
