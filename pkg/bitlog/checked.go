package bitlog

import (
	"context"
	"fmt"
	"time"

	"github.com/millfleet/mill/internal/base/paging"
)

// Checked lists the rows by the time of their check, across runs, spaces,
// stores and accounts: what the evidence appender derives its fixity
// check events from (pkg/evidence/derive).
//
// Contract (bitlogtest.Run holds every implementation to it): Checked
// returns the rows with since ≤ CheckedAt < until in ascending order of
// (CheckedAt, then the row's key byte-wise), at most limit (clamped by
// PageSize) per page, starting after the position of the token `after`
// ("" from the start), and the token of the next page ("" when no more
// follow). A token comes from CheckedToken; a malformed one wraps
// ErrBadPageToken.
type Checked interface {
	Checked(ctx context.Context, since, until time.Time, after string, limit int) (rows []Row, next string, err error)
}

// CheckedKey is the position of a row in the order of Checked.
type CheckedKey struct {
	At time.Time
	PageKey
}

// CheckedKeyOf returns the position of r.
func CheckedKeyOf(r Row) CheckedKey { return CheckedKey{At: Truncate(r.CheckedAt), PageKey: KeyOf(r)} }

// Less orders positions by time, then key.
func (k CheckedKey) Less(o CheckedKey) bool {
	if !k.At.Equal(o.At) {
		return k.At.Before(o.At)
	}
	return k.PageKey.Less(o.PageKey)
}

// CheckedToken returns the token for "after k".
func CheckedToken(k CheckedKey) string {
	tok, _ := paging.EncodeToken([6]string{k.At.UTC().Format(time.RFC3339Nano), k.RunID, k.Account, k.StoreID, k.SpaceID, k.ContentID}) // strings always encode
	return tok
}

// DecodeCheckedToken reads a token made by CheckedToken; ok is false for ""
// (from the start). A malformed token wraps ErrBadPageToken.
func DecodeCheckedToken(tok string) (k CheckedKey, ok bool, err error) {
	if tok == "" {
		return CheckedKey{}, false, nil
	}
	var a [6]string
	err = paging.DecodeToken(tok, &a)
	var at time.Time
	if err == nil {
		if at, err = time.Parse(time.RFC3339Nano, a[0]); err != nil {
			err = fmt.Errorf("%w: %q", ErrBadPageToken, tok)
		}
	}
	if err != nil {
		return CheckedKey{}, false, fmt.Errorf("bitlog: %w", err)
	}
	return CheckedKey{At: at.UTC(), PageKey: PageKey{RunID: a[1], Account: a[2], StoreID: a[3], SpaceID: a[4], ContentID: a[5]}}, true, nil
}
