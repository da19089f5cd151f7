package memauditlog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/millfleet/mill/internal/base/paging"
	"github.com/millfleet/mill/pkg/auditlog"
)

// Log is an auditlog.Log held in memory, for unit tests and dev mode. It stores
// exactly what the DynamoDB log stores (same keys, same size limit). The
// zero value is not usable; call New. Safe for concurrent use.
type Log struct {
	mu    sync.Mutex
	items map[[2]string]memItem // (pk, sk) → item
}

type memItem struct {
	pk, sk, gpk, gsk string
	attrs            map[string]string
}

var _ auditlog.Log = (*Log)(nil)

// New returns an empty in-memory log.
func New() *Log { return &Log{items: map[[2]string]memItem{}} }

// Len returns the number of stored entries.
func (m *Log) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.items)
}

// Put implements auditlog.Log.
func (m *Log) Put(ctx context.Context, e auditlog.Entry) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	attrs, err := auditlog.CheckEntry(e)
	if err != nil {
		return false, fmt.Errorf("auditlog: put %s: %w", auditlog.ItemKey(e.Account, e.StoreID, e.SpaceID, e.ContentID), err)
	}
	it := memItem{attrs: map[string]string{}}
	for _, a := range attrs {
		it.attrs[a.Name] = a.Value
	}
	it.pk, it.sk, it.gpk, it.gsk = it.attrs[auditlog.AttrPK], it.attrs[auditlog.AttrSK], it.attrs[auditlog.AttrGSI1PK], it.attrs[auditlog.AttrGSI1SK]
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{it.pk, it.sk}
	if _, ok := m.items[k]; ok {
		return false, nil
	}
	m.items[k] = it
	return true, nil
}

func (it memItem) entry() (auditlog.Entry, error) {
	return auditlog.EntryFromAttrs(func(name string) (string, bool) { v, ok := it.attrs[name]; return v, ok })
}

// Latest implements auditlog.Log.
func (m *Log) Latest(ctx context.Context, account, storeID, spaceID, contentID string) (*auditlog.Entry, error) {
	return m.latest(ctx, auditlog.ItemKey(account, storeID, spaceID, contentID), func(auditlog.Entry) bool { return true })
}

// LatestChecksum implements auditlog.Log.
func (m *Log) LatestChecksum(ctx context.Context, account, storeID, spaceID, contentID string) (*auditlog.Entry, error) {
	return m.latest(ctx, auditlog.ItemKey(account, storeID, spaceID, contentID), auditlog.SpeaksOfBytes)
}

// latest returns the newest entry of item pk that keep accepts.
func (m *Log) latest(ctx context.Context, pk string, keep func(auditlog.Entry) bool) (*auditlog.Entry, error) {
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
	var best *auditlog.Entry
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
		return nil, fmt.Errorf("auditlog: latest %s: %w", pk, auditlog.ErrNotFound)
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

// SpaceHistory implements auditlog.Log.
func (m *Log) SpaceHistory(ctx context.Context, account, storeID, spaceID, pageToken string, limit int) ([]auditlog.Entry, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	gpk := auditlog.SpaceKey(account, storeID, spaceID)
	var after *memToken
	if pageToken != "" {
		var t memToken
		if err := paging.DecodeToken(pageToken, &t); err != nil {
			return nil, "", fmt.Errorf("auditlog: space history %s: %w", gpk, err)
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
	n := auditlog.PageSize(limit)
	next := ""
	if len(all) > n {
		all = all[:n]
		last := all[n-1]
		next, _ = paging.EncodeToken(memToken{GSK: last.gsk, PK: last.pk, SK: last.sk}) // strings always encode
	}
	out := make([]auditlog.Entry, 0, len(all))
	for _, it := range all {
		e, err := it.entry()
		if err != nil {
			return nil, "", fmt.Errorf("auditlog: space history %s: %w", gpk, err)
		}
		out = append(out, e)
	}
	return out, next, nil
}

// Delete implements auditlog.Log.
func (m *Log) Delete(ctx context.Context, keys ...auditlog.Key) error {
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

var _ auditlog.Between = (*Log)(nil)

// Between implements auditlog.Between.
func (m *Log) Between(ctx context.Context, since, until time.Time, pageToken string, limit int) ([]auditlog.Entry, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	apk, ask, hasAfter, err := auditlog.DecodeBetweenToken(pageToken)
	if err != nil {
		return nil, "", fmt.Errorf("auditlog: between: %w", err)
	}
	from, to := since.UnixMilli(), until.UnixMilli()
	m.mu.Lock()
	var all []memItem
	for _, it := range m.items {
		ms, err := strconv.ParseInt(it.attrs[auditlog.AttrTime], 10, 64)
		if err != nil || ms < from || ms >= to || (hasAfter && cmp.Or(cmp.Compare(it.pk, apk), cmp.Compare(it.sk, ask)) <= 0) {
			continue
		}
		all = append(all, it)
	}
	m.mu.Unlock()
	slices.SortFunc(all, func(a, b memItem) int { return cmp.Or(cmp.Compare(a.pk, b.pk), cmp.Compare(a.sk, b.sk)) })
	n := auditlog.PageSize(limit)
	next := ""
	if len(all) > n {
		all = all[:n]
		next = auditlog.BetweenToken(all[n-1].pk, all[n-1].sk)
	}
	out := make([]auditlog.Entry, 0, len(all))
	for _, it := range all {
		e, err := it.entry()
		if err != nil {
			return nil, "", fmt.Errorf("auditlog: between: %w", err)
		}
		out = append(out, e)
	}
	return out, next, nil
}
