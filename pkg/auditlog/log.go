package auditlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/millfleet/mill/internal/base/paging"
	"github.com/millfleet/mill/pkg/task"
)

// Errors of every Log implementation (test with errors.Is).
var (
	// ErrNotFound: Latest found no entry for the item.
	ErrNotFound = errors.New("auditlog: not found")
	// ErrTooLarge: the entry's item would exceed DynamoDB's 400 KB item
	// limit (MaxItemSize). It is reported before anything is written;
	// an entry is never dropped or truncated silently.
	ErrTooLarge = errors.New("auditlog: entry too large")
	// ErrInvalid: the entry lacks a required field.
	ErrInvalid = errors.New("auditlog: invalid entry")
	// ErrBadPageToken: SpaceHistory (or ItemHistory, Between) was given a
	// token it did not make. It is paging.ErrBadToken, the error of every
	// listing's page tokens; the audit log's errors wrapping it say
	// "auditlog: bad page token".
	ErrBadPageToken = paging.ErrBadToken
)

// MaxItemSize is the largest item the log writes: DynamoDB allows 400 KB
// (attribute names plus values); we stay at 400 000 bytes, which emulators
// also accept and which leaves room for DynamoDB's own accounting.
const MaxItemSize = 400_000

// Page sizes of SpaceHistory.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// Entry is one audit event: a write to a store.
type Entry struct {
	Account   string // required
	StoreID   string // required
	SpaceID   string // required
	ContentID string // empty for space-level actions
	Action    task.Action
	UserID    string
	// Time is when the write happened; required, millisecond precision
	// (finer precision is truncated when the entry is stored).
	Time            time.Time
	Checksum        string
	MimeType        string
	Size            *int64
	Properties      map[string]string
	SpaceACLs       map[string]string
	SourceSpaceID   string
	SourceContentID string
	StoreType       string
	// SourceStoreID is the store a replication or repair read the content
	// from, as its AUDIT task claimed it (the audit processor keeps it
	// only when it names another registered store of the account); ""
	// when not recorded.
	SourceStoreID string
}

// FromAudit returns the entry an AUDIT task records.
func FromAudit(a task.Audit) Entry {
	return Entry{
		Account: a.Account, StoreID: a.StoreID, SpaceID: a.SpaceID, ContentID: a.ContentID,
		Action: a.Action, UserID: a.UserID, Time: a.DateTime,
		Checksum: a.ContentChecksum, MimeType: a.ContentMimetype, Size: a.ContentSize,
		Properties: maps.Clone(a.ContentProperties), SpaceACLs: maps.Clone(a.SpaceACLs),
		SourceSpaceID: a.SourceSpaceID, SourceContentID: a.SourceContentID, StoreType: a.StoreType,
		SourceStoreID: a.SourceStoreID,
	}
}

// Validate reports a missing required field (wrapping ErrInvalid).
func (e Entry) Validate() error {
	var missing []string
	for _, f := range [][2]string{{"account", e.Account}, {"store", e.StoreID}, {"space", e.SpaceID}, {"action", string(e.Action)}} {
		if f[1] == "" {
			missing = append(missing, f[0])
		}
	}
	if e.Time.IsZero() {
		missing = append(missing, "time")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing %v", ErrInvalid, missing)
	}
	if e.Time.UnixMilli() < 0 {
		return fmt.Errorf("%w: time before 1970", ErrInvalid)
	}
	return nil
}

// normalize truncates the time to milliseconds (what the log keeps).
func (e Entry) normalize() Entry {
	e.Time = time.UnixMilli(e.Time.UnixMilli()).UTC()
	return e
}

// Hash is the event hash of the entry's SortKey: a digest of everything but
// the item, time and action (which are in the key already). Two deliveries of
// the same event have the same hash; two different events of one item in the
// same millisecond almost surely do not.
func (e Entry) Hash() string {
	size := ""
	if e.Size != nil {
		size = strconv.FormatInt(*e.Size, 10)
	}
	fields := []string{e.UserID, e.Checksum, e.MimeType, size, jsonMap(e.Properties), jsonMap(e.SpaceACLs),
		e.SourceSpaceID, e.SourceContentID, e.StoreType}
	if e.SourceStoreID != "" { // only then: the entries written before it keep their keys
		fields = append(fields, e.SourceStoreID)
	}
	return EventHash(fields...)
}

// Key identifies one stored entry.
type Key struct {
	Account, StoreID, SpaceID, ContentID string
	Time                                 time.Time
	Action                               task.Action
	Hash                                 string
}

// Key returns the key the entry is stored under.
func (e Entry) Key() Key {
	e = e.normalize()
	return Key{Account: e.Account, StoreID: e.StoreID, SpaceID: e.SpaceID, ContentID: e.ContentID,
		Time: e.Time, Action: e.Action, Hash: e.Hash()}
}

// PK and SK return the table keys of k (table.go's ItemKey and SortKey).
func (k Key) PK() string { return ItemKey(k.Account, k.StoreID, k.SpaceID, k.ContentID) }

// SK returns the sort key of k.
func (k Key) SK() (string, error) { return SortKey(k.Time, string(k.Action), k.Hash) }

// jsonMap is m as compact JSON with sorted keys; "" for nil.
func jsonMap(m map[string]string) string {
	if m == nil {
		return ""
	}
	b, _ := json.Marshal(m) // a map of strings always marshals; keys sorted
	return string(b)
}

// Log is the audit log.
//
// Contract (every implementation passes auditlogtest.Run):
//
//   - Put stores e once. The entry's key is its item, its time (to the
//     millisecond), its action and its Hash, so a redelivered event maps to
//     the key already stored: Put then returns stored=false and no error.
//     An invalid entry fails with ErrInvalid, one whose item would exceed
//     MaxItemSize with ErrTooLarge; nothing is written in either case.
//   - Latest returns the item's newest entry (greatest time; within one
//     millisecond, greatest action name then hash) or an error wrapping
//     ErrNotFound when the item has none. contentID "" names the space's
//     own (space-level) entries.
//   - LatestChecksum returns the item's newest entry that speaks of its
//     bytes (SpeaksOfBytes: it carries a checksum, or it is a
//     DELETE_CONTENT), skipping newer entries that do not — DuraStore
//     writes SET_CONTENT_PROPERTIES entries without a checksum. An error
//     wrapping ErrNotFound when the item has none.
//   - SpaceHistory returns a space's entries (content and space-level) in
//     time order, oldest first, at most limit (DefaultPageSize when ≤ 0,
//     at most MaxPageSize) per page, and an opaque token for the next page
//     ("" when there are no more; a token may lead to an empty last page). A token comes only from the same
//     implementation and arguments. The listing may lag a write briefly on
//     DynamoDB (a global secondary index).
//   - Delete removes the entries with the given keys; absent keys are
//     success.
//   - Safe for concurrent use; cancelling ctx abandons the call.
type Log interface {
	Put(ctx context.Context, e Entry) (stored bool, err error)
	Latest(ctx context.Context, account, storeID, spaceID, contentID string) (*Entry, error)
	LatestChecksum(ctx context.Context, account, storeID, spaceID, contentID string) (*Entry, error)
	SpaceHistory(ctx context.Context, account, storeID, spaceID, pageToken string, limit int) (entries []Entry, next string, err error)
	Delete(ctx context.Context, keys ...Key) error
}

// SpeaksOfBytes reports whether e tells what an item's bytes are: it
// carries a checksum, or it is a DELETE_CONTENT (there are none). Property
// changes written without a checksum do not.
func SpeaksOfBytes(e Entry) bool {
	return e.Checksum != "" || e.Action == task.ActionDeleteContent
}

// PageSize is the page size a backend uses for limit (DefaultPageSize when
// limit ≤ 0, at most MaxPageSize).
func PageSize(limit int) int { return paging.Size(limit, DefaultPageSize, MaxPageSize) }
