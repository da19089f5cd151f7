package spacestats

import (
	"fmt"
	"strconv"
	"time"
)

// Level is how far Group sums rows: per account, per store or per space.
type Level string

// Levels.
const (
	ByAccount Level = "account"
	ByStore   Level = "store"
	BySpace   Level = "space"
)

// ParseLevel reads "account", "store" or "space".
func ParseLevel(s string) (Level, error) {
	switch l := Level(s); l {
	case ByAccount, ByStore, BySpace:
		return l, nil
	}
	return "", fmt.Errorf("spacestats: %q: want account, store or space", s)
}

// Group is the sum of the rows of one account, store or space.
type Group struct {
	Account, StoreID, SpaceID string // the finer keys are "" above their level
	Spaces                    int64
	Items, Bytes              int64
	// Measured is the latest Measured of the rows; RunID that row's run.
	Measured time.Time
	RunID    string
}

// Groups sums rows (in Latest's order) by level, keeping that order.
func Groups(rows []Stats, level Level) []Group {
	var out []Group
	for _, r := range rows {
		k := Group{Account: r.Account}
		if level != ByAccount {
			k.StoreID = r.StoreID
		}
		if level == BySpace {
			k.SpaceID = r.SpaceID
		}
		if n := len(out); n == 0 || out[n-1].Account != k.Account || out[n-1].StoreID != k.StoreID || out[n-1].SpaceID != k.SpaceID {
			out = append(out, k)
		}
		g := &out[len(out)-1]
		g.Spaces++
		g.Items += r.Items
		g.Bytes += r.Bytes
		if r.Measured.After(g.Measured) {
			g.Measured, g.RunID = r.Measured, r.RunID
		}
	}
	return out
}

// FormatBytes writes n in binary units with one decimal ("1.5 GiB",
// "512 B").
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
