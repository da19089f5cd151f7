package auditlog

import (
	"context"
	"fmt"
)

// ItemHistory lists one item's entries, newest first: the history an
// item's page shows (the console). On DynamoDB an item's entries share
// their partition key (ItemKey), so a page is one Query.
//
// Contract (auditlogtest.Run holds every implementation to it):
// ItemHistory returns the entries of the item (contentID "" names the
// space's own entries) in the order of Latest, newest first (time, then
// action name, then hash, descending), each once over the pages, at most
// limit (clamped by PageSize) per page, and the token of the next page (""
// when no more follow; a token may lead to an empty last page). A token is
// ItemHistoryToken of the last entry read; one that is malformed or was
// made for another item wraps ErrBadPageToken.
type ItemHistory interface {
	ItemHistory(ctx context.Context, account, storeID, spaceID, contentID, pageToken string, limit int) (entries []Entry, next string, err error)
}

// ItemHistoryToken encodes the table key (PK, SK) a page of ItemHistory
// ended at.
func ItemHistoryToken(pk, sk string) string { return BetweenToken(pk, sk) }

// DecodeItemHistoryToken reads an ItemHistoryToken of the item pk: the
// sort key the next page starts after; ok is false for "".
func DecodeItemHistoryToken(tok, pk string) (sk string, ok bool, err error) {
	tpk, sk, ok, err := DecodeBetweenToken(tok)
	if err != nil {
		return "", false, err
	}
	if ok && tpk != pk {
		return "", false, fmt.Errorf("auditlog: %w: a token of another item", ErrBadPageToken)
	}
	return sk, ok, nil
}
