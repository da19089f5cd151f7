package pgbitlog

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/millfleet/mill/pkg/bitlog"
)

var _ bitlog.Checked = (*Log)(nil)

// sqlBitChecked: the rows checked in [$1, $2), after the position $4..$9
// when $3, in the order of bitlog.Checked, $10 at most (the index
// bit_log_checked_idx serves the range).
const sqlBitChecked = `
SELECT run_id, account, store_id, store_kind, space_id, content_id, result, COALESCE(case_number, 0),
       COALESCE(content_checksum, ''), COALESCE(storage_checksum, ''), COALESCE(index_checksum, ''),
       COALESCE(audit_checksum, ''), details, checked_at, COALESCE(method, ''), bytes, archived,
       COALESCE(agent_instance, ''), COALESCE(agent_version, '')
FROM bit_log
WHERE checked_at >= $1 AND checked_at < $2
  AND (NOT $3::boolean OR
       (checked_at, run_id COLLATE "C", account COLLATE "C", store_id COLLATE "C", space_id COLLATE "C", content_id)
       > ($4, $5, $6, $7, $8, $9))
ORDER BY checked_at, run_id COLLATE "C", account COLLATE "C", store_id COLLATE "C", space_id COLLATE "C", content_id
LIMIT $10`

// Checked implements bitlog.Checked.
func (l *Log) Checked(ctx context.Context, since, until time.Time, after string, limit int) ([]bitlog.Row, string, error) {
	from, hasFrom, err := bitlog.DecodeCheckedToken(after)
	if err != nil {
		return nil, "", fmt.Errorf("milldb: bit log checked: %w", err)
	}
	limit = bitlog.PageSize(limit)
	lower := bitlog.Truncate(since)
	if hasFrom && from.At.After(lower) {
		lower = from.At // the index bounds the scan; the row comparison settles ties
	}
	rows, err := l.pool.Query(ctx, sqlBitChecked, lower, bitlog.Truncate(until),
		hasFrom, from.At, from.RunID, from.Account, from.StoreID, from.SpaceID, from.ContentID, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("milldb: bit log checked: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanRow)
	if err != nil {
		return nil, "", fmt.Errorf("milldb: bit log checked: %w", err)
	}
	if len(out) <= limit {
		return out, "", nil
	}
	out = out[:limit]
	return out, bitlog.CheckedToken(bitlog.CheckedKeyOf(out[limit-1])), nil
}
