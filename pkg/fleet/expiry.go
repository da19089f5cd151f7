package fleet

import (
	"sort"
	"time"
)

// ExpirySeconds is t rounded up to a whole second: the expiry both
// registries store with a worker record.
func ExpirySeconds(t time.Time) int64 {
	s := t.Unix()
	if t.After(time.Unix(s, 0)) {
		s++
	}
	return s
}

// SortPauses sorts ps by Key, the order every registry lists pauses in.
func SortPauses(ps []Pause) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].Key() < ps[j].Key() })
}
