// Package pgbitlog is the bit log (bitlog.Log, bitlog.Runs, bitlog.Pruner)
// on PostgreSQL: the bit_log, bit_report, bit_run_space and bit_verdict
// tables that pkg/milldb's migrations create. It passes bitlogtest.Run.
package pgbitlog

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/internal/base/pgerr"
	"github.com/millfleet/mill/pkg/bitlog"
)

// Log is bitlog.Log and bitlog.Pruner on the bit_log, bit_report,
// bit_run_space and bit_verdict tables (migrations 002, 003, 005, 007 and
// 008). bit_log is partitioned by month
// (run_month, bitlog.Month of the row): a partition per month, named
// bit_log_yYYYYmMM, created by Record when a row first needs it (with the
// next month's, so the month's first rows do not wait for it), dropped by
// DropMonths. Rows are upserted through the bit_log_item_per_run and
// bit_report_space_per_run constraints, so a redelivered task updates its
// row (as bitlog.Row.Replaces allows, in the upsert's WHERE) and
// concurrent writers cannot duplicate it; queries of one run read
// only its month's partition, and the rows of one space of a producer run
// (the bit report's listing) are paged through that constraint's index,
// a page of the index per page (space.go). A row that is a fresh verdict also upserts
// its copy's bit_verdict row, in the same statement and only forward in
// time; bit_verdict is not partitioned, so DropMonths leaves it. Empty
// checksums, case 0, an empty method and an empty agent field (migration
// 013) are stored as NULL. Keys are ordered byte-wise (COLLATE "C"), as the memory
// implementation orders them. Every statement takes its values as
// parameters. Safe for concurrent use.
type Log struct {
	pool  *pgxpool.Pool
	known sync.Map // "2006-01" → struct{}: months whose partition exists
}

var (
	_ bitlog.Log    = (*Log)(nil)
	_ bitlog.Pruner = (*Log)(nil)
)

// New returns the bit log in the database of pool (whose search_path
// reaches the migrated tables).
func New(pool *pgxpool.Pool) *Log { return &Log{pool: pool} }

// ensureMonth makes the partitions of month m and the next (migration
// 005's bit_log_ensure_month), unless this Log made or saw them already.
func (l *Log) ensureMonth(ctx context.Context, m time.Time) error {
	if _, ok := l.known.Load(m.Format("2006-01")); ok {
		return nil
	}
	if _, err := l.pool.Exec(ctx, "SELECT bit_log_ensure_month($1)", m); err != nil {
		return fmt.Errorf("milldb: bit log partition of %s: %w", m.Format("2006-01"), err)
	}
	l.known.Store(m.Format("2006-01"), struct{}{})
	return nil
}

// noPartition reports whether err is PostgreSQL's "no partition of relation
// … found for row" (a month dropped since this Log last saw it).
func noPartition(err error) bool {
	pe, ok := pgerr.Find(err, pgerr.CheckViolation)
	return ok && strings.HasPrefix(pe.Message, "no partition of relation")
}

// sqlBitInsert upserts a row: $1 run, $2 account, $3 store, $4 store kind,
// $5 space, $6 content, $7 result, $8 case, $9..$12 checksums, $13 details,
// $14 checked at, $15 month, $16 method, $17 bytes, $18 archived, $19 and
// $20 the agent's instance and version, $21 the case the row supersedes.
// The WHERE of the update is bitlog.Row.Replaces: a run's finding (FAILURE,
// or ERROR with a case) stands against a row that is no finding (SUCCESS,
// or ERROR of case 0) and not the re-check of its case.
const sqlBitInsert = `
INSERT INTO bit_log AS b
    (run_id, account, store_id, store_kind, space_id, content_id, result, case_number,
     content_checksum, storage_checksum, index_checksum, audit_checksum, details, checked_at, run_month,
     method, bytes, archived, agent_instance, agent_version)
VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8::integer, 0),
     NULLIF($9, ''), NULLIF($10, ''), NULLIF($11, ''), NULLIF($12, ''), $13, $14, $15,
     NULLIF($16, ''), $17, $18, NULLIF($19, ''), NULLIF($20, ''))
ON CONFLICT (run_id, account, store_id, space_id, content_id, run_month) DO UPDATE SET
    store_kind       = excluded.store_kind,
    result           = excluded.result,
    case_number      = excluded.case_number,
    content_checksum = excluded.content_checksum,
    storage_checksum = excluded.storage_checksum,
    index_checksum   = excluded.index_checksum,
    audit_checksum   = excluded.audit_checksum,
    details          = excluded.details,
    checked_at       = excluded.checked_at,
    method           = excluded.method,
    bytes            = excluded.bytes,
    archived         = excluded.archived,
    agent_instance   = excluded.agent_instance,
    agent_version    = excluded.agent_version
WHERE b.run_id = ''
   OR excluded.result = 'FAILURE' OR (excluded.result = 'ERROR' AND excluded.case_number IS NOT NULL)
   OR NOT (b.result = 'FAILURE' OR (b.result = 'ERROR' AND b.case_number IS NOT NULL))
   OR ($21::integer > 0 AND b.case_number = $21::integer)`

// cteMoved, for a row outside any producer run, whose month is the month it
// is recorded in: its row of an earlier month goes, so the item keeps one
// row.
const cteMoved = `
moved AS (
    DELETE FROM bit_log
    WHERE run_id = $1 AND account = $2 AND store_id = $3 AND space_id = $5 AND content_id = $6 AND run_month <> $15
)`

// cteVerdict, for a row that is a fresh verdict (bitlog.Row.Verdict):
// the copy's latest verdict (migration 008's bit_verdict) becomes this
// one unless the copy has one checked later. In the statement that
// records the row, so both are written or neither.
const cteVerdict = `
verdict AS (
    INSERT INTO bit_verdict AS v (account, store_id, space_id, content_id, result, method, archived, checked_at)
    VALUES ($2, $3, $5, $6, $7, $16, $18, $14)
    ON CONFLICT (account, store_id, space_id, content_id) DO UPDATE SET
        result     = excluded.result,
        method     = excluded.method,
        archived   = excluded.archived,
        checked_at = excluded.checked_at
    WHERE v.checked_at <= excluded.checked_at
)`

// sqlBitRecord[moving][verdict] is the statement that records a row.
var sqlBitRecord = [2][2]string{
	{sqlBitInsert, "WITH" + cteVerdict + sqlBitInsert},
	{"WITH" + cteMoved + sqlBitInsert, "WITH" + cteMoved + "," + cteVerdict + sqlBitInsert},
}

// optTime is nil for the zero time (the database then uses now()).
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = bitlog.Truncate(t)
	return &t
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Record implements bitlog.Log.
func (l *Log) Record(ctx context.Context, r bitlog.Row) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("milldb: bit log record: %w", err)
	}
	if r.CheckedAt.IsZero() {
		r.CheckedAt = time.Now()
	}
	at := bitlog.Truncate(r.CheckedAt)
	month := bitlog.Month(r.RunID, at)
	_, inRun := bitlog.RunMonth(r.RunID)
	r.CheckedAt = at
	_, fresh := r.Verdict()
	sql := sqlBitRecord[b2i(!inRun)][b2i(fresh)]
	args := []any{r.RunID, r.Account, r.StoreID, r.StoreKind, r.SpaceID, r.ContentID,
		string(r.Result), r.Case, r.ContentChecksum, r.StorageChecksum, r.IndexChecksum, r.AuditChecksum,
		r.Details, at, month, string(r.Method), r.Bytes, r.Archived, r.Agent.Instance, r.Agent.Version, r.Supersedes}
	for try := 0; ; try++ {
		if err := l.ensureMonth(ctx, month); err != nil {
			return err
		}
		_, err := l.pool.Exec(ctx, sql, args...)
		if noPartition(err) && try == 0 {
			l.known.Delete(month.Format("2006-01")) // dropped since: make it again
			continue
		}
		if err != nil {
			return fmt.Errorf("milldb: bit log record %s: %w", r.Key(), err)
		}
		return nil
	}
}

// sqlBitColumns reads the columns scanRow scans.
const sqlBitColumns = `
SELECT run_id, account, store_id, store_kind, space_id, content_id, result, COALESCE(case_number, 0),
       COALESCE(content_checksum, ''), COALESCE(storage_checksum, ''), COALESCE(index_checksum, ''),
       COALESCE(audit_checksum, ''), details, checked_at, COALESCE(method, ''), bytes, archived,
       COALESCE(agent_instance, ''), COALESCE(agent_version, '')
FROM bit_log`

// sqlBitResults: $1..$5 filter (an empty value matches all), $6 whether a page key
// follows in $7..$11, $12 the limit, $13 the content ID filter (empty: all);
// sqlBitResultsOfMonth also reads only the partition of month $14 (the
// filter's run is a producer run).
const sqlBitResults = sqlBitColumns + `
WHERE ($1 = '' OR run_id = $1)
  AND ($2 = '' OR account = $2)
  AND ($3 = '' OR store_id = $3)
  AND ($4 = '' OR space_id = $4)
  AND ($5 = '' OR result = $5)
  AND ($13 = '' OR content_id = $13)
  AND (NOT $6::boolean OR
       (run_id COLLATE "C", account COLLATE "C", store_id COLLATE "C", space_id COLLATE "C", content_id)
       > ($7, $8, $9, $10, $11))`

const sqlBitResultsOrder = `
ORDER BY run_id COLLATE "C", account COLLATE "C", store_id COLLATE "C", space_id COLLATE "C", content_id
LIMIT $12`

const (
	sqlBitResultsAll     = sqlBitResults + sqlBitResultsOrder
	sqlBitResultsOfMonth = sqlBitResults + `
  AND run_month = $14` + sqlBitResultsOrder
)

// Results implements bitlog.Log.
func (l *Log) Results(ctx context.Context, f bitlog.Filter) ([]bitlog.Row, string, error) {
	if err := f.Validate(); err != nil {
		return nil, "", fmt.Errorf("milldb: bit log results: %w", err)
	}
	after, hasAfter, err := bitlog.DecodeToken(f.After)
	if err != nil {
		return nil, "", fmt.Errorf("milldb: bit log results: %w", err)
	}
	limit := bitlog.PageSize(f.Limit)
	args := []any{f.RunID, f.Account, f.StoreID, f.SpaceID, string(f.Result),
		hasAfter, after.RunID, after.Account, after.StoreID, after.SpaceID, after.ContentID, limit + 1, f.ContentID}
	sql := sqlBitResultsAll
	if i, qargs, ok := spaceResults(f, after, hasAfter, limit); ok {
		sql, args = sqlSpaceResults[i], qargs
	} else if m, ok := bitlog.RunMonth(f.RunID); ok {
		sql, args = sqlBitResultsOfMonth, append(args, m)
	}
	rows, err := l.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, "", fmt.Errorf("milldb: bit log results: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanRow)
	if err != nil {
		return nil, "", fmt.Errorf("milldb: bit log results: %w", err)
	}
	if len(out) <= limit {
		return out, "", nil
	}
	out = out[:limit]
	return out, bitlog.EncodeToken(bitlog.KeyOf(out[limit-1])), nil
}

// scanRow reads a row of the columns of sqlBitResults.
func scanRow(row pgx.CollectableRow) (bitlog.Row, error) {
	var r bitlog.Row
	var res, method string
	err := row.Scan(&r.RunID, &r.Account, &r.StoreID, &r.StoreKind, &r.SpaceID, &r.ContentID, &res, &r.Case,
		&r.ContentChecksum, &r.StorageChecksum, &r.IndexChecksum, &r.AuditChecksum, &r.Details, &r.CheckedAt,
		&method, &r.Bytes, &r.Archived, &r.Agent.Instance, &r.Agent.Version)
	r.Result, r.Method = bitlog.Result(res), bitlog.Method(method)
	r.CheckedAt = r.CheckedAt.UTC()
	return r, err
}

const sqlBitCount = `
SELECT count(*),
       count(*) FILTER (WHERE result = 'SUCCESS'),
       count(*) FILTER (WHERE result = 'FAILURE'),
       count(*) FILTER (WHERE result = 'ERROR')
FROM bit_log
WHERE run_id = $1 AND account = $2 AND store_id = $3 AND space_id = $4`

// sqlBitCountOfMonth reads only the partition of the run's month.
const sqlBitCountOfMonth = sqlBitCount + ` AND run_month = $5`

// Count implements bitlog.Log.
func (l *Log) Count(ctx context.Context, runID, account, storeID, spaceID string) (bitlog.Counts, error) {
	var c bitlog.Counts
	var row pgx.Row
	if m, ok := bitlog.RunMonth(runID); ok {
		row = l.pool.QueryRow(ctx, sqlBitCountOfMonth, runID, account, storeID, spaceID, m)
	} else {
		row = l.pool.QueryRow(ctx, sqlBitCount, runID, account, storeID, spaceID)
	}
	err := row.Scan(&c.Total, &c.Success, &c.Failure, &c.Error)
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
func (l *Log) PutReport(ctx context.Context, r bitlog.Report) error {
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
func (l *Log) Reports(ctx context.Context, f bitlog.ReportFilter) ([]bitlog.Report, error) {
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

// sqlBitMonths lists bit_log's partitions with PostgreSQL's row estimate
// (-1: not analysed yet).
const sqlBitMonths = `
SELECT c.relname, c.reltuples::bigint
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'bit_log'::regclass
ORDER BY c.relname`

// Months implements bitlog.Pruner: every partition, with PostgreSQL's
// estimate of its rows (-1 until it is analysed).
func (l *Log) Months(ctx context.Context) ([]bitlog.MonthInfo, error) {
	rows, err := l.pool.Query(ctx, sqlBitMonths)
	if err != nil {
		return nil, fmt.Errorf("milldb: bit log months: %w", err)
	}
	defer rows.Close()
	var out []bitlog.MonthInfo
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, fmt.Errorf("milldb: bit log months: %w", err)
		}
		m, err := time.Parse("bit_log_y2006m01", name)
		if err != nil {
			continue // not a partition this package made
		}
		out = append(out, bitlog.MonthInfo{Month: m, Rows: n})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("milldb: bit log months: %w", err)
	}
	return out, nil
}

// DropMonths implements bitlog.Pruner: the expired months' partitions are
// dropped in one statement (migration 005's bit_log_drop_months; DROP
// TABLE: no row is read or deleted, so it takes the same moment whatever
// the partitions hold).
func (l *Log) DropMonths(ctx context.Context, before time.Time) ([]bitlog.MonthInfo, error) {
	months, err := l.Months(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := l.pool.Query(ctx, "SELECT m FROM bit_log_drop_months($1) AS m", before)
	if err != nil {
		return nil, fmt.Errorf("milldb: bit log drop months before %s: %w", before.Format("2006-01"), err)
	}
	gone, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return nil, fmt.Errorf("milldb: bit log drop months before %s: %w", before.Format("2006-01"), err)
	}
	// The at-rest jobs of the runs of those months go with them (their
	// objects by the foreign key's cascade).
	if _, err := l.pool.Exec(ctx, sqlAtRestDrop, bitlog.MonthOf(before).Format("20060102T150405Z")); err != nil {
		return nil, fmt.Errorf("milldb: at-rest jobs of runs before %s: %w", before.Format("2006-01"), err)
	}
	var dropped []bitlog.MonthInfo
	for _, g := range gone {
		m := bitlog.MonthInfo{Month: g.UTC(), Rows: -1}
		for _, k := range months {
			if k.Month.Equal(m.Month) {
				m.Rows = k.Rows
			}
		}
		l.known.Delete(m.Month.Format("2006-01"))
		dropped = append(dropped, m)
	}
	return dropped, nil
}
