// Package paging holds what every paged listing of Mill's logs and
// indexes (the audit log, the bit log, the content index, the change log,
// the storage statistics history) shares: the page-size rule, the page
// sizes of the listings of content items, and the page token's encoding
// with its one error, ErrBadToken.
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

// The page sizes of the listings of content items and of their per-item
// rows (the content index, the bit log), which bit reports and fixity
// coverage page through side by side: DefaultItems for a limit ≤ 0, at
// most MaxItems.
const (
	DefaultItems = 1000
	MaxItems     = 10000
)

// Items returns the page size of an item listing for limit (Size with
// DefaultItems and MaxItems).
func Items(limit int) int { return Size(limit, DefaultItems, MaxItems) }
