package spacestats

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/clock"
)

// Memory is an in-memory Store for tests and the dev mode.
type Memory struct {
	clk  clock.Clock
	mu   sync.Mutex
	rows map[key]Stats
}

type key struct{ run, account, store, space string }

var _ Store = (*Memory)(nil)

// NewMemory returns an empty store on clk (nil: the system clock).
func NewMemory(clk clock.Clock) *Memory {
	return &Memory{clk: clock.Or(clk), rows: map[key]Stats{}}
}

// Put implements Store.
func (m *Memory) Put(ctx context.Context, s Stats) error {
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
	s.Started, s.Measured = Truncate(s.Started), Truncate(s.Measured)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows[key{s.RunID, s.Account, s.StoreID, s.SpaceID}] = s
	return nil
}

func (f Filter) match(s Stats) bool {
	return (f.Account == "" || f.Account == s.Account) && (f.StoreID == "" || f.StoreID == s.StoreID) &&
		(f.SpaceID == "" || f.SpaceID == s.SpaceID)
}

// newer reports whether a is a later measurement than b.
func newer(a, b Stats) bool {
	if !a.Measured.Equal(b.Measured) {
		return a.Measured.After(b.Measured)
	}
	return a.RunID > b.RunID
}

// Latest implements Store.
func (m *Memory) Latest(ctx context.Context, f Filter) ([]Stats, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	latest := map[key]Stats{}
	for _, s := range m.rows {
		if !f.match(s) {
			continue
		}
		k := key{"", s.Account, s.StoreID, s.SpaceID}
		if cur, ok := latest[k]; !ok || newer(s, cur) {
			latest[k] = s
		}
	}
	out := slices.Collect(maps.Values(latest))
	slices.SortFunc(out, func(a, b Stats) int {
		return cmp.Or(cmp.Compare(a.Account, b.Account), cmp.Compare(a.StoreID, b.StoreID), cmp.Compare(a.SpaceID, b.SpaceID))
	})
	return out, nil
}

// History implements Store.
func (m *Memory) History(ctx context.Context, f Filter, since time.Time, limit int) ([]Total, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	runs := map[string]*Total{}
	for _, s := range m.rows {
		if !f.match(s) {
			continue
		}
		t := runs[s.RunID]
		if t == nil {
			t = &Total{RunID: s.RunID, Started: s.Started, Measured: s.Measured}
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
	var out []Total
	for _, t := range runs {
		if since.IsZero() || !t.Measured.Before(since) {
			out = append(out, *t)
		}
	}
	slices.SortFunc(out, func(a, b Total) int {
		return cmp.Or(b.Measured.Compare(a.Measured), cmp.Compare(b.RunID, a.RunID))
	})
	return out[:min(len(out), HistoryLimit(limit))], nil
}
