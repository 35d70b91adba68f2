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

// AttachOnEnd is Attach to a harness that knows c as its channel, as a pool
// does: c's submits given options (smartpool.Bits.Submit), the tasks it
// discards (smartpool.Bits.Discard) and those it runs in the caller
// (smartpool.Bits.RunHere) go through the pool's code. onEnd, if not nil,
// is a func(smartpool.Task, smartpool.Outcome) playing
// smartpool.ChannelParams.OnEnd.
var AttachOnEnd func(c, onEnd any) error
