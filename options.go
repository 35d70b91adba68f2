package smartpool

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Option adjusts one submit. Every submit takes the same options, by key
// (Pool.Submit, Pool.SubmitTask, Go, Group.Go) and through a channel's own
// submit methods:
//
//	err := pool.Submit("render", fn, smartpool.WithContext(ctx), smartpool.WithDeadline(due))
//
// An option the channel cannot honour (a deadline for a FIFO) makes the
// submit fail with an error wrapping ErrOption; it is never ignored. The
// zero Option does nothing. Passing options allocates nothing.
type Option struct {
	ctx      context.Context
	deadline time.Time
	priority int
	handle   *handle
	set      optionSet
}

type optionSet uint8

const (
	optContext optionSet = 1 << iota
	optDeadline
	optPriority
	optHandle
)

// submitOptions is what a submit's options add up to.
type submitOptions struct {
	ctx    context.Context // nil: not given
	order  Order
	handle *handle // WithHandle's; nil: not given
}

// gather merges opts into the order a channel's own submit method gives (a
// Deadline's deadline argument, say): an option given twice, or one the
// order already has, is an error.
func gather(order Order, opts []Option) (submitOptions, error) {
	so := submitOptions{order: order}
	for _, o := range opts {
		switch {
		case o.set == 0:
		case o.set == optHandle:
			if so.handle != nil {
				return so, twice("WithHandle")
			}
			so.handle = o.handle
		case o.set == optContext:
			if so.ctx != nil {
				return so, twice("WithContext")
			}
			so.ctx = o.ctx
		case o.set == optDeadline:
			if so.order.HasDeadline {
				return so, twice("WithDeadline")
			}
			so.order.Deadline, so.order.HasDeadline = o.deadline, true
		case o.set == optPriority:
			if so.order.HasPriority {
				return so, twice("WithPriority")
			}
			so.order.Priority, so.order.HasPriority = o.priority, true
		}
	}
	return so, nil
}

func twice(name string) error {
	return &optionError{what: name + " given twice, or with a channel argument that sets it"}
}

// optionError is ErrOption saying what was refused, and by which channel
// once the pool named it (Pool.named): a channel's Push does not know its key.
type optionError struct {
	channel   any // the channel's key; nil until named
	what      string
	unordered bool // Unordered's: the channel does not order by the key asked for
}

func (e *optionError) Error() string {
	switch s, ok := e.channel.(string); {
	case e.channel == nil:
		return "smartpool: " + e.what
	case ok:
		return fmt.Sprintf("smartpool: channel %q: %s", s, e.what)
	default:
		return fmt.Sprintf("smartpool: channel %v: %s", e.channel, e.what)
	}
}

func (e *optionError) Unwrap() error { return ErrOption }

// withChannel names the channel, key, in err if it is an option error that
// does not name one yet (see Pool.named).
func withChannel(key any, err error) error {
	var oe *optionError
	if errors.As(err, &oe) && oe.channel == nil {
		return &optionError{channel: key, what: oe.what}
	}
	return err
}

// Unordered is the error a channel's Push returns for an Order with a key it
// does not order by: it wraps ErrOption and says which key, and the pool
// adds the channel's name. It returns nil for the zero Order.
func Unordered(o Order) error {
	switch {
	case o.HasDeadline && o.HasPriority:
		return &optionError{what: "the channel orders by neither deadline nor priority (WithDeadline, WithPriority)", unordered: true}
	case o.HasDeadline:
		return &optionError{what: "the channel does not order by deadline (WithDeadline)", unordered: true}
	case o.HasPriority:
		return &optionError{what: "the channel does not order by priority (WithPriority)", unordered: true}
	}
	return nil
}

// submitWith queues t in channel ch as opts say, merged into the order the
// channel's own submit method gives, through push (nil: the channel's
// Push): with a context through submitContext, which may wait and cancels;
// without one as submit, which does neither.
//
// With WithHandle and no context, it queues through submitContext too, with
// context.Background(), which neither waits nor cancels: the task needs the
// wrapper Handle.Cancel claims (see newCancellable).
func (e *engine) submitWith(ch int, t Task, order Order, opts []Option, push func(Task, Order) error, pin *keyPin) error {
	so, err := gather(order, opts)
	switch {
	case err != nil:
		return err
	case so.ctx != nil:
		return e.submitContext(so.ctx, ch, t, submitMode{order: so.order, push: push, handle: so.handle, values: true, wait: true, room: true}, pin)
	case so.handle != nil:
		return e.submitContext(context.Background(), ch, t, submitMode{order: so.order, push: push, handle: so.handle}, nil)
	}
	return e.submit(ch, t, so.order, push)
}

// Submit is a channel's own submit method given options (see Option): it
// queues t in the channel through the pool, which admits it, ties it to
// the context of WithContext and queues it with push, or with the channel's
// Push if push is nil, ordered by order merged with the options' ordering
// (a key set both ways is an error wrapping ErrOption). push receives a
// task the pool admitted, perhaps wrapped, and must queue it as Push would
// (channels.Keyed passes one that queues under the submit's group). A
// channel calls Submit only when its caller passed options, and queues as
// usual otherwise, so that submits without options cost nothing more. It
// returns ErrClosed when no running pool serves the channel.
func (b Bits) Submit(t Task, order Order, opts []Option, push func(Task, Order) error) error {
	if b.e == nil {
		return ErrClosed
	}
	// Pinned before Closed: a removal detaches the channel before it flips
	// the epoch (see "Reshaping", 6, in reshape.go).
	pin := b.e.pinKey(b.channel)
	defer pin.unpin()
	ch, err := pin.find()
	if err != nil {
		return err
	}
	if nilTask(t) {
		return ErrNilTask
	}
	err = b.e.submitWith(ch, t, order, opts, push, &pin)
	if err != nil && errors.As(err, new(*optionError)) { // no allocation on success
		// Pinned, with the channel attached when the options were read:
		// ch is still its slot, and its key names it.
		return withChannel(b.e.chans[ch].name, err)
	}
	return err
}

// The options' constructors: Option is opaque outside the engine.
func contextOption(ctx context.Context) Option { return Option{ctx: ctx, set: optContext} }
func deadlineOption(t time.Time) Option        { return Option{deadline: t, set: optDeadline} }
func priorityOption(p int) Option              { return Option{priority: p, set: optPriority} }
func handleOption(h *handle) Option            { return Option{handle: h, set: optHandle} }
