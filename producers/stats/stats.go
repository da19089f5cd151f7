// Package stats is the storage statistics looping producer
// (docs/ARCHITECTURE.md, Storage statistics and Looping producers): one
// morsel per space of the active accounts' stores that its filter selects,
// and one STORAGE_STATS task per morsel, which the STORAGE_STATS processor
// (processors/storagestats) turns into the space's row of the run in the
// statistics history. Spaces the history holds items for that a store no
// longer lists are visited too, so a deleted space is measured as empty
// rather than keep its last counts for ever.
//
// Run it with looping.Loop on the queue STORAGE_STATS travels on (bit).
package stats

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/bit"
	"github.com/millfleet/mill/producers/looping"
)

// Kind is the producer's kind: its lease name and state kind.
const Kind = "statsproducer"

// Config configures a Producer. Source's Registry and Opener, and Known,
// are required; Source's Filter selects the spaces as the bit producer's
// filter files do.
type Config struct {
	bit.Source
	// Known reads the spaces the history has rows for (the statistics
	// store itself).
	Known spacestats.Store `validate:"required"`
}

// Producer is the statistics producer. Calls are sequential.
type Producer struct {
	cfg Config
}

var _ looping.Producer = (*Producer)(nil)

// New returns a producer.
func New(cfg Config) (*Producer, error) {
	p := validate.Struct("stats producer: Config", cfg)
	cfg.Source.Check(p)
	if err := p.Err(); err != nil {
		return nil, err
	}
	return &Producer{cfg: cfg}, nil
}

// Morsels lists the spaces to measure: those the stores list
// (bit.ListSpacesEach), and those of the same stores whose latest row in
// the history holds items but that the store no longer lists (deleted
// since: measured as empty). Accounts and stores in registry order, spaces
// byte-wise within a store. A store that cannot be opened or listed is a
// failed morsel ("account/store/(store)"; the next run tries it again), and
// none of its spaces is measured as deleted; when no store can be listed
// the run's start fails.
func (p *Producer) Morsels(ctx context.Context, run looping.RunInfo) ([]looping.Morsel, error) {
	listed, failed := bit.ListSpacesEach(ctx, p.cfg.Registry, p.cfg.Opener, p.cfg.Filter)
	if len(failed) > 0 && len(listed) == 0 {
		var errs []error
		for _, f := range failed {
			errs = append(errs, f.Err)
		}
		return nil, fmt.Errorf("stats: no store could be listed: %w", errors.Join(errs...))
	}
	type store struct{ account, id string }
	broken := map[store]bool{}
	var out []looping.Morsel
	for _, f := range failed {
		broken[store{f.Account, f.StoreID}] = true
		out = append(out, looping.Morsel{ID: f.Account + "/" + f.StoreID + "/(store)", Failed: f.Err.Error()})
	}
	known, err := p.cfg.Known.Latest(ctx, spacestats.Filter{})
	if err != nil {
		return nil, fmt.Errorf("stats: spaces of the history: %w", err)
	}
	type storeKey struct{ account, store string }
	byStore := map[storeKey][]string{}
	seen := map[bit.Space]bool{}
	for _, sp := range listed {
		k := storeKey{sp.Account, sp.StoreID}
		byStore[k] = append(byStore[k], sp.SpaceID)
		seen[sp] = true
	}
	gone := 0
	for _, r := range known {
		sp := bit.Space{Account: r.Account, StoreID: r.StoreID, SpaceID: r.SpaceID}
		if seen[sp] || (r.Items == 0 && r.Bytes == 0) || !p.selected(sp) || broken[store{r.Account, r.StoreID}] {
			continue
		}
		k := storeKey{r.Account, r.StoreID}
		byStore[k] = append(byStore[k], sp.SpaceID)
		seen[sp] = true
		gone++
	}
	for _, a := range p.cfg.Registry.ActiveAccounts() {
		for _, s := range a.Stores {
			spaces := byStore[storeKey{a.ID, s.ID}]
			slices.SortFunc(spaces, cmp.Compare)
			for _, space := range spaces {
				data, err := json.Marshal(morselData{Account: a.ID, StoreID: s.ID, SpaceID: space})
				if err != nil {
					return nil, err
				}
				out = append(out, looping.Morsel{ID: bit.MorselID(a.ID, s.ID, space), Data: data})
			}
		}
	}
	if gone > 0 {
		p.cfg.Logger.Info("spaces no longer listed will be measured as empty", "spaces", gone, "run_id", run.ID)
	}
	return out, nil
}

// selected reports whether the filter selects a space of an active
// account's registered store.
func (p *Producer) selected(sp bit.Space) bool {
	a := p.cfg.Registry.Account(sp.Account)
	if a == nil || !a.Active() || a.Store(sp.StoreID) == nil {
		return false
	}
	return p.cfg.Filter.Store(sp.Account, sp.StoreID) && p.cfg.Filter.Space(sp.Account, sp.StoreID, sp.SpaceID)
}

type morselData struct {
	Account string `json:"account"`
	StoreID string `json:"store"`
	SpaceID string `json:"space"`
}

// Bite queues the space's STORAGE_STATS task (with the run ID) and
// finishes the morsel.
func (p *Producer) Bite(ctx context.Context, run looping.RunInfo, m looping.Morsel, _ int, emit looping.Emit) (looping.BiteResult, error) {
	var d morselData
	if err := json.Unmarshal(m.Data, &d); err != nil || d.Account == "" || d.StoreID == "" || d.SpaceID == "" {
		return looping.BiteResult{}, fmt.Errorf("stats: morsel %q: bad data %s", m.ID, m.Data)
	}
	t := task.StorageStats{Account: d.Account, StoreID: d.StoreID, SpaceID: d.SpaceID, RunID: run.ID}.Task()
	if err := emit(ctx, t); err != nil {
		return looping.BiteResult{}, err
	}
	return looping.BiteResult{Marker: m.Marker, Done: true}, nil
}
