package contentindex

import (
	"context"
	"errors"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/millfleet/mill/internal/base/paging"
)

// Errors of every implementation (test with errors.Is).
var (
	// ErrNotFound: the item has no row.
	ErrNotFound = errors.New("contentindex: not found")
	// ErrInvalid: an item lacks account, store, space or content ID, or an
	// event lacks its time.
	ErrInvalid = errors.New("contentindex: invalid")
)

// Item names one content item.
type Item struct {
	Account, StoreID, SpaceID, ContentID string
}

func (i Item) String() string {
	return i.Account + "/" + i.StoreID + "/" + i.SpaceID + "/" + i.ContentID
}

func (i Item) validate() error {
	if i.Account == "" || i.StoreID == "" || i.SpaceID == "" || i.ContentID == "" {
		return errors.Join(ErrInvalid, errors.New("item needs account, store, space and content IDs"))
	}
	return nil
}

// Entry is one row.
type Entry struct {
	Item
	// Checksum is the item's MD5 (lower-case hex); "" when unknown.
	Checksum string
	// Size in bytes; nil when unknown.
	Size *int64
	// MimeType; "" when unknown.
	MimeType string
	// Properties are the item's user properties. Get and List return a
	// non-nil map.
	Properties map[string]string
	// Deleted: the item was deleted (the row is a tombstone).
	Deleted bool
	// Modified is the time of the event that produced this state
	// (microsecond precision, UTC).
	Modified time.Time
	// MissingRun is the bit-integrity run whose report first found the
	// item missing from storage ("" when it was not, or was found again
	// since): the next run's report reports and repairs an item still
	// missing (SetMissing). Upsert ignores it.
	MissingRun string
}

// Index is the content index.
//
// Contract (every implementation passes contentindextest.Run):
//
//   - Upsert records a write event at e.Modified: the row becomes live
//     (e.Deleted is ignored) with e's values, except that an empty
//     Checksum or MimeType, a nil Size and nil Properties keep the row's
//     current values (a SET_CONTENT_PROPERTIES event need not repeat the
//     checksum). applied reports whether the row changed: false when the
//     row's Modified is newer than e.Modified, and false when the event
//     would change nothing (a redelivery).
//   - MarkDeleted records a delete event at `at`: the row (created as a
//     tombstone if absent) becomes deleted with Modified = at, unless the
//     row is newer; applied as for Upsert.
//   - MarkSpaceDeleted marks every live row of a space deleted whose
//     Modified is not newer than `at`, and returns how many it marked.
//   - Get returns the row, tombstones included, or ErrNotFound.
//   - List returns live rows of a space with content ID strictly after
//     `after` ("" = from the start) in byte-wise ascending order of content
//     ID, at most PageSize(limit), and whether more follow.
//   - SetChecksum replaces the checksum of an existing row in place,
//     leaving Modified alone (the bit check's "update content index");
//     ErrNotFound when there is no row.
//   - SetMissing sets the row's MissingRun in place ("" clears it),
//     leaving everything else alone; ErrNotFound when there is no row. An
//     Upsert or MarkDeleted that changes the row clears it (the item was
//     written or deleted since).
//   - Safe for concurrent use; cancelling ctx abandons the call.
type Index interface {
	Upsert(ctx context.Context, e Entry) (applied bool, err error)
	MarkDeleted(ctx context.Context, item Item, at time.Time) (applied bool, err error)
	MarkSpaceDeleted(ctx context.Context, account, storeID, spaceID string, at time.Time) (int64, error)
	Get(ctx context.Context, item Item) (*Entry, error)
	List(ctx context.Context, account, storeID, spaceID, after string, limit int) (entries []Entry, more bool, err error)
	SetChecksum(ctx context.Context, item Item, checksum string) error
	SetMissing(ctx context.Context, item Item, runID string) error
}

// Pruner drops old tombstones. A tombstone keeps an older, late event from
// resurrecting a deleted item; once its delete event is older than any
// event can still arrive (the queues keep messages 14 days at most), it
// protects nothing and can go. Both implementations provide it.
//
//   - Tombstones counts the tombstones whose Modified is before `before`.
//   - PurgeTombstones deletes at most limit of them (limit ≤ 0: a default
//     batch) and returns how many it deleted; call it until it returns 0.
type Pruner interface {
	Tombstones(ctx context.Context, before time.Time) (int64, error)
	PurgeTombstones(ctx context.Context, before time.Time, limit int) (int64, error)
}

// DefaultPurgeBatch is the batch of PurgeTombstones when limit ≤ 0.
const DefaultPurgeBatch = 10000

// PageSize clamps a List limit to the page sizes of every listing of items
// (paging.Items: 1..paging.MaxItems, paging.DefaultItems for ≤ 0), which
// the bit log shares, so the two page side by side.
func PageSize(limit int) int { return paging.Items(limit) }

// Check validates an Upsert entry (the item and its time); implementations
// call it first.
func Check(e Entry) error {
	if err := e.Item.validate(); err != nil {
		return err
	}
	if e.Modified.IsZero() {
		return errors.Join(ErrInvalid, errors.New("entry needs its event time (Modified)"))
	}
	return nil
}

// CheckItem validates an item.
func CheckItem(i Item) error { return i.validate() }

// Truncate is the precision the index keeps (PostgreSQL's microseconds),
// applied by every implementation so they agree on equal times.
func Truncate(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

// Search: finding items by account, space and content-ID prefix (the
// console's item search).
//
//   - Search returns the rows, tombstones included (a deleted item can be
//     found, and restored), of account's space whose content ID starts
//     with q.Prefix ("" = every item), in byte-wise ascending order of
//     (content ID, store ID), strictly after q.After (a zero Cursor = from
//     the start), at most PageSize(q.Limit), and whether more follow.
//     Account and SpaceID are required (ErrInvalid otherwise).
type Searcher interface {
	Search(ctx context.Context, q Query) (entries []Entry, more bool, err error)
}

// Query is a Search.
type Query struct {
	Account, SpaceID string // required
	Prefix           string
	After            Cursor
	Limit            int
}

// Cursor is where a Search page ends: the last row's content and store IDs.
type Cursor struct{ ContentID, StoreID string }

// IsZero reports whether c is the start.
func (c Cursor) IsZero() bool { return c == Cursor{} }

// CursorOf is the cursor after e.
func CursorOf(e Entry) Cursor { return Cursor{ContentID: e.ContentID, StoreID: e.StoreID} }

// Check validates a Search query.
func (q Query) Check() error {
	if q.Account == "" || q.SpaceID == "" {
		return errors.Join(ErrInvalid, errors.New("search needs an account and a space"))
	}
	if !utf8.ValidString(q.Prefix) {
		return errors.Join(ErrInvalid, errors.New("search prefix is not UTF-8 text"))
	}
	return nil
}

// PrefixEnd is the least string greater than every string starting with
// prefix, in byte-wise order, and false when there is none (prefix is
// empty): prefix with its last code point incremented (UTF-8 preserves
// code-point order), surrogates and the largest code point skipped.
// Stores use it to bound a prefix scan: id >= prefix AND id < end.
func PrefixEnd(prefix string) (string, bool) {
	rs := []rune(prefix)
	for len(rs) > 0 {
		last := rs[len(rs)-1] + 1
		if last == 0xD800 {
			last = 0xE000
		}
		if last <= unicode.MaxRune {
			rs[len(rs)-1] = last
			return string(rs), true
		}
		rs = rs[:len(rs)-1]
	}
	return "", false
}
