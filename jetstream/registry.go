package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Handler runs one message: payload is what the producer published. It
// returns nil when the work is done (the message is acknowledged), or an
// error to have it delivered again after a backoff; wrap the error with
// Permanent when another attempt cannot help. ctx is the pool's task
// context, so the handler may call smartpool.Yield with it.
type Handler func(ctx context.Context, payload []byte) error

// Registry maps handler names to handlers. Every process that consumes a
// channel should register every handler name published to it. A message
// whose name a process does not know (a rolling deploy, a forgotten
// Handle) is not run there: it is parked for ChannelOptions.UnknownDelay and
// then passed on to another process, with no attempt counted; only a
// message that no process ran within ChannelOptions.UnknownMaxAge is
// dead-lettered with ErrUnknownHandler. Safe for concurrent use; lookups
// take no lock.
type Registry struct {
	mu       sync.Mutex                         // serialises Handle
	handlers atomic.Pointer[map[string]Handler] // copied on write, read without a lock
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	r := &Registry{}
	r.handlers.Store(&map[string]Handler{})
	return r
}

// Errors returned by Handle.
var (
	ErrBadName   = errors.New("jetstream: bad name")
	ErrNilFunc   = errors.New("jetstream: nil handler")
	ErrDuplicate = errors.New("jetstream: handler name registered twice")
)

// Handle registers h under name. It returns ErrBadName for an empty name,
// ErrNilFunc for a nil h, or ErrDuplicate if name is taken.
func (r *Registry) Handle(name string, h Handler) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty handler name", ErrBadName)
	case h == nil:
		return fmt.Errorf("%w: %q", ErrNilFunc, name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.handlers.Load()
	if _, ok := old[name]; ok {
		return fmt.Errorf("%w: %q", ErrDuplicate, name)
	}
	m := make(map[string]Handler, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[name] = h
	r.handlers.Store(&m)
	return nil
}

func (r *Registry) lookup(name string) (Handler, bool) {
	h, ok := (*r.handlers.Load())[name]
	return h, ok
}

// HandleJSON registers a handler that receives the payload decoded from
// JSON into a T. A payload that does not decode is dead-lettered at once:
// another attempt could not help.
func HandleJSON[T any](r *Registry, name string, h func(ctx context.Context, v T) error) error {
	if h == nil {
		return fmt.Errorf("%w: %q", ErrNilFunc, name)
	}
	return r.Handle(name, func(ctx context.Context, payload []byte) error {
		var v T
		if err := json.Unmarshal(payload, &v); err != nil {
			return Permanent(fmt.Errorf("decode %q payload: %w", name, err))
		}
		return h(ctx, v)
	})
}

// PublishJSON publishes v encoded as JSON for the handler named handler; see
// Client.Publish.
func PublishJSON[T any](ctx context.Context, c *Client, channel, handler string, v T, opts ...PublishOption) (Published, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return Published{}, fmt.Errorf("jetstream: encode %q payload: %w", handler, err)
	}
	return c.Publish(ctx, channel, handler, payload, opts...)
}

// Permanent marks err as one that another attempt cannot cure: a handler
// that returns it has its message dead-lettered at once instead of
// redelivered.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

func isPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}
