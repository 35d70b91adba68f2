package asynqcmp

import (
	"io"
	"log/slog"
)

// quiet drops the pools' Info lines, which would interleave with the
// benchmark's output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
