// Package auditlog is Mill's audit log port (docs/ARCHITECTURE.md, Audit
// and Data stores): one item per audit event, written by the audit
// processor and read by the bit processor (the latest entry of one item) and
// by operators (a space's history).
//
// The Log interface, Entry and the item layout (keys, attributes, size
// limit) live here; each backend is a sub-package: dynamoauditlog (the
// DynamoDB table, with CreateTableInput) and memauditlog (in memory, for
// unit tests and dev mode). auditlogtest is the conformance suite both pass.
//
// table.go defines the item keys: how they are built from account, store,
// space and content IDs.
package auditlog

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The audit-log table's schema.
//
// Base table (serves "latest entry of one item": Query pk = ItemKey(...),
// ScanIndexForward false, Limit 1):
//
//	pk (S)  ItemKey(account, store, space, content)  e.g. "acme/s1/photos/a%2Fb.jpg"
//	sk (S)  SortKey(time, action, hash)              e.g. "001712345678901#ADD_CONTENT#9f86d081884c"
//
// Global secondary index IndexSpaceHistory, projection ALL (serves the
// paginated history of a space in time order):
//
//	gsi1pk (S)  SpaceKey(account, store, space)        e.g. "acme/s1/photos"
//	gsi1sk (S)  SpaceSortKey(time, content, action)    e.g. "001712345678901#a%2Fb.jpg#ADD_CONTENT"
//
// The key components are escaped (EscapeComponent) so the separators '/' and
// '#' inside an ID cannot make two different items share a key.
const (
	AttrPK     = "pk"
	AttrSK     = "sk"
	AttrGSI1PK = "gsi1pk"
	AttrGSI1SK = "gsi1sk"
	// IndexSpaceHistory is the GSI over (AttrGSI1PK, AttrGSI1SK).
	IndexSpaceHistory = "space-history"
	// DefaultTable is the table name `millctl setup` uses by default.
	DefaultTable = "mill-audit-log"
	// timeDigits zero-pads epoch milliseconds so the sort keys order by
	// time as strings (15 digits last until the year 33658).
	timeDigits = 15
)

var (
	escaper   = strings.NewReplacer("%", "%25", "/", "%2F", "#", "%23")
	unescaper = strings.NewReplacer("%25", "%", "%2F", "/", "%23", "#")
)

// EscapeComponent escapes '%', '/' and '#' in one key component, so joined
// keys split back unambiguously.
func EscapeComponent(s string) string { return escaper.Replace(s) }

// UnescapeComponent reverses EscapeComponent.
func UnescapeComponent(s string) string { return unescaper.Replace(s) }

func join(sep string, parts ...string) string {
	for i, p := range parts {
		parts[i] = EscapeComponent(p)
	}
	return strings.Join(parts, sep)
}

// ItemKey is the partition key of one item's entries. Space-level events
// (CREATE_SPACE, …) use an empty content ID.
func ItemKey(account, storeID, spaceID, contentID string) string {
	return join("/", account, storeID, spaceID, contentID)
}

// ParseItemKey splits an ItemKey back into its IDs.
func ParseItemKey(pk string) (account, storeID, spaceID, contentID string, err error) {
	parts := strings.Split(pk, "/")
	if len(parts) != 4 {
		return "", "", "", "", fmt.Errorf("auditlog: item key %q: want 4 components, got %d", pk, len(parts))
	}
	return UnescapeComponent(parts[0]), UnescapeComponent(parts[1]), UnescapeComponent(parts[2]), UnescapeComponent(parts[3]), nil
}

// SpaceKey is the space-history index's partition key.
func SpaceKey(account, storeID, spaceID string) string {
	return join("/", account, storeID, spaceID)
}

// EpochMillis formats t as zero-padded epoch milliseconds, the time prefix
// of both sort keys. Times before 1970 are an error: audit events never have
// them, and a negative number would sort wrongly.
func EpochMillis(t time.Time) (string, error) {
	ms := t.UnixMilli()
	if ms < 0 {
		return "", errors.New("auditlog: time before 1970: " + t.UTC().Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("%0*d", timeDigits, ms), nil
}

// SortKey is the base table's sort key: time#action#eventHash. Entries of one
// item sort by time; the action and event hash keep two different events in
// the same millisecond apart, while a redelivered event maps to the same key
// (so a conditional put detects the duplicate).
func SortKey(at time.Time, action, eventHash string) (string, error) {
	ms, err := EpochMillis(at)
	if err != nil {
		return "", err
	}
	return ms + "#" + join("#", action, eventHash), nil
}

// SpaceSortKey is the space-history index's sort key: time#content#action.
func SpaceSortKey(at time.Time, contentID, action string) (string, error) {
	ms, err := EpochMillis(at)
	if err != nil {
		return "", err
	}
	return ms + "#" + join("#", contentID, action), nil
}

// EventHash is a short (12 hex digits) digest of an event's identifying
// fields, for SortKey. Fields are length-prefixed before hashing, so
// ("ab", "c") and ("a", "bc") differ.
func EventHash(fields ...string) string {
	h := sha256.New()
	var n [8]byte
	for _, f := range fields {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}
