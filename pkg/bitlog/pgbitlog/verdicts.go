package pgbitlog

import (
	"context"
	"fmt"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
)

// The latest fresh verdict of each copy: bitlog.Verdicts on the bit_verdict
// table (migration 008), which Record keeps (cteVerdict).

// sqlVerdicts reads one page of a space's verdicts: an index-only range
// scan of bit_verdict's primary key from (account, store, space, after).
// The result and method come as booleans (the table allows two of each),
// so a page allocates little more than its content IDs.
const sqlVerdicts = `
SELECT content_id, result = 'FAILURE', method = 'at-rest', archived, checked_at
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
	out := make([]bitlog.Verdict, 0, limit+1) // the page the caller asked for, allocated once
	var failure, atRest bool
	var v bitlog.Verdict
	dest := []any{&v.ContentID, &failure, &atRest, &v.Archived, &v.CheckedAt} // made once, not per copy
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, false, fmt.Errorf("milldb: bit verdicts %s/%s/%s: %w", account, storeID, spaceID, err)
		}
		v.Result, v.Method, v.CheckedAt = bitlog.ResultSuccess, bitlog.MethodRead, v.CheckedAt.In(time.UTC)
		if failure {
			v.Result = bitlog.ResultFailure
		}
		if atRest {
			v.Method = bitlog.MethodAtRest
		}
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
