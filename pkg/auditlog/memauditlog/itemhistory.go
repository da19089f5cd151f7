package memauditlog

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/millfleet/mill/pkg/auditlog"
)

var _ auditlog.ItemHistory = (*Log)(nil)

// ItemHistory implements auditlog.ItemHistory.
func (m *Log) ItemHistory(ctx context.Context, account, storeID, spaceID, contentID, pageToken string, limit int) ([]auditlog.Entry, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	pk := auditlog.ItemKey(account, storeID, spaceID, contentID)
	after, hasAfter, err := auditlog.DecodeItemHistoryToken(pageToken, pk)
	if err != nil {
		return nil, "", fmt.Errorf("auditlog: item history %s: %w", pk, err)
	}
	m.mu.Lock()
	var all []memItem
	for _, it := range m.items {
		if it.pk == pk && (!hasAfter || it.sk < after) {
			all = append(all, it)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(all, func(a, b memItem) int { return cmp.Compare(b.sk, a.sk) })
	n := auditlog.PageSize(limit)
	next := ""
	if len(all) > n {
		all = all[:n]
		next = auditlog.ItemHistoryToken(pk, all[n-1].sk)
	}
	out := make([]auditlog.Entry, 0, len(all))
	for _, it := range all {
		e, err := it.entry()
		if err != nil {
			return nil, "", fmt.Errorf("auditlog: item history %s: %w", pk, err)
		}
		out = append(out, e)
	}
	return out, next, nil
}
