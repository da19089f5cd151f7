package auditlog

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// Memory is a Log held in memory, for unit tests and dev mode. It stores
// exactly what the DynamoDB log stores (same keys, same size limit). The
// zero value is not usable; call NewMemory. Safe for concurrent use.
type Memory struct {
	mu    sync.Mutex
	items map[[2]string]memItem // (pk, sk) → item
}

type memItem struct {
	pk, sk, gpk, gsk string
	attrs            map[string]string
}

var _ Log = (*Memory)(nil)

// NewMemory returns an empty in-memory log.
func NewMemory() *Memory { return &Memory{items: map[[2]string]memItem{}} }

// Len returns the number of stored entries.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.items)
}

// Put implements Log.
func (m *Memory) Put(ctx context.Context, e Entry) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	attrs, err := checkEntry(e)
	if err != nil {
		return false, fmt.Errorf("auditlog: put %s: %w", ItemKey(e.Account, e.StoreID, e.SpaceID, e.ContentID), err)
	}
	it := memItem{attrs: map[string]string{}}
	for _, a := range attrs {
		it.attrs[a.name] = a.value
	}
	it.pk, it.sk, it.gpk, it.gsk = it.attrs[AttrPK], it.attrs[AttrSK], it.attrs[AttrGSI1PK], it.attrs[AttrGSI1SK]
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{it.pk, it.sk}
	if _, ok := m.items[k]; ok {
		return false, nil
	}
	m.items[k] = it
	return true, nil
}

func (it memItem) entry() (Entry, error) {
	return entryFromAttrs(func(name string) (string, bool) { v, ok := it.attrs[name]; return v, ok })
}

// Latest implements Log.
func (m *Memory) Latest(ctx context.Context, account, storeID, spaceID, contentID string) (*Entry, error) {
	return m.latest(ctx, ItemKey(account, storeID, spaceID, contentID), func(Entry) bool { return true })
}

// LatestChecksum implements Log.
func (m *Memory) LatestChecksum(ctx context.Context, account, storeID, spaceID, contentID string) (*Entry, error) {
	return m.latest(ctx, ItemKey(account, storeID, spaceID, contentID), SpeaksOfBytes)
}

// latest returns the newest entry of item pk that keep accepts.
func (m *Memory) latest(ctx context.Context, pk string, keep func(Entry) bool) (*Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	var items []memItem
	for _, it := range m.items {
		if it.pk == pk {
			items = append(items, it)
		}
	}
	m.mu.Unlock()
	var best *Entry
	bestSK := ""
	for _, it := range items {
		if best != nil && it.sk <= bestSK {
			continue
		}
		e, err := it.entry()
		if err != nil {
			return nil, fmt.Errorf("auditlog: latest %s: %w", pk, err)
		}
		if keep(e) {
			best, bestSK = &e, it.sk
		}
	}
	if best == nil {
		return nil, fmt.Errorf("auditlog: latest %s: %w", pk, ErrNotFound)
	}
	return best, nil
}

// memToken is the position after which the next page starts.
type memToken struct {
	GSK, PK, SK string
}

func (t memToken) cmp(it memItem) int {
	return cmp.Or(cmp.Compare(it.gsk, t.GSK), cmp.Compare(it.pk, t.PK), cmp.Compare(it.sk, t.SK))
}

// SpaceHistory implements Log.
func (m *Memory) SpaceHistory(ctx context.Context, account, storeID, spaceID, pageToken string, limit int) ([]Entry, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	gpk := SpaceKey(account, storeID, spaceID)
	var after *memToken
	if pageToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(pageToken)
		var t memToken
		if err == nil {
			err = json.Unmarshal(b, &t)
		}
		if err != nil {
			return nil, "", fmt.Errorf("auditlog: space history %s: %w", gpk, ErrBadPageToken)
		}
		after = &t
	}
	m.mu.Lock()
	var all []memItem
	for _, it := range m.items {
		if it.gpk == gpk && (after == nil || after.cmp(it) > 0) {
			all = append(all, it)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(all, func(a, b memItem) int {
		return cmp.Or(cmp.Compare(a.gsk, b.gsk), cmp.Compare(a.pk, b.pk), cmp.Compare(a.sk, b.sk))
	})
	n := pageSize(limit)
	next := ""
	if len(all) > n {
		all = all[:n]
		last := all[n-1]
		b, _ := json.Marshal(memToken{GSK: last.gsk, PK: last.pk, SK: last.sk})
		next = base64.RawURLEncoding.EncodeToString(b)
	}
	out := make([]Entry, 0, len(all))
	for _, it := range all {
		e, err := it.entry()
		if err != nil {
			return nil, "", fmt.Errorf("auditlog: space history %s: %w", gpk, err)
		}
		out = append(out, e)
	}
	return out, next, nil
}

// Delete implements Log.
func (m *Memory) Delete(ctx context.Context, keys ...Key) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		sk, err := k.SK()
		if err != nil {
			return fmt.Errorf("auditlog: delete %s: %w", k.PK(), err)
		}
		delete(m.items, [2]string{k.PK(), sk})
	}
	return nil
}
