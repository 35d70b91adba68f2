package smartpool

import (
	"log/slog"

	"github.com/smartpool-go/smartpool/internal/engine"
)

// # Logging
//
// A pool logs its lifecycle through Config.Logger (log/slog): its start and
// the start and end of Close at Info, with the report's totals at the end;
// each channel that dropped tasks at Warn, once, with its count, when the
// pool has closed; a stall at Warn when the watchdog notices it, and at Info
// when the pool moves on (internal/engine/stall.go); panics (of tasks, of drop callbacks, of
// the panic handler itself) at Error when no PanicHandler takes them. Never
// a line per task.
//
// The start line gives the workers configured. SetWorkers logs nothing (an
// autoscaler may call it every second): the close lines give the workers
// asked for then.

// logger returns l, or slog.Default() if l is nil.
func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

// logStart logs the pool's start: the channels listed, and the places
// Config.Spare reserves for more, if any.
func (p *Pool[K]) logStart(workers, channels int) {
	if spare := len(p.keys) - channels; spare > 0 {
		p.log.Info("smartpool: pool started", "workers", workers, "levels", p.e.Field.Levels(), "channels", channels, "spare", spare)
		return
	}
	p.log.Info("smartpool: pool started", "workers", workers, "levels", p.e.Field.Levels(), "channels", channels)
}

// logClosing logs the first Close call.
func (p *Pool[K]) logClosing() {
	p.closeOnce.Do(func() {
		s := p.Stats()
		p.log.Info("smartpool: close begun", "workers", s.Workers, "queued", s.Total().Queued, "suspended", s.Suspended)
	})
}

// logClosed logs the final report; it runs once, as the pool closes.
func (p *Pool[K]) logClosed() {
	r := p.report
	t := r.Total()
	p.log.Info("smartpool: pool closed", "workers", r.Workers, "ran", t.Ran, "panicked", t.Panicked, "goexited", t.Goexited,
		"dropped", t.Dropped, "cancelled", t.Cancelled)
	for _, c := range r.Channels {
		if c.Dropped > 0 {
			p.log.Warn("smartpool: tasks dropped", "channel", c.Key, "dropped", c.Dropped)
		}
	}
	p.e.FlushUnread()
}

// logPanic logs a panic no handler took: its value and its stack as
// separate attributes, the stack frame by frame.
func (p *Pool[K]) logPanic(msg string, key any, pe *PanicError) {
	p.log.Error(msg, "channel", key, "panic", pe.Value, "stack", engine.StackFrames(pe.Stack))
}
