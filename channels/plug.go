package channels

import "github.com/smartpool-go/smartpool/source"

// plug is embedded by every channel of the package: it makes the channel a
// smartpool.Channel whose Source (the methods the pool calls) users do not
// see. The alias is unexported, so the field stays out of the godoc.
type plug = source.Plug

// cacheLine pads hot fields that different goroutines write apart.
type cacheLine [64]byte
