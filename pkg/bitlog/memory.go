package bitlog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/clock"
)

// Memory is an in-memory Log for tests and the dev mode. Safe for
// concurrent use.
type Memory struct {
	clock   clock.Clock
	mu      sync.Mutex
	rows    map[PageKey]Row
	reports map[[4]string]Report
	runs    map[[4]string]RunSpace
}

var (
	_ Log    = (*Memory)(nil)
	_ Pruner = (*Memory)(nil)
)

// NewMemory returns an empty log using clk for zero times (nil: the system
// clock).
func NewMemory(clk clock.Clock) *Memory {
	return &Memory{clock: clock.Or(clk), rows: map[PageKey]Row{}, reports: map[[4]string]Report{}, runs: map[[4]string]RunSpace{}}
}

// Record implements Log.
func (m *Memory) Record(ctx context.Context, r Row) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.Validate(); err != nil {
		return fmt.Errorf("bitlog: record: %w", err)
	}
	if r.CheckedAt.IsZero() {
		r.CheckedAt = m.clock.Now()
	}
	r.CheckedAt = Truncate(r.CheckedAt)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows[KeyOf(r)] = r
	return nil
}

func (f Filter) match(r Row) bool {
	return (f.RunID == "" || f.RunID == r.RunID) &&
		(f.Account == "" || f.Account == r.Account) &&
		(f.StoreID == "" || f.StoreID == r.StoreID) &&
		(f.SpaceID == "" || f.SpaceID == r.SpaceID) &&
		(f.ContentID == "" || f.ContentID == r.ContentID) &&
		(f.Result == "" || f.Result == r.Result)
}

// Results implements Log.
func (m *Memory) Results(ctx context.Context, f Filter) ([]Row, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	if err := f.Validate(); err != nil {
		return nil, "", fmt.Errorf("bitlog: results: %w", err)
	}
	after, hasAfter, err := DecodeToken(f.After)
	if err != nil {
		return nil, "", fmt.Errorf("bitlog: results: %w", err)
	}
	m.mu.Lock()
	var out []Row
	for k, r := range m.rows {
		if f.match(r) && (!hasAfter || after.Less(k)) {
			out = append(out, r)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Row) int {
		ka, kb := KeyOf(a), KeyOf(b)
		switch {
		case ka.Less(kb):
			return -1
		case kb.Less(ka):
			return 1
		}
		return 0
	})
	limit := PageSize(f.Limit)
	if len(out) <= limit {
		return out, "", nil
	}
	out = out[:limit]
	return out, EncodeToken(KeyOf(out[limit-1])), nil
}

// Count implements Log.
func (m *Memory) Count(ctx context.Context, runID, account, storeID, spaceID string) (Counts, error) {
	if err := ctx.Err(); err != nil {
		return Counts{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var c Counts
	for k, r := range m.rows {
		if k.RunID == runID && k.Account == account && k.StoreID == storeID && k.SpaceID == spaceID {
			c.Add(r.Result)
		}
	}
	return c, nil
}

// PutReport implements Log.
func (m *Memory) PutReport(ctx context.Context, r Report) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.Validate(); err != nil {
		return fmt.Errorf("bitlog: put report: %w", err)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = m.clock.Now()
	}
	r.CreatedAt = Truncate(r.CreatedAt)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reports[[4]string{r.RunID, r.Account, r.StoreID, r.SpaceID}] = r
	return nil
}

// Reports implements Log.
func (m *Memory) Reports(ctx context.Context, f ReportFilter) ([]Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	var out []Report
	for _, r := range m.reports {
		if (f.RunID == "" || f.RunID == r.RunID) && (f.Account == "" || f.Account == r.Account) &&
			(f.StoreID == "" || f.StoreID == r.StoreID) && (f.SpaceID == "" || f.SpaceID == r.SpaceID) {
			out = append(out, r)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Report) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.Account, b.Account),
			cmp.Compare(a.StoreID, b.StoreID), cmp.Compare(a.SpaceID, b.SpaceID))
	})
	if limit := PageSize(f.Limit); len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Months implements Pruner (exact counts).
func (m *Memory) Months(ctx context.Context) ([]MonthInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	n := map[time.Time]int64{}
	for _, r := range m.rows {
		n[Month(r.RunID, r.CheckedAt)]++
	}
	m.mu.Unlock()
	out := make([]MonthInfo, 0, len(n))
	for mo, c := range n {
		out = append(out, MonthInfo{Month: mo, Rows: c})
	}
	slices.SortFunc(out, func(a, b MonthInfo) int { return a.Month.Compare(b.Month) })
	return out, nil
}

// DropMonths implements Pruner.
func (m *Memory) DropMonths(ctx context.Context, before time.Time) ([]MonthInfo, error) {
	months, err := m.Months(ctx)
	if err != nil {
		return nil, err
	}
	var out []MonthInfo
	for _, mo := range months {
		if mo.Month.Before(before) {
			out = append(out, mo)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, r := range m.rows {
		if Month(r.RunID, r.CheckedAt).Before(before) {
			delete(m.rows, k)
		}
	}
	return out, nil
}

// StartSpace implements Runs.
func (m *Memory) StartSpace(ctx context.Context, s RunSpace) error {
	return m.putRun(ctx, s, false)
}

// FinishSpace implements Runs.
func (m *Memory) FinishSpace(ctx context.Context, s RunSpace) error {
	return m.putRun(ctx, s, true)
}

func (m *Memory) putRun(ctx context.Context, s RunSpace, finish bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("bitlog: run space: %w", err)
	}
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [4]string{s.RunID, s.Account, s.StoreID, s.SpaceID}
	rec, ok := m.runs[k]
	if ok && !finish {
		return nil
	}
	if !ok {
		rec = RunSpace{RunID: s.RunID, Account: s.Account, StoreID: s.StoreID, SpaceID: s.SpaceID,
			Started: Truncate(cmp.Or(s.Started, now))}
	}
	if finish {
		rec.Listed, rec.Expected = Truncate(cmp.Or(s.Listed, now)), s.Expected
	}
	m.runs[k] = rec
	return nil
}

// RunSpace implements Runs.
func (m *Memory) RunSpace(ctx context.Context, runID, account, storeID, spaceID string) (RunSpace, error) {
	if err := ctx.Err(); err != nil {
		return RunSpace{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.runs[[4]string{runID, account, storeID, spaceID}]
	if !ok {
		return RunSpace{}, fmt.Errorf("%w: %s:%s/%s/%s", ErrNoRun, runID, account, storeID, spaceID)
	}
	return s, nil
}
