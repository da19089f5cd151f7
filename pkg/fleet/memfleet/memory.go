package memfleet

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/clock"

	"github.com/millfleet/mill/pkg/fleet"
)

// Registry is an in-process fleet.Registry for unit tests and the embedded dev
// mode.
type Registry struct {
	clk     clock.Clock
	mu      sync.Mutex
	workers map[string]fleet.Worker
	pauses  map[string]fleet.Pause
}

var _ fleet.Registry = (*Registry)(nil)

// New returns an empty in-memory registry on clk (the real clock when
// nil).
func New(clk clock.Clock) *Registry {
	return &Registry{clk: clock.Or(clk), workers: map[string]fleet.Worker{}, pauses: map[string]fleet.Pause{}}
}

// normalize gives w the resolution Dynamo stores: times to the
// millisecond in UTC, the expiry rounded up to the second, empty lists and
// maps as nil; and copies what it shares with the caller.
func normalize(w fleet.Worker) fleet.Worker {
	msUTC := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return time.UnixMilli(t.UnixMilli()).UTC()
	}
	w.Started, w.Heartbeat = msUTC(w.Started), msUTC(w.Heartbeat)
	w.Interval = w.Interval.Truncate(time.Millisecond)
	w.Expires = time.Unix(fleet.ExpirySeconds(w.Expires), 0).UTC()
	w.Queues, w.Pauses = slices.Clone(w.Queues), slices.Clone(w.Pauses)
	if len(w.Queues) == 0 {
		w.Queues = nil
	}
	if len(w.Pauses) == 0 {
		w.Pauses = nil
	}
	if len(w.Outages) == 0 {
		w.Outages = nil
	} else {
		os := make([]fleet.Outage, len(w.Outages))
		for i, o := range w.Outages {
			o.Since, o.Types = msUTC(o.Since), slices.Clone(o.Types)
			os[i] = o
		}
		w.Outages = os
	}
	w.Running, w.Counts = maps.Clone(w.Running), maps.Clone(w.Counts)
	if len(w.Running) == 0 {
		w.Running = nil
	}
	if len(w.Counts) == 0 {
		w.Counts = nil
	}
	return w
}

// Put implements fleet.Registry.
func (m *Registry) Put(ctx context.Context, w fleet.Worker) error {
	if err := w.Validate(); err != nil {
		return fmt.Errorf("fleet: put %q: %w", w.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fleet: put %q: %w", w.ID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.workers[w.ID] = normalize(w)
	return nil
}

// Workers implements fleet.Registry.
func (m *Registry) Workers(ctx context.Context) ([]fleet.Worker, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fleet: list workers: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clk.Now()
	ws := make([]fleet.Worker, 0, len(m.workers))
	for _, w := range m.workers {
		if now.Before(w.Expires) {
			ws = append(ws, normalize(w))
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].ID < ws[j].ID })
	return ws, nil
}

// Pause implements fleet.Registry.
func (m *Registry) Pause(ctx context.Context, p fleet.Pause) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("fleet: pause: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fleet: pause %s: %w", p.Key(), err)
	}
	if !p.At.IsZero() {
		p.At = time.UnixMilli(p.At.UnixMilli()).UTC()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pauses[p.Key()] = p
	return nil
}

// Resume implements fleet.Registry.
func (m *Registry) Resume(ctx context.Context, kind fleet.PauseKind, name string) (bool, error) {
	p := fleet.Pause{Kind: kind, Name: name}
	if err := p.Validate(); err != nil {
		return false, fmt.Errorf("fleet: resume: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("fleet: resume %s: %w", p.Key(), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.pauses[p.Key()]
	delete(m.pauses, p.Key())
	return ok, nil
}

// Pauses implements fleet.Registry.
func (m *Registry) Pauses(ctx context.Context) ([]fleet.Pause, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fleet: read pauses: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := slices.Collect(maps.Values(m.pauses))
	fleet.SortPauses(ps)
	return ps, nil
}
