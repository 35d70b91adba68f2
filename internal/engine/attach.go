package engine

// Attach calls a channel's Source.Attach with the channel author's face of
// b (source.Bits), which only package source can make: it sets Attach in
// its init, and the root imports source, so Attach is set before any pool
// is built. New and AddChannel call it, once per channel. src is the
// channel's source.Source.
var Attach func(src any, b Bits) error
