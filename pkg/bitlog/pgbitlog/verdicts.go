package pgbitlog

import (
	"context"
	"fmt"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
)

// The latest fresh verdict of each copy: bitlog.Verdicts on the bit_verdict
// table (migration 008), which Record keeps (cteVerdict).

// sqlVerdicts reads one page of a space's verdicts: a range scan of
// bit_verdict's primary key from (account, store, space, after).
const sqlVerdicts = `
SELECT content_id, result, method, archived, checked_at
FROM bit_verdict
WHERE account = $1 AND store_id = $2 AND space_id = $3 AND content_id > $4
ORDER BY content_id
LIMIT $5`

// Verdicts implements bitlog.Verdicts.
func (l *Log) Verdicts(ctx context.Context, account, storeID, spaceID, after string, limit int) ([]bitlog.Verdict, bool, error) {
	limit = bitlog.PageSize(limit)
	rows, err := l.pool.Query(ctx, sqlVerdicts, account, storeID, spaceID, after, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("milldb: bit verdicts %s/%s/%s: %w", account, storeID, spaceID, err)
	}
	defer rows.Close()
	out := make([]bitlog.Verdict, 0, min(limit+1, 1024))
	var res, method string
	var v bitlog.Verdict
	for rows.Next() {
		if err := rows.Scan(&v.ContentID, &res, &method, &v.Archived, &v.CheckedAt); err != nil {
			return nil, false, fmt.Errorf("milldb: bit verdicts %s/%s/%s: %w", account, storeID, spaceID, err)
		}
		v.Result, v.Method, v.CheckedAt = bitlog.Result(res), bitlog.Method(method), v.CheckedAt.In(time.UTC)
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("milldb: bit verdicts %s/%s/%s: %w", account, storeID, spaceID, err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}
