package source

import "github.com/smartpool-go/smartpool/internal/nilcheck"

// Channel is a source of tasks that a pool's levels list: a queue with its
// own ordering, or anything that can be polled. The channels package has
// FIFO, Deadline, Priority, Bounded, Keyed and Multi.
//
// Users call a channel's own submit methods (Submit, SubmitTask, ...), Len
// and its inspection methods; the pool talks to the channel through its
// Source, which users never see. A Channel is made only by embedding a Plug
// that NewPlug made from the channel's Source, so a channel's zero value,
// not made by its constructor, holds no Source: New refuses it with an
// error wrapping task.ErrConfig. To write a channel, see the package
// documentation.
type Channel interface {
	// Len returns the number of queued tasks. It may be called at any
	// time, from any goroutine.
	Len() int

	source() Source
}

// Plug makes a type a Channel: a channel embeds the Plug that NewPlug made
// from its Source, in its constructor. Embedded through an unexported alias
// (type plug = source.Plug), it stays out of the channel's godoc. The
// zero Plug holds no Source.
type Plug struct{ s Source }

// NewPlug returns the Plug that makes a channel of s.
func NewPlug(s Source) Plug { return Plug{s: s} }

func (p Plug) source() Source { return p.s }

// Plug supplies the method that only it can: a Channel embeds a Plug.
var _ interface{ source() Source } = Plug{}

// SourceOf returns c's Source, or nil if c is nil or holds none (a zero
// value not made by its constructor). Composite channels (channels.Multi)
// reach their inner channels' Sources through it.
func SourceOf(c Channel) Source {
	if nilcheck.Nil(c) {
		return nil
	}
	return c.source()
}
