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
	RuleFollowup      = errFollowup
	RuleTooManyQueues = errTooManyQueues
	RuleCapBoth       = errCapBoth
	RuleNotConfigured = errNotConfigured
)
