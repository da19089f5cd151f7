package contentindex

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Memory is an Index held in memory, for unit tests and dev mode. Safe for
// concurrent use.
type Memory struct {
	mu   sync.Mutex
	rows map[Item]Entry
}

var _ Index = (*Memory)(nil)

// NewMemory returns an empty in-memory index.
func NewMemory() *Memory { return &Memory{rows: map[Item]Entry{}} }

func clone(e Entry) *Entry {
	e.Properties = maps.Clone(e.Properties)
	if e.Properties == nil {
		e.Properties = map[string]string{}
	}
	if e.Size != nil {
		n := *e.Size
		e.Size = &n
	}
	return &e
}

func sameState(a, b Entry) bool {
	return a.Deleted == b.Deleted && a.Modified.Equal(b.Modified) && a.Checksum == b.Checksum &&
		a.MimeType == b.MimeType && maps.Equal(a.Properties, b.Properties) &&
		((a.Size == nil) == (b.Size == nil)) && (a.Size == nil || *a.Size == *b.Size)
}

// Upsert implements Index.
func (m *Memory) Upsert(ctx context.Context, e Entry) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := Check(e); err != nil {
		return false, fmt.Errorf("contentindex: upsert %s: %w", e.Item, err)
	}
	keepProps := e.Properties == nil
	e = *clone(e)
	e.MissingRun = ""
	e.Modified = Truncate(e.Modified)
	e.Deleted = false
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.rows[e.Item]
	if ok {
		if old.Modified.After(e.Modified) {
			return false, nil
		}
		if e.Checksum == "" {
			e.Checksum = old.Checksum
		}
		if e.MimeType == "" {
			e.MimeType = old.MimeType
		}
		if e.Size == nil {
			e.Size = old.Size
		}
		if keepProps {
			e.Properties = old.Properties
		}
		if sameState(old, e) {
			return false, nil
		}
	}
	m.rows[e.Item] = e
	return true, nil
}

// MarkDeleted implements Index.
func (m *Memory) MarkDeleted(ctx context.Context, item Item, at time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := Check(Entry{Item: item, Modified: at}); err != nil {
		return false, fmt.Errorf("contentindex: mark deleted %s: %w", item, err)
	}
	at = Truncate(at)
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.rows[item]
	if !ok {
		m.rows[item] = Entry{Item: item, Properties: map[string]string{}, Deleted: true, Modified: at}
		return true, nil
	}
	if old.Modified.After(at) || (old.Deleted && old.Modified.Equal(at)) {
		return false, nil
	}
	old.Deleted, old.Modified, old.MissingRun = true, at, ""
	m.rows[item] = old
	return true, nil
}

// MarkSpaceDeleted implements Index.
func (m *Memory) MarkSpaceDeleted(ctx context.Context, account, storeID, spaceID string, at time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if account == "" || storeID == "" || spaceID == "" || at.IsZero() {
		return 0, fmt.Errorf("contentindex: mark space deleted %s/%s/%s: %w", account, storeID, spaceID, ErrInvalid)
	}
	at = Truncate(at)
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for k, r := range m.rows {
		if k.Account == account && k.StoreID == storeID && k.SpaceID == spaceID && !r.Deleted && !r.Modified.After(at) {
			r.Deleted, r.Modified, r.MissingRun = true, at, ""
			m.rows[k] = r
			n++
		}
	}
	return n, nil
}

// Get implements Index.
func (m *Memory) Get(ctx context.Context, item Item) (*Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[item]
	if !ok {
		return nil, fmt.Errorf("contentindex: get %s: %w", item, ErrNotFound)
	}
	return clone(r), nil
}

// List implements Index.
func (m *Memory) List(ctx context.Context, account, storeID, spaceID, after string, limit int) ([]Entry, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	var ids []string
	for k, r := range m.rows {
		if k.Account == account && k.StoreID == storeID && k.SpaceID == spaceID && !r.Deleted && k.ContentID > after {
			ids = append(ids, k.ContentID)
		}
	}
	slices.Sort(ids) // Go compares strings byte-wise
	n := PageSize(limit)
	more := len(ids) > n
	if more {
		ids = ids[:n]
	}
	out := make([]Entry, 0, len(ids))
	for _, id := range ids {
		out = append(out, *clone(m.rows[Item{account, storeID, spaceID, id}]))
	}
	m.mu.Unlock()
	return out, more, nil
}

// SetChecksum implements Index.
func (m *Memory) SetChecksum(ctx context.Context, item Item, checksum string) error {
	return m.edit(ctx, item, "set checksum", func(r *Entry) { r.Checksum = checksum })
}

// SetMissing implements Index.
func (m *Memory) SetMissing(ctx context.Context, item Item, runID string) error {
	return m.edit(ctx, item, "set missing", func(r *Entry) { r.MissingRun = runID })
}

// edit changes the row of item in place; ErrNotFound when there is none.
func (m *Memory) edit(ctx context.Context, item Item, what string, f func(*Entry)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[item]
	if !ok {
		return fmt.Errorf("contentindex: %s %s: %w", what, item, ErrNotFound)
	}
	f(&r)
	m.rows[item] = r
	return nil
}

var _ Pruner = (*Memory)(nil)

// Tombstones implements Pruner.
func (m *Memory) Tombstones(ctx context.Context, before time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, r := range m.rows {
		if r.Deleted && r.Modified.Before(before) {
			n++
		}
	}
	return n, nil
}

// PurgeTombstones implements Pruner.
func (m *Memory) PurgeTombstones(ctx context.Context, before time.Time, limit int) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if limit <= 0 {
		limit = DefaultPurgeBatch
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for k, r := range m.rows {
		if n == int64(limit) {
			break
		}
		if r.Deleted && r.Modified.Before(before) {
			delete(m.rows, k)
			n++
		}
	}
	return n, nil
}
