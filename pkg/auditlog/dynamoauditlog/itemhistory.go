package dynamoauditlog

import (
	"context"
	"fmt"

	"github.com/millfleet/mill/pkg/auditlog"
)

var _ auditlog.ItemHistory = (*Log)(nil)

// ItemHistory implements auditlog.ItemHistory: one strongly consistent
// Query of the item's partition, sort key descending, resumed after the
// token's sort key.
func (d *Log) ItemHistory(ctx context.Context, account, storeID, spaceID, contentID, pageToken string, limit int) ([]auditlog.Entry, string, error) {
	pk := auditlog.ItemKey(account, storeID, spaceID, contentID)
	sk, ok, err := auditlog.DecodeItemHistoryToken(pageToken, pk)
	if err != nil {
		return nil, "", fmt.Errorf("auditlog: item history %s: %w", pk, err)
	}
	in := d.itemQuery(pk, int32(auditlog.PageSize(limit)))
	if ok {
		in.ExclusiveStartKey = tableKey(pk, sk)
	}
	out, err := d.t.Client.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("auditlog: item history %s: %w", pk, err)
	}
	entries, next, err := page(out.Items, out.LastEvaluatedKey, func(last item) (string, error) {
		s, err := keyString(last, auditlog.AttrSK)
		return auditlog.ItemHistoryToken(pk, s), err
	})
	if err != nil {
		return nil, "", fmt.Errorf("auditlog: item history %s: %w", pk, err)
	}
	return entries, next, nil
}
