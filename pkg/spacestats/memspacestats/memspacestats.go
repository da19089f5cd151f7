// Package memspacestats is the storage statistics history (spacestats.Store)
// in memory, for unit tests and the dev mode. It passes spacestatstest.Run.
package memspacestats

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/spacestats"
)

// Store is an in-memory spacestats.Store for tests and the dev mode.
type Store struct {
	clk  clock.Clock
	mu   sync.Mutex
	rows map[key]spacestats.Stats
}

type key struct{ run, account, store, space string }

var _ spacestats.Store = (*Store)(nil)

// New returns an empty store on clk (nil: the system clock).
func New(clk clock.Clock) *Store {
	return &Store{clk: clock.Or(clk), rows: map[key]spacestats.Stats{}}
}

// Put implements spacestats.Store.
func (m *Store) Put(ctx context.Context, s spacestats.Stats) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Measured.IsZero() {
		s.Measured = m.clk.Now()
	}
	if s.Started.IsZero() {
		s.Started = s.Measured
	}
	s.Started, s.Measured = spacestats.Truncate(s.Started), spacestats.Truncate(s.Measured)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows[key{s.RunID, s.Account, s.StoreID, s.SpaceID}] = s
	return nil
}

func match(f spacestats.Filter, s spacestats.Stats) bool {
	return (f.Account == "" || f.Account == s.Account) && (f.StoreID == "" || f.StoreID == s.StoreID) &&
		(f.SpaceID == "" || f.SpaceID == s.SpaceID)
}

// newer reports whether a is a later measurement than b.
func newer(a, b spacestats.Stats) bool {
	if !a.Measured.Equal(b.Measured) {
		return a.Measured.After(b.Measured)
	}
	return a.RunID > b.RunID
}

// Latest implements spacestats.Store.
func (m *Store) Latest(ctx context.Context, f spacestats.Filter) ([]spacestats.Stats, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	latest := map[key]spacestats.Stats{}
	for _, s := range m.rows {
		if !match(f, s) {
			continue
		}
		k := key{"", s.Account, s.StoreID, s.SpaceID}
		if cur, ok := latest[k]; !ok || newer(s, cur) {
			latest[k] = s
		}
	}
	out := slices.Collect(maps.Values(latest))
	slices.SortFunc(out, func(a, b spacestats.Stats) int {
		return cmp.Or(cmp.Compare(a.Account, b.Account), cmp.Compare(a.StoreID, b.StoreID), cmp.Compare(a.SpaceID, b.SpaceID))
	})
	return out, nil
}

// History implements spacestats.Store.
func (m *Store) History(ctx context.Context, f spacestats.Filter, since time.Time, limit int) ([]spacestats.Total, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	runs := map[string]*spacestats.Total{}
	for _, s := range m.rows {
		if !match(f, s) {
			continue
		}
		t := runs[s.RunID]
		if t == nil {
			t = &spacestats.Total{RunID: s.RunID, Started: s.Started, Measured: s.Measured}
			runs[s.RunID] = t
		}
		t.Spaces++
		t.Items += s.Items
		t.Bytes += s.Bytes
		if s.Started.Before(t.Started) {
			t.Started = s.Started
		}
		if s.Measured.After(t.Measured) {
			t.Measured = s.Measured
		}
	}
	var out []spacestats.Total
	for _, t := range runs {
		if since.IsZero() || !t.Measured.Before(since) {
			out = append(out, *t)
		}
	}
	slices.SortFunc(out, func(a, b spacestats.Total) int {
		return cmp.Or(b.Measured.Compare(a.Measured), cmp.Compare(b.RunID, a.RunID))
	})
	return out[:min(len(out), spacestats.HistoryLimit(limit))], nil
}
