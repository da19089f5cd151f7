package milldb

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/pkg/bitlog"
)

// BitLog is bitlog.Log on the bit_log and bit_report tables (migrations 002
// and 003). Rows are upserted through the bit_log_item_per_run and
// bit_report_space_per_run constraints, so a redelivered task updates its
// row and concurrent writers cannot duplicate it. Empty checksums and case 0
// are stored as NULL. Keys are ordered byte-wise (COLLATE "C"), as the
// memory implementation orders them. Every statement takes its values as
// parameters. Safe for concurrent use.
type BitLog struct {
	pool *pgxpool.Pool
}

var _ bitlog.Log = (*BitLog)(nil)

// NewBitLog returns the bit log in the database of pool (whose search_path
// reaches the migrated tables).
func NewBitLog(pool *pgxpool.Pool) *BitLog { return &BitLog{pool: pool} }

const sqlBitRecord = `
INSERT INTO bit_log AS b
    (run_id, account, store_id, store_kind, space_id, content_id, result, case_number,
     content_checksum, storage_checksum, index_checksum, audit_checksum, details, checked_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8::integer, 0),
     NULLIF($9, ''), NULLIF($10, ''), NULLIF($11, ''), NULLIF($12, ''), $13, COALESCE($14::timestamptz, now()))
ON CONFLICT (run_id, account, store_id, space_id, content_id) DO UPDATE SET
    store_kind       = excluded.store_kind,
    result           = excluded.result,
    case_number      = excluded.case_number,
    content_checksum = excluded.content_checksum,
    storage_checksum = excluded.storage_checksum,
    index_checksum   = excluded.index_checksum,
    audit_checksum   = excluded.audit_checksum,
    details          = excluded.details,
    checked_at       = excluded.checked_at`

// optTime is nil for the zero time (the database then uses now()).
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = bitlog.Truncate(t)
	return &t
}

// Record implements bitlog.Log.
func (l *BitLog) Record(ctx context.Context, r bitlog.Row) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("milldb: bit log record: %w", err)
	}
	_, err := l.pool.Exec(ctx, sqlBitRecord, r.RunID, r.Account, r.StoreID, r.StoreKind, r.SpaceID, r.ContentID,
		string(r.Result), r.Case, r.ContentChecksum, r.StorageChecksum, r.IndexChecksum, r.AuditChecksum,
		r.Details, optTime(r.CheckedAt))
	if err != nil {
		return fmt.Errorf("milldb: bit log record %s: %w", r.Key(), err)
	}
	return nil
}

// sqlBitResults: $1..$5 filter (an empty value matches all), $6 whether a page key
// follows in $7..$11, $12 the limit.
const sqlBitResults = `
SELECT run_id, account, store_id, store_kind, space_id, content_id, result, COALESCE(case_number, 0),
       COALESCE(content_checksum, ''), COALESCE(storage_checksum, ''), COALESCE(index_checksum, ''),
       COALESCE(audit_checksum, ''), details, checked_at
FROM bit_log
WHERE ($1 = '' OR run_id = $1)
  AND ($2 = '' OR account = $2)
  AND ($3 = '' OR store_id = $3)
  AND ($4 = '' OR space_id = $4)
  AND ($5 = '' OR result = $5)
  AND (NOT $6::boolean OR
       (run_id COLLATE "C", account COLLATE "C", store_id COLLATE "C", space_id COLLATE "C", content_id)
       > ($7, $8, $9, $10, $11))
ORDER BY run_id COLLATE "C", account COLLATE "C", store_id COLLATE "C", space_id COLLATE "C", content_id
LIMIT $12`

// Results implements bitlog.Log.
func (l *BitLog) Results(ctx context.Context, f bitlog.Filter) ([]bitlog.Row, string, error) {
	if err := f.Validate(); err != nil {
		return nil, "", fmt.Errorf("milldb: bit log results: %w", err)
	}
	after, hasAfter, err := bitlog.DecodeToken(f.After)
	if err != nil {
		return nil, "", fmt.Errorf("milldb: bit log results: %w", err)
	}
	limit := bitlog.PageSize(f.Limit)
	rows, err := l.pool.Query(ctx, sqlBitResults, f.RunID, f.Account, f.StoreID, f.SpaceID, string(f.Result),
		hasAfter, after.RunID, after.Account, after.StoreID, after.SpaceID, after.ContentID, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("milldb: bit log results: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (bitlog.Row, error) {
		var r bitlog.Row
		var res string
		err := row.Scan(&r.RunID, &r.Account, &r.StoreID, &r.StoreKind, &r.SpaceID, &r.ContentID, &res, &r.Case,
			&r.ContentChecksum, &r.StorageChecksum, &r.IndexChecksum, &r.AuditChecksum, &r.Details, &r.CheckedAt)
		r.Result = bitlog.Result(res)
		r.CheckedAt = r.CheckedAt.UTC()
		return r, err
	})
	if err != nil {
		return nil, "", fmt.Errorf("milldb: bit log results: %w", err)
	}
	if len(out) <= limit {
		return out, "", nil
	}
	out = out[:limit]
	return out, bitlog.EncodeToken(bitlog.KeyOf(out[limit-1])), nil
}

const sqlBitCount = `
SELECT count(*),
       count(*) FILTER (WHERE result = 'SUCCESS'),
       count(*) FILTER (WHERE result = 'FAILURE'),
       count(*) FILTER (WHERE result = 'ERROR')
FROM bit_log
WHERE run_id = $1 AND account = $2 AND store_id = $3 AND space_id = $4`

// Count implements bitlog.Log.
func (l *BitLog) Count(ctx context.Context, runID, account, storeID, spaceID string) (bitlog.Counts, error) {
	var c bitlog.Counts
	err := l.pool.QueryRow(ctx, sqlBitCount, runID, account, storeID, spaceID).Scan(&c.Total, &c.Success, &c.Failure, &c.Error)
	if err != nil {
		return bitlog.Counts{}, fmt.Errorf("milldb: bit log count %s:%s/%s/%s: %w", runID, account, storeID, spaceID, err)
	}
	return c, nil
}

const sqlBitPutReport = `
INSERT INTO bit_report AS r
    (run_id, account, store_id, space_id, result, total_count, success_count, failure_count, error_count,
     report_location, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, COALESCE($11::timestamptz, now()))
ON CONFLICT (run_id, account, store_id, space_id) DO UPDATE SET
    result          = excluded.result,
    total_count     = excluded.total_count,
    success_count   = excluded.success_count,
    failure_count   = excluded.failure_count,
    error_count     = excluded.error_count,
    report_location = excluded.report_location,
    created_at      = excluded.created_at`

// PutReport implements bitlog.Log.
func (l *BitLog) PutReport(ctx context.Context, r bitlog.Report) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("milldb: bit report put: %w", err)
	}
	c := r.Counts
	_, err := l.pool.Exec(ctx, sqlBitPutReport, r.RunID, r.Account, r.StoreID, r.SpaceID, string(r.Result),
		c.Total, c.Success, c.Failure, c.Error, r.Location, optTime(r.CreatedAt))
	if err != nil {
		return fmt.Errorf("milldb: bit report put %s:%s/%s/%s: %w", r.RunID, r.Account, r.StoreID, r.SpaceID, err)
	}
	return nil
}

const sqlBitReports = `
SELECT run_id, account, store_id, space_id, result, total_count, success_count, failure_count, error_count,
       report_location, created_at
FROM bit_report
WHERE ($1 = '' OR run_id = $1)
  AND ($2 = '' OR account = $2)
  AND ($3 = '' OR store_id = $3)
  AND ($4 = '' OR space_id = $4)
ORDER BY created_at DESC, run_id COLLATE "C", account COLLATE "C", store_id COLLATE "C", space_id COLLATE "C"
LIMIT $5`

// Reports implements bitlog.Log.
func (l *BitLog) Reports(ctx context.Context, f bitlog.ReportFilter) ([]bitlog.Report, error) {
	rows, err := l.pool.Query(ctx, sqlBitReports, f.RunID, f.Account, f.StoreID, f.SpaceID, bitlog.PageSize(f.Limit))
	if err != nil {
		return nil, fmt.Errorf("milldb: bit reports: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (bitlog.Report, error) {
		var r bitlog.Report
		var res string
		err := row.Scan(&r.RunID, &r.Account, &r.StoreID, &r.SpaceID, &res, &r.Counts.Total, &r.Counts.Success,
			&r.Counts.Failure, &r.Counts.Error, &r.Location, &r.CreatedAt)
		r.Result = bitlog.Result(res)
		r.CreatedAt = r.CreatedAt.UTC()
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("milldb: bit reports: %w", err)
	}
	return out, nil
}
