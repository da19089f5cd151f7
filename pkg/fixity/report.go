package fixity

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/millfleet/mill/pkg/stores"
)

// TargetFunc returns the fixity target of a store.
type TargetFunc func(account, storeID string) stores.Fixity

// Spaces computes the coverage of each space, in the order given, against
// the target of its store.
func (src Source) Spaces(ctx context.Context, spaces []Space, target TargetFunc) ([]Coverage, error) {
	out := make([]Coverage, 0, len(spaces))
	for _, sp := range spaces {
		c, err := src.Compute(ctx, sp, target(sp.Account, sp.StoreID))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Totals rolls the coverage of spaces up per store (SpaceID ""), the
// stores in the order they first appear: counts summed, the oldest
// verdict the oldest of all, MaxLate the largest, NextDue the earliest,
// At the latest.
func Totals(cs []Coverage) []Coverage {
	type key struct{ account, store string }
	at := map[key]int{}
	var out []Coverage
	for _, c := range cs {
		k := key{c.Account, c.StoreID}
		i, ok := at[k]
		if !ok {
			at[k] = len(out)
			out = append(out, Coverage{Account: c.Account, StoreID: c.StoreID, Target: c.Target})
			i = len(out) - 1
		}
		t := &out[i]
		t.Spaces += c.Spaces
		t.Copies += c.Copies
		t.Within += c.Within
		t.Overdue += c.Overdue
		t.NeverVerified += c.NeverVerified
		t.NotCovered += c.NotCovered
		t.Failed += c.Failed
		t.Read += c.Read
		t.AtRest += c.AtRest
		t.MaxLate = max(t.MaxLate, c.MaxLate)
		if !c.Oldest.IsZero() && (t.Oldest.IsZero() || c.Oldest.Before(t.Oldest)) {
			t.Oldest = c.Oldest
		}
		if !c.NextDue.IsZero() && (t.NextDue.IsZero() || c.NextDue.Before(t.NextDue)) {
			t.NextDue = c.NextDue
		}
		if c.At.After(t.At) {
			t.At = c.At
		}
	}
	return out
}

// Lateness says how urgently a space needs checking, larger first: the
// most (math.MaxInt64) for a space with a never-verified copy or with no
// copy in the content index (nothing is known of it); else how far past
// its target its most overdue copy is; else, negated, how long until its
// first copy falls due; the least (math.MinInt64) for a space none of
// whose copies a run can bring within target (all not covered).
func (c Coverage) Lateness() time.Duration {
	switch {
	case c.NeverVerified > 0 || c.Copies == 0:
		return math.MaxInt64
	case c.Overdue > 0:
		return c.MaxLate
	case c.Within > 0:
		return -max(c.NextDue.Sub(c.At), 0)
	}
	return math.MinInt64
}

// Urgency orders coverages most overdue first (Lateness, larger first);
// ties keep their order when sorted with slices.SortStableFunc.
func Urgency(a, b Coverage) int { return cmp.Compare(b.Lateness(), a.Lateness()) }

// ByUrgency sorts cs most overdue first, ties in their given order.
func ByUrgency(cs []Coverage) { slices.SortStableFunc(cs, Urgency) }
