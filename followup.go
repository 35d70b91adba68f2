package smartpool

import "github.com/smartpool-go/smartpool/internal/engine"

// followups asks the behavior where each channel's yielded tasks re-enter and
// validates the answers: the target must be a listed key without a
// MaxInFlight cap (internal/engine/limit.go), and a complete-on-close channel must not follow
// up into a dropping one (its suspended tasks must be able to finish during
// Close).
func followups[K comparable](b PoolBehavior[K], lo *layout[K]) ([]int, error) {
	to := make([]int, len(lo.keys))
	for i, k := range lo.keys {
		t := b.Followup(k)
		j, ok := lo.index[t]
		if !ok {
			return nil, engine.ConfigErr(engine.ErrFollowup, "followup of %v is %v, which no level lists", k, t)
		}
		if lo.params[j].MaxInFlight > 0 {
			return nil, engine.ConfigErr(engine.ErrFollowup, "followup of %v is %v, which has a MaxInFlight cap: a yielded task would queue behind the cap it holds (name an uncapped channel as the Followup)", k, t)
		}
		if lo.params[i].CompleteOnClose && !lo.params[j].CompleteOnClose {
			return nil, engine.ConfigErr(engine.ErrFollowup, "%v completes on close but its followup %v does not", k, t)
		}
		to[i] = j
	}
	return to, nil
}
