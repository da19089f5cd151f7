package fleet

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/clock"
)

// Memory is an in-process Registry for unit tests and the embedded dev
// mode.
type Memory struct {
	clk     clock.Clock
	mu      sync.Mutex
	workers map[string]Worker
	pauses  map[string]Pause
}

var _ Registry = (*Memory)(nil)

// NewMemory returns an empty Memory registry on clk (the real clock when
// nil).
func NewMemory(clk clock.Clock) *Memory {
	return &Memory{clk: clock.Or(clk), workers: map[string]Worker{}, pauses: map[string]Pause{}}
}

// normalize gives w the resolution Dynamo stores: times to the
// millisecond in UTC, the expiry rounded up to the second, empty lists and
// maps as nil; and copies what it shares with the caller.
func normalize(w Worker) Worker {
	msUTC := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return time.UnixMilli(t.UnixMilli()).UTC()
	}
	w.Started, w.Heartbeat = msUTC(w.Started), msUTC(w.Heartbeat)
	w.Interval = w.Interval.Truncate(time.Millisecond)
	w.Expires = time.Unix(expirySeconds(w.Expires), 0).UTC()
	w.Queues, w.Pauses = slices.Clone(w.Queues), slices.Clone(w.Pauses)
	if len(w.Queues) == 0 {
		w.Queues = nil
	}
	if len(w.Pauses) == 0 {
		w.Pauses = nil
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

// Put implements Registry.
func (m *Memory) Put(ctx context.Context, w Worker) error {
	if err := w.validate(); err != nil {
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

// Workers implements Registry.
func (m *Memory) Workers(ctx context.Context) ([]Worker, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fleet: list workers: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clk.Now()
	ws := make([]Worker, 0, len(m.workers))
	for _, w := range m.workers {
		if now.Before(w.Expires) {
			ws = append(ws, normalize(w))
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].ID < ws[j].ID })
	return ws, nil
}

// Pause implements Registry.
func (m *Memory) Pause(ctx context.Context, p Pause) error {
	if err := p.validate(); err != nil {
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

// Resume implements Registry.
func (m *Memory) Resume(ctx context.Context, kind PauseKind, name string) (bool, error) {
	p := Pause{Kind: kind, Name: name}
	if err := p.validate(); err != nil {
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

// Pauses implements Registry.
func (m *Memory) Pauses(ctx context.Context) ([]Pause, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fleet: read pauses: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := slices.Collect(maps.Values(m.pauses))
	sortPauses(ps)
	return ps, nil
}
