// Package paging holds the page-size rule every paged listing of Mill's
// logs and indexes follows (the audit log, the bit log, the content index,
// the change log, the storage statistics history).
package paging

// Size returns the page size for a requested limit: def when limit ≤ 0,
// max when it is above max, else limit itself. A limit above max is
// served in pages of max, not refused: callers page on.
func Size(limit, def, max int) int {
	switch {
	case limit <= 0:
		return def
	case limit > max:
		return max
	}
	return limit
}
