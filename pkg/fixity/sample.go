package fixity

import (
	"hash/fnv"
)

// Sampled reports whether a run with a store's sample rate checks a copy:
// a hash of the run ID and the copy's names, as a number in [0, 1), is
// below rate. The choice is the same however often it is asked (a bite
// sent again after a crash queues the same copies), and differs from run
// to run, so every copy is checked sooner or later. rate ≥ 1 checks every
// copy, rate ≤ 0 none.
func Sampled(runID string, sp Space, contentID string, rate float64) bool {
	if rate >= 1 {
		return true
	}
	h := fnv.New64a()
	for _, s := range []string{runID, sp.Account, sp.StoreID, sp.SpaceID, contentID} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return float64(h.Sum64()>>11)/(1<<53) < rate
}
