package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/smartpool-go/smartpool/task"
)

// Option is the engine's side of a submit option (smartpool.Option): what
// it sets, read by gather.
type Option struct {
	ctx      context.Context
	deadline time.Time
	priority int
	handle   *Handle
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
	Ctx    context.Context // nil: not given
	Order  task.Order
	Handle *Handle // WithHandle's; nil: not given
}

// Gather merges opts into the order a channel's own submit method gives (a
// Deadline's deadline argument, say): an option given twice, or one the
// order already has, is an error.
func Gather(order task.Order, opts []Option) (submitOptions, error) {
	so := submitOptions{Order: order}
	for _, o := range opts {
		switch {
		case o.set == 0:
		case o.set == optHandle:
			if so.Handle != nil {
				return so, twice("WithHandle")
			}
			so.Handle = o.handle
		case o.set == optContext:
			if so.Ctx != nil {
				return so, twice("WithContext")
			}
			so.Ctx = o.ctx
		case o.set == optDeadline:
			if so.Order.HasDeadline {
				return so, twice("WithDeadline")
			}
			so.Order.Deadline, so.Order.HasDeadline = o.deadline, true
		case o.set == optPriority:
			if so.Order.HasPriority {
				return so, twice("WithPriority")
			}
			so.Order.Priority, so.Order.HasPriority = o.priority, true
		}
	}
	return so, nil
}

func twice(name string) error {
	return &OptionError{What: name + " given twice, or with a channel argument that sets it"}
}

// OptionError is ErrOption saying what was refused, and by which channel
// once the pool named it (Pool.named): a channel's Push does not know its key.
type OptionError struct {
	channel   any // the channel's key; nil until named
	What      string
	unordered bool // Unordered's: the channel does not order by the key asked for
}

func (e *OptionError) Error() string {
	switch s, ok := e.channel.(string); {
	case e.channel == nil:
		return "smartpool: " + e.What
	case ok:
		return fmt.Sprintf("smartpool: channel %q: %s", s, e.What)
	default:
		return fmt.Sprintf("smartpool: channel %v: %s", e.channel, e.What)
	}
}

func (e *OptionError) Unwrap() error { return task.ErrOption }

// WithChannel names the channel, key, in err if it is an option error that
// does not name one yet (see Pool.named).
func WithChannel(key any, err error) error {
	var oe *OptionError
	if errors.As(err, &oe) && oe.channel == nil {
		return &OptionError{channel: key, What: oe.What}
	}
	return err
}

// Unordered is the error a channel's Push returns for an Order with a key it
// does not order by: it wraps ErrOption and says which key, and the pool
// adds the channel's name. It returns nil for the zero Order.
func Unordered(o task.Order) error {
	switch {
	case o.HasDeadline && o.HasPriority:
		return &OptionError{What: "the channel orders by neither deadline nor priority (WithDeadline, WithPriority)", unordered: true}
	case o.HasDeadline:
		return &OptionError{What: "the channel does not order by deadline (WithDeadline)", unordered: true}
	case o.HasPriority:
		return &OptionError{What: "the channel does not order by priority (WithPriority)", unordered: true}
	}
	return nil
}

// SubmitWith queues t in channel ch as opts say, merged into the order the
// channel's own submit method gives, through push (nil: the channel's
// Push): with a context through submitContext, which may wait and cancels;
// without one as submit, which does neither.
//
// With WithHandle and no context, it queues through submitContext too, with
// context.Background(), which neither waits nor cancels: the task needs the
// wrapper Handle.Cancel claims (see newCancellable).
func (e *Engine) SubmitWith(ch int, t task.Task, order task.Order, opts []Option, push func(task.Task, task.Order) error, pin *KeyPin) error {
	so, err := Gather(order, opts)
	switch {
	case err != nil:
		return err
	case so.Ctx != nil:
		return e.SubmitContext(so.Ctx, ch, t, SubmitMode{Order: so.Order, push: push, Handle: so.Handle, values: true, Wait: true, Room: true}, pin)
	case so.Handle != nil:
		return e.SubmitContext(context.Background(), ch, t, SubmitMode{Order: so.Order, push: push, Handle: so.Handle}, nil)
	}
	return e.Submit(ch, t, so.Order, push)
}

// Submit is source.Bits.Submit, whose documentation is the channel author's.
func (b Bits) Submit(t task.Task, order task.Order, opts []Option, push func(task.Task, task.Order) error) error {
	if b.e == nil {
		return task.ErrNotServed
	}
	// Pinned before Closed: a removal detaches the channel before it flips
	// the epoch (see "Reshaping", 6, in reshape.go).
	pin := b.e.PinKey(b.channel)
	defer pin.Unpin()
	ch, err := pin.Find()
	if err == task.ErrClosed {
		return b.Refusal() // ErrNotServed, if no pool serves the channel yet
	}
	if err != nil {
		return err
	}
	if NilTask(t) {
		return task.ErrNilTask
	}
	err = b.e.SubmitWith(ch, t, order, opts, push, &pin)
	if err != nil && errors.As(err, new(*OptionError)) { // no allocation on success
		// Pinned, with the channel attached when the options were read:
		// ch is still its slot, and its key names it.
		return WithChannel(b.e.Chans[ch].name, err)
	}
	return err
}

// The options' constructors: Option is opaque outside the engine.
func ContextOption(ctx context.Context) Option { return Option{ctx: ctx, set: optContext} }
func DeadlineOption(t time.Time) Option        { return Option{deadline: t, set: optDeadline} }
func PriorityOption(p int) Option              { return Option{priority: p, set: optPriority} }
func HandleOption(h *Handle) Option            { return Option{handle: h, set: optHandle} }
