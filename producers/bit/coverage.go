package bit

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/millfleet/mill/pkg/fixity"
	"github.com/millfleet/mill/pkg/stores"
)

// Coverage measures the fixity coverage of a space (*fixity.Source
// implements it).
type Coverage interface {
	Compute(ctx context.Context, sp fixity.Space, target stores.Fixity) (fixity.Coverage, error)
}

// target returns the fixity target of a store.
func (p *Producer) target(account, storeID string) stores.Fixity {
	s, err := p.cfg.Registry.Store(account, storeID)
	if err != nil { // a listed store is registered; the defaults else
		return stores.Store{}.FixityTarget()
	}
	return fixity.StoreTarget(*s)
}

// coverage measures the coverage of each space (nil without Coverage),
// logs each store's roll-up, and reorders spaces and their coverages
// together, most overdue first (ties in the listed order).
func (p *Producer) coverage(ctx context.Context, spaces []Space) ([]fixity.Coverage, error) {
	if p.cfg.Coverage == nil || len(spaces) == 0 {
		return nil, nil
	}
	type pair struct {
		sp Space
		c  fixity.Coverage
	}
	ps := make([]pair, 0, len(spaces))
	for _, sp := range spaces {
		c, err := p.cfg.Coverage.Compute(ctx, fixity.Space{Account: sp.Account, StoreID: sp.StoreID, SpaceID: sp.SpaceID},
			p.target(sp.Account, sp.StoreID))
		if err != nil {
			return nil, fmt.Errorf("bit: fixity coverage: %w", err)
		}
		ps = append(ps, pair{sp, c})
	}
	covs := make([]fixity.Coverage, len(ps))
	for i := range ps {
		covs[i] = ps[i].c
	}
	for _, t := range fixity.Totals(covs) {
		fixity.Log(ctx, p.log, t)
	}
	slices.SortStableFunc(ps, func(a, b pair) int { return fixity.Urgency(a.c, b.c) })
	for i := range ps {
		spaces[i], covs[i] = ps[i].sp, ps[i].c
	}
	return covs, nil
}

// covered returns why a space is skipped by SkipCovered, or "".
func (p *Producer) covered(c fixity.Coverage) string {
	if !p.cfg.SkipCovered || !c.Covered(p.cfg.CoveredMargin) {
		return ""
	}
	return fmt.Sprintf("every copy (%d) is within its fixity target for at least %s more; the first falls due at %s",
		c.Copies, FormatAge(p.cfg.CoveredMargin), c.NextDue.UTC().Format(time.RFC3339))
}
