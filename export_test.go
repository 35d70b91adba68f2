package smartpool

import "github.com/smartpool-go/smartpool/internal/engine"

// The configuration rules, for tests that check which rule New applied:
// users see one sentinel, ErrConfig, and a message.
var (
	RuleNoLevels      = engine.ErrNoLevels
	RuleEmptyLevel    = engine.ErrEmptyLevel
	RuleDuplicateKey  = engine.ErrDuplicateKey
	RuleWorkers       = engine.ErrWorkers
	RuleNilBehavior   = engine.ErrNilBehavior
	RuleNilChannel    = engine.ErrNilChannel
	RuleNoSource      = engine.ErrNoSource
	RuleFollowup      = engine.ErrFollowup
	RuleTooManyQueues = engine.ErrTooManyQueues
	RuleCapBoth       = engine.ErrCapBoth
	RuleNotConfigured = engine.ErrNotConfigured
	RuleQuantum       = engine.ErrQuantum
)

// WorkerCounts returns how many of p's workers were created, and how many of
// those are idle with a goroutine parked and without one.
func WorkerCounts[K comparable](p *Pool[K]) (created, parkedGoroutines, orphans int) {
	p.e.EachWorker(func(w *engine.Worker) {
		created++
		switch w.Idle.Load() {
		case engine.Parked:
			parkedGoroutines++
		case engine.Orphaned:
			orphans++
		}
	})
	return created, parkedGoroutines, orphans
}

// SetAfterLookup makes p's by-key Submit without options call f between its
// lookup of the key and its push (a pool with Config.Spare only). Set it
// before any such submit.
func SetAfterLookup[K comparable](p *Pool[K], f func()) { p.e.SetAfterLookup(f) }
