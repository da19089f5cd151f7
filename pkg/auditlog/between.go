package auditlog

import (
	"context"
	"fmt"
	"time"

	"github.com/millfleet/mill/internal/base/paging"
)

// Between lists the entries of a time range across every space: what the
// evidence appender derives its replication, repair and deletion events
// from (pkg/evidence/derive).
//
// Contract (auditlogtest.Run holds every implementation to it): Between
// returns the entries with since ≤ Time < until (to the millisecond), each
// exactly once over the pages, in the order of their table key (item key,
// then sort key; not time), at most limit (clamped by PageSize) per page, and
// the token of the next page ("" when no more follow; a page may be empty
// while more follow). A token is the table key of the last entry read
// (BetweenToken); a malformed one wraps ErrBadPageToken. On DynamoDB it is
// a scan of the table with a filter: its cost grows with the table, not
// with the range.
type Between interface {
	Between(ctx context.Context, since, until time.Time, pageToken string, limit int) (entries []Entry, next string, err error)
}

// BetweenToken encodes the table key (PK, SK) a page of Between ended at.
func BetweenToken(pk, sk string) string {
	tok, _ := paging.EncodeToken([2]string{pk, sk}) // strings always encode
	return tok
}

// DecodeBetweenToken reads a BetweenToken; ok is false for "".
func DecodeBetweenToken(tok string) (pk, sk string, ok bool, err error) {
	if tok == "" {
		return "", "", false, nil
	}
	var a [2]string
	err = paging.DecodeToken(tok, &a)
	if err == nil && (a[0] == "" || a[1] == "") {
		err = fmt.Errorf("%w: %q", ErrBadPageToken, tok)
	}
	if err != nil {
		return "", "", false, fmt.Errorf("auditlog: %w", err)
	}
	return a[0], a[1], true, nil
}
