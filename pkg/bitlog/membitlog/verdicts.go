package membitlog

import (
	"context"
	"slices"

	"github.com/millfleet/mill/pkg/bitlog"
)

// spaceVerdicts is the latest fresh verdict of each copy of one space, and
// the copies' content IDs in byte-wise order (for pages).
type spaceVerdicts struct {
	ids []string
	by  map[string]bitlog.Verdict
}

// putVerdict records v unless the copy has a verdict checked later; the
// caller holds m.mu.
func (m *Log) putVerdict(account, storeID, spaceID string, v bitlog.Verdict) {
	k := [3]string{account, storeID, spaceID}
	sv := m.verdicts[k]
	if sv == nil {
		sv = &spaceVerdicts{by: map[string]bitlog.Verdict{}}
		m.verdicts[k] = sv
	}
	old, ok := sv.by[v.ContentID]
	if ok && v.CheckedAt.Before(old.CheckedAt) {
		return
	}
	if !ok {
		i, _ := slices.BinarySearch(sv.ids, v.ContentID)
		sv.ids = slices.Insert(sv.ids, i, v.ContentID)
	}
	sv.by[v.ContentID] = v
}

// Verdicts implements bitlog.Verdicts.
func (m *Log) Verdicts(ctx context.Context, account, storeID, spaceID, after string, limit int) ([]bitlog.Verdict, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	limit = bitlog.PageSize(limit)
	m.mu.Lock()
	defer m.mu.Unlock()
	sv := m.verdicts[[3]string{account, storeID, spaceID}]
	if sv == nil {
		return nil, false, nil
	}
	i, found := slices.BinarySearch(sv.ids, after)
	if found {
		i++
	}
	ids := sv.ids[i:]
	more := len(ids) > limit
	if more {
		ids = ids[:limit]
	}
	out := make([]bitlog.Verdict, len(ids))
	for j, id := range ids {
		out[j] = sv.by[id]
	}
	return out, more, nil
}
