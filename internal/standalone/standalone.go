// Package standalone lets the tests of a channel implementation drive a
// channel without a pool. Since a channel refuses every task until a running
// pool serves it (smartpool.Source), its unit tests attach it to a
// standalone harness: a pool of one level with no workers that never starts
// and never closes, whose Bits admit tasks, keep the availability bits, and
// let the test call the channel's Source's Close directly. Being internal,
// it is out of users' reach: their channels are served by New only.
package standalone

// Attach attaches c, a smartpool.Channel, to a new harness of its own. It is
// set by package smartpool when it is initialised.
var Attach func(c any) error

// AttachOnEnd is Attach with onEnd, a func(smartpool.Task,
// smartpool.Outcome), playing smartpool.ChannelParams.OnEnd: the tasks the
// channel discards (smartpool.Bits.Discard) end as in a pool and reach it.
var AttachOnEnd func(c, onEnd any) error
