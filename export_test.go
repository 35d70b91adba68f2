package smartpool

// The configuration rules, for tests that check which rule New applied:
// users see one sentinel, ErrConfig, and a message.
var (
	RuleNoLevels      = errNoLevels
	RuleEmptyLevel    = errEmptyLevel
	RuleDuplicateKey  = errDuplicateKey
	RuleWorkers       = errWorkers
	RuleNilBehavior   = errNilBehavior
	RuleNilChannel    = errNilChannel
	RuleNoSource      = errNoSource
	RuleFollowup      = errFollowup
	RuleTooManyQueues = errTooManyQueues
	RuleCapBoth       = errCapBoth
	RuleNotConfigured = errNotConfigured
	RuleQuantum       = errQuantum
)

// WorkerCounts returns how many of p's workers were created, and how many of
// those are idle with a goroutine parked and without one.
func WorkerCounts[K comparable](p *Pool[K]) (created, parkedGoroutines, orphans int) {
	p.e.eachWorker(func(w *worker) {
		created++
		switch w.idle.Load() {
		case parked:
			parkedGoroutines++
		case orphaned:
			orphans++
		}
	})
	return created, parkedGoroutines, orphans
}

// SetAfterLookup makes p's by-key Submit without options call f between its
// lookup of the key and its push (a pool with Config.Spare only). Set it
// before any such submit.
func SetAfterLookup[K comparable](p *Pool[K], f func()) { p.e.setAfterLookup(f) }
