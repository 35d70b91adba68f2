package jetstream

import "context"

// Propagator carries a context across processes in message headers, for
// Options.Propagator: the trace context of a tracer (the otel module's
// JetStreamPropagator speaks W3C trace context), or anything else a
// handler should see of its publisher's context. The header is the
// message's nats.Header, whose underlying type is map[string][]string (as
// net/http.Header's is), so an implementation needs no NATS import.
// Both methods are called concurrently, from many goroutines.
type Propagator interface {
	// Inject writes what header should carry of ctx; Publish calls it with
	// its ctx on every message it publishes. Headers named Smartpool-* or
	// Nats-* are the channel's and the server's.
	Inject(ctx context.Context, header map[string][]string)
	// Extract returns ctx with what header carries, derived from ctx (the
	// task's context); the handler of a message runs with it. The copies
	// a channel makes of a message (passed on, dead-lettered, replayed)
	// keep its headers, so a handler sees its first publisher's context on
	// every delivery.
	Extract(ctx context.Context, header map[string][]string) context.Context
}

// inject is Options.Propagator's Inject, if any, on a message to publish.
func (c *Client) inject(ctx context.Context, header map[string][]string) {
	if c.opts.Propagator != nil {
		c.opts.Propagator.Inject(ctx, header)
	}
}

// extract is Options.Propagator's Extract, if any, for a message's handler.
func (c *Client) extract(ctx context.Context, header map[string][]string) context.Context {
	if c.opts.Propagator == nil {
		return ctx
	}
	return c.opts.Propagator.Extract(ctx, header)
}
