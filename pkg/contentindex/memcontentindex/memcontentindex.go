// Package memcontentindex is the content index (contentindex.Index and
// contentindex.Pruner) in memory, for unit tests and the dev mode. It passes
// contentindextest.Run.
package memcontentindex

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/contentindex"
)

// Index is a contentindex.Index held in memory, for unit tests and dev mode. Safe for
// concurrent use.
type Index struct {
	mu   sync.Mutex
	rows map[contentindex.Item]contentindex.Entry
}

var _ contentindex.Index = (*Index)(nil)

// New returns an empty in-memory index.
func New() *Index { return &Index{rows: map[contentindex.Item]contentindex.Entry{}} }

func clone(e contentindex.Entry) *contentindex.Entry {
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

func sameState(a, b contentindex.Entry) bool {
	return a.Deleted == b.Deleted && a.Modified.Equal(b.Modified) && a.Checksum == b.Checksum &&
		a.MimeType == b.MimeType && maps.Equal(a.Properties, b.Properties) &&
		((a.Size == nil) == (b.Size == nil)) && (a.Size == nil || *a.Size == *b.Size)
}

// Upsert implements contentindex.Index.
func (m *Index) Upsert(ctx context.Context, e contentindex.Entry) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := contentindex.Check(e); err != nil {
		return false, fmt.Errorf("contentindex: upsert %s: %w", e.Item, err)
	}
	keepProps := e.Properties == nil
	e = *clone(e)
	e.MissingRun = ""
	e.Modified = contentindex.Truncate(e.Modified)
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

// MarkDeleted implements contentindex.Index.
func (m *Index) MarkDeleted(ctx context.Context, item contentindex.Item, at time.Time) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := contentindex.Check(contentindex.Entry{Item: item, Modified: at}); err != nil {
		return false, fmt.Errorf("contentindex: mark deleted %s: %w", item, err)
	}
	at = contentindex.Truncate(at)
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.rows[item]
	if !ok {
		m.rows[item] = contentindex.Entry{Item: item, Properties: map[string]string{}, Deleted: true, Modified: at}
		return true, nil
	}
	if old.Modified.After(at) || (old.Deleted && old.Modified.Equal(at)) {
		return false, nil
	}
	old.Deleted, old.Modified, old.MissingRun = true, at, ""
	m.rows[item] = old
	return true, nil
}

// MarkSpaceDeleted implements contentindex.Index.
func (m *Index) MarkSpaceDeleted(ctx context.Context, account, storeID, spaceID string, at time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if account == "" || storeID == "" || spaceID == "" || at.IsZero() {
		return 0, fmt.Errorf("contentindex: mark space deleted %s/%s/%s: %w", account, storeID, spaceID, contentindex.ErrInvalid)
	}
	at = contentindex.Truncate(at)
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

// Get implements contentindex.Index.
func (m *Index) Get(ctx context.Context, item contentindex.Item) (*contentindex.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[item]
	if !ok {
		return nil, fmt.Errorf("contentindex: get %s: %w", item, contentindex.ErrNotFound)
	}
	return clone(r), nil
}

// List implements contentindex.Index.
func (m *Index) List(ctx context.Context, account, storeID, spaceID, after string, limit int) ([]contentindex.Entry, bool, error) {
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
	n := contentindex.PageSize(limit)
	more := len(ids) > n
	if more {
		ids = ids[:n]
	}
	out := make([]contentindex.Entry, 0, len(ids))
	for _, id := range ids {
		out = append(out, *clone(m.rows[contentindex.Item{Account: account, StoreID: storeID, SpaceID: spaceID, ContentID: id}]))
	}
	m.mu.Unlock()
	return out, more, nil
}

var _ contentindex.Searcher = (*Index)(nil)

// Search implements contentindex.Searcher.
func (m *Index) Search(ctx context.Context, q contentindex.Query) ([]contentindex.Entry, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if err := q.Check(); err != nil {
		return nil, false, fmt.Errorf("contentindex: search %s/%s %q: %w", q.Account, q.SpaceID, q.Prefix, err)
	}
	after := func(k contentindex.Item) bool {
		return q.After.IsZero() || k.ContentID > q.After.ContentID || (k.ContentID == q.After.ContentID && k.StoreID > q.After.StoreID)
	}
	m.mu.Lock()
	var out []contentindex.Entry
	for k, r := range m.rows {
		if k.Account == q.Account && k.SpaceID == q.SpaceID && strings.HasPrefix(k.ContentID, q.Prefix) && after(k) {
			out = append(out, *clone(r))
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b contentindex.Entry) int {
		return cmp.Or(strings.Compare(a.ContentID, b.ContentID), strings.Compare(a.StoreID, b.StoreID))
	})
	n := contentindex.PageSize(q.Limit)
	more := len(out) > n
	if more {
		out = out[:n]
	}
	return out, more, nil
}

// SetChecksum implements contentindex.Index.
func (m *Index) SetChecksum(ctx context.Context, item contentindex.Item, checksum string) error {
	return m.edit(ctx, item, "set checksum", func(r *contentindex.Entry) { r.Checksum = checksum })
}

// SetMissing implements contentindex.Index.
func (m *Index) SetMissing(ctx context.Context, item contentindex.Item, runID string) error {
	return m.edit(ctx, item, "set missing", func(r *contentindex.Entry) { r.MissingRun = runID })
}

// edit changes the row of item in place; ErrNotFound when there is none.
func (m *Index) edit(ctx context.Context, item contentindex.Item, what string, f func(*contentindex.Entry)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[item]
	if !ok {
		return fmt.Errorf("contentindex: %s %s: %w", what, item, contentindex.ErrNotFound)
	}
	f(&r)
	m.rows[item] = r
	return nil
}

var _ contentindex.Pruner = (*Index)(nil)

// Tombstones implements contentindex.Pruner.
func (m *Index) Tombstones(ctx context.Context, before time.Time) (int64, error) {
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

// PurgeTombstones implements contentindex.Pruner.
func (m *Index) PurgeTombstones(ctx context.Context, before time.Time, limit int) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if limit <= 0 {
		limit = contentindex.DefaultPurgeBatch
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
