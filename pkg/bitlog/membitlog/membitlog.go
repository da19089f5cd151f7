// Package membitlog is the bit log (bitlog.Log, bitlog.Runs, bitlog.Pruner)
// in memory, for unit tests and the dev mode. It passes bitlogtest.Run.
package membitlog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/clock"
)

// Log is an in-memory bitlog.Log for tests and the dev mode. Safe for
// concurrent use.
type Log struct {
	clock   clock.Clock
	mu      sync.Mutex
	rows    map[bitlog.PageKey]bitlog.Row
	reports map[[4]string]bitlog.Report
	runs    map[[4]string]bitlog.RunSpace
	atRest  map[bitlog.AtRestKey]*atRest
	// verdicts holds the latest fresh verdict of each copy, by space
	// (account, store, space).
	verdicts map[[3]string]*spaceVerdicts
}

var (
	_ bitlog.Log    = (*Log)(nil)
	_ bitlog.Pruner = (*Log)(nil)
)

// New returns an empty log using clk for zero times (nil: the system
// clock).
func New(clk clock.Clock) *Log {
	return &Log{clock: clock.Or(clk), rows: map[bitlog.PageKey]bitlog.Row{}, reports: map[[4]string]bitlog.Report{}, runs: map[[4]string]bitlog.RunSpace{},
		verdicts: map[[3]string]*spaceVerdicts{}}
}

// Record implements bitlog.Log.
func (m *Log) Record(ctx context.Context, r bitlog.Row) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.Validate(); err != nil {
		return fmt.Errorf("bitlog: record: %w", err)
	}
	if r.CheckedAt.IsZero() {
		r.CheckedAt = m.clock.Now()
	}
	r.CheckedAt = bitlog.Truncate(r.CheckedAt)
	m.mu.Lock()
	defer m.mu.Unlock()
	k := bitlog.KeyOf(r)
	if old, ok := m.rows[k]; !ok || r.Replaces(old) {
		r.Supersedes = 0 // not stored
		m.rows[k] = r
	}
	if v, ok := r.Verdict(); ok {
		m.putVerdict(r.Account, r.StoreID, r.SpaceID, v)
	}
	return nil
}

func match(f bitlog.Filter, r bitlog.Row) bool {
	return (f.RunID == "" || f.RunID == r.RunID) &&
		(f.Account == "" || f.Account == r.Account) &&
		(f.StoreID == "" || f.StoreID == r.StoreID) &&
		(f.SpaceID == "" || f.SpaceID == r.SpaceID) &&
		(f.ContentID == "" || f.ContentID == r.ContentID) &&
		(f.Result == "" || f.Result == r.Result)
}

// Results implements bitlog.Log.
func (m *Log) Results(ctx context.Context, f bitlog.Filter) ([]bitlog.Row, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	if err := f.Validate(); err != nil {
		return nil, "", fmt.Errorf("bitlog: results: %w", err)
	}
	after, hasAfter, err := bitlog.DecodeToken(f.After)
	if err != nil {
		return nil, "", fmt.Errorf("bitlog: results: %w", err)
	}
	m.mu.Lock()
	var out []bitlog.Row
	for k, r := range m.rows {
		if match(f, r) && (!hasAfter || after.Less(k)) {
			out = append(out, r)
		}
	}
	m.mu.Unlock()
	out, next := sortPage(out, func(a, b bitlog.Row) bool { return bitlog.KeyOf(a).Less(bitlog.KeyOf(b)) }, f.Limit,
		func(r bitlog.Row) string { return bitlog.EncodeToken(bitlog.KeyOf(r)) })
	return out, next, nil
}

// sortPage sorts rows by less and keeps the first page of limit (clamped
// by bitlog.PageSize), with the token of the next page made from its last
// row ("" when no more follow).
func sortPage(rows []bitlog.Row, less func(a, b bitlog.Row) bool, limit int, token func(bitlog.Row) string) ([]bitlog.Row, string) {
	slices.SortFunc(rows, func(a, b bitlog.Row) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
	limit = bitlog.PageSize(limit)
	if len(rows) <= limit {
		return rows, ""
	}
	rows = rows[:limit]
	return rows, token(rows[limit-1])
}

// Count implements bitlog.Log.
func (m *Log) Count(ctx context.Context, runID, account, storeID, spaceID string) (bitlog.Counts, error) {
	if err := ctx.Err(); err != nil {
		return bitlog.Counts{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var c bitlog.Counts
	for k, r := range m.rows {
		if k.RunID == runID && k.Account == account && k.StoreID == storeID && k.SpaceID == spaceID {
			c.Add(r.Result)
		}
	}
	return c, nil
}

// PutReport implements bitlog.Log.
func (m *Log) PutReport(ctx context.Context, r bitlog.Report) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.Validate(); err != nil {
		return fmt.Errorf("bitlog: put report: %w", err)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = m.clock.Now()
	}
	r.CreatedAt = bitlog.Truncate(r.CreatedAt)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reports[[4]string{r.RunID, r.Account, r.StoreID, r.SpaceID}] = r
	return nil
}

// Reports implements bitlog.Log.
func (m *Log) Reports(ctx context.Context, f bitlog.ReportFilter) ([]bitlog.Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	var out []bitlog.Report
	for _, r := range m.reports {
		if (f.RunID == "" || f.RunID == r.RunID) && (f.Account == "" || f.Account == r.Account) &&
			(f.StoreID == "" || f.StoreID == r.StoreID) && (f.SpaceID == "" || f.SpaceID == r.SpaceID) {
			out = append(out, r)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b bitlog.Report) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.Account, b.Account),
			cmp.Compare(a.StoreID, b.StoreID), cmp.Compare(a.SpaceID, b.SpaceID))
	})
	if limit := bitlog.PageSize(f.Limit); len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Months implements bitlog.Pruner (exact counts).
func (m *Log) Months(ctx context.Context) ([]bitlog.MonthInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	n := map[time.Time]int64{}
	for _, r := range m.rows {
		n[bitlog.Month(r.RunID, r.CheckedAt)]++
	}
	m.mu.Unlock()
	out := make([]bitlog.MonthInfo, 0, len(n))
	for mo, c := range n {
		out = append(out, bitlog.MonthInfo{Month: mo, Rows: c})
	}
	slices.SortFunc(out, func(a, b bitlog.MonthInfo) int { return a.Month.Compare(b.Month) })
	return out, nil
}

// DropMonths implements bitlog.Pruner.
func (m *Log) DropMonths(ctx context.Context, before time.Time) ([]bitlog.MonthInfo, error) {
	months, err := m.Months(ctx)
	if err != nil {
		return nil, err
	}
	var out []bitlog.MonthInfo
	for _, mo := range months {
		if mo.Month.Before(before) {
			out = append(out, mo)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, r := range m.rows {
		if bitlog.Month(r.RunID, r.CheckedAt).Before(before) {
			delete(m.rows, k)
		}
	}
	for k := range m.atRest {
		if mo, ok := bitlog.RunMonth(k.RunID); ok && mo.Before(before) {
			delete(m.atRest, k)
		}
	}
	return out, nil
}

// StartSpace implements bitlog.Runs.
func (m *Log) StartSpace(ctx context.Context, s bitlog.RunSpace) error {
	return m.putRun(ctx, s, false)
}

// FinishSpace implements bitlog.Runs.
func (m *Log) FinishSpace(ctx context.Context, s bitlog.RunSpace) error {
	return m.putRun(ctx, s, true)
}

func (m *Log) putRun(ctx context.Context, s bitlog.RunSpace, finish bool) error {
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
		rec = bitlog.RunSpace{RunID: s.RunID, Account: s.Account, StoreID: s.StoreID, SpaceID: s.SpaceID,
			Started: bitlog.Truncate(cmp.Or(s.Started, now))}
	}
	if finish {
		rec.Listed, rec.Expected = bitlog.Truncate(cmp.Or(s.Listed, now)), s.Expected
	}
	m.runs[k] = rec
	return nil
}

// RunSpace implements bitlog.Runs.
func (m *Log) RunSpace(ctx context.Context, runID, account, storeID, spaceID string) (bitlog.RunSpace, error) {
	if err := ctx.Err(); err != nil {
		return bitlog.RunSpace{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.runs[[4]string{runID, account, storeID, spaceID}]
	if !ok {
		return bitlog.RunSpace{}, fmt.Errorf("%w: %s:%s/%s/%s", bitlog.ErrNoRun, runID, account, storeID, spaceID)
	}
	return s, nil
}

var _ bitlog.Checked = (*Log)(nil)

// Checked implements bitlog.Checked.
func (m *Log) Checked(ctx context.Context, since, until time.Time, after string, limit int) ([]bitlog.Row, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	from, hasFrom, err := bitlog.DecodeCheckedToken(after)
	if err != nil {
		return nil, "", fmt.Errorf("bitlog: checked: %w", err)
	}
	since, until = bitlog.Truncate(since), bitlog.Truncate(until)
	m.mu.Lock()
	var out []bitlog.Row
	for _, r := range m.rows {
		if r.CheckedAt.Before(since) || !r.CheckedAt.Before(until) || (hasFrom && !from.Less(bitlog.CheckedKeyOf(r))) {
			continue
		}
		out = append(out, r)
	}
	m.mu.Unlock()
	out, next := sortPage(out, func(a, b bitlog.Row) bool { return bitlog.CheckedKeyOf(a).Less(bitlog.CheckedKeyOf(b)) }, limit,
		func(r bitlog.Row) string { return bitlog.CheckedToken(bitlog.CheckedKeyOf(r)) })
	return out, next, nil
}
