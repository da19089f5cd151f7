// Package pgcontentindex is the content index (contentindex.Index and
// contentindex.Pruner) on PostgreSQL: the content_index table that
// pkg/milldb's migrations create. It passes contentindextest.Run.
package pgcontentindex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/pkg/contentindex"
)

// Index is contentindex.Index and contentindex.Pruner on the
// content_index table (migrations 001 and 004). The ordering rule — an event older than the row changes nothing — is
// enforced in SQL by the conflict clauses, so concurrent writers cannot
// race it. Every statement takes its values as parameters. Safe for
// concurrent use.
type Index struct {
	pool *pgxpool.Pool
}

var _ contentindex.Index = (*Index)(nil)

// New returns the content index in the database of pool (whose
// search_path reaches the migrated tables).
func New(pool *pgxpool.Pool) *Index { return &Index{pool: pool} }

// sqlUpsert writes a live row. $8 (properties) NULL keeps the row's
// properties; empty checksum/mimetype ($5, $7) and NULL size ($6) keep the
// row's values. The WHERE clause ignores older events and events that would
// change nothing, so RowsAffected says whether the row changed.
const sqlUpsert = `
INSERT INTO content_index AS content_index
    (account, store_id, space_id, content_id, checksum, size, mimetype, properties, deleted, modified)
VALUES ($1, $2, $3, $4, NULLIF($5, ''), $6, NULLIF($7, ''), COALESCE($8::jsonb, '{}'::jsonb), false, $9)
ON CONFLICT (account, store_id, space_id, content_id) DO UPDATE SET
    checksum   = COALESCE(excluded.checksum, content_index.checksum),
    size       = COALESCE(excluded.size, content_index.size),
    mimetype   = COALESCE(excluded.mimetype, content_index.mimetype),
    properties = CASE WHEN $8::jsonb IS NULL THEN content_index.properties ELSE excluded.properties END,
    deleted    = false,
    modified   = excluded.modified,
    missing_run = NULL,
    updated_at = now()
WHERE content_index.modified <= excluded.modified
  AND (content_index.deleted, content_index.modified, content_index.checksum, content_index.size,
       content_index.mimetype, content_index.properties)
      IS DISTINCT FROM
      (false, excluded.modified, COALESCE(excluded.checksum, content_index.checksum),
       COALESCE(excluded.size, content_index.size), COALESCE(excluded.mimetype, content_index.mimetype),
       CASE WHEN $8::jsonb IS NULL THEN content_index.properties ELSE excluded.properties END)`

// sqlMarkDeleted writes a tombstone, or marks the row deleted, unless the row
// is newer or already deleted at this very time.
const sqlMarkDeleted = `
INSERT INTO content_index AS content_index
    (account, store_id, space_id, content_id, deleted, modified)
VALUES ($1, $2, $3, $4, true, $5)
ON CONFLICT (account, store_id, space_id, content_id) DO UPDATE SET
    deleted    = true,
    modified   = excluded.modified,
    missing_run = NULL,
    updated_at = now()
WHERE content_index.modified <= excluded.modified
  AND NOT (content_index.deleted AND content_index.modified = excluded.modified)`

const sqlMarkSpaceDeleted = `
UPDATE content_index SET deleted = true, modified = $4, missing_run = NULL, updated_at = now()
WHERE account = $1 AND store_id = $2 AND space_id = $3 AND NOT deleted AND modified <= $4`

const sqlColumns = `content_id, COALESCE(checksum, ''), size, COALESCE(mimetype, ''), properties, deleted, modified,
    COALESCE(missing_run, '')`

const sqlGet = `SELECT ` + sqlColumns + ` FROM content_index
WHERE account = $1 AND store_id = $2 AND space_id = $3 AND content_id = $4`

// sqlList is keyset pagination over the primary key (content_id is
// COLLATE "C": byte-wise order).
const sqlList = `SELECT ` + sqlColumns + ` FROM content_index
WHERE account = $1 AND store_id = $2 AND space_id = $3 AND NOT deleted AND content_id > $4
ORDER BY content_id
LIMIT $5`

const sqlSetMissing = `UPDATE content_index SET missing_run = NULLIF($5, ''), updated_at = now()
WHERE account = $1 AND store_id = $2 AND space_id = $3 AND content_id = $4`

const sqlTombstones = `SELECT count(*) FROM content_index WHERE deleted AND modified < $1`

// sqlPurgeTombstones deletes one batch through the tombstone index; a
// batch keeps each statement (and its locks) short on a large table.
const sqlPurgeTombstones = `DELETE FROM content_index WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM content_index WHERE deleted AND modified < $1 LIMIT $2))`

const sqlSetChecksum = `UPDATE content_index SET checksum = NULLIF($5, ''), updated_at = now()
WHERE account = $1 AND store_id = $2 AND space_id = $3 AND content_id = $4`

// Upsert implements contentindex.Index.
func (x *Index) Upsert(ctx context.Context, e contentindex.Entry) (bool, error) {
	if err := contentindex.Check(e); err != nil {
		return false, fmt.Errorf("contentindex: upsert %s: %w", e.Item, err)
	}
	var props any
	if e.Properties != nil {
		b, err := json.Marshal(e.Properties)
		if err != nil {
			return false, fmt.Errorf("contentindex: upsert %s: properties: %w", e.Item, err)
		}
		props = b
	}
	tag, err := x.pool.Exec(ctx, sqlUpsert, e.Account, e.StoreID, e.SpaceID, e.ContentID,
		e.Checksum, e.Size, e.MimeType, props, contentindex.Truncate(e.Modified))
	if err != nil {
		return false, fmt.Errorf("contentindex: upsert %s: %w", e.Item, err)
	}
	return tag.RowsAffected() == 1, nil
}

// MarkDeleted implements contentindex.Index.
func (x *Index) MarkDeleted(ctx context.Context, i contentindex.Item, at time.Time) (bool, error) {
	if err := contentindex.Check(contentindex.Entry{Item: i, Modified: at}); err != nil {
		return false, fmt.Errorf("contentindex: mark deleted %s: %w", i, err)
	}
	tag, err := x.pool.Exec(ctx, sqlMarkDeleted, i.Account, i.StoreID, i.SpaceID, i.ContentID, contentindex.Truncate(at))
	if err != nil {
		return false, fmt.Errorf("contentindex: mark deleted %s: %w", i, err)
	}
	return tag.RowsAffected() == 1, nil
}

// MarkSpaceDeleted implements contentindex.Index.
func (x *Index) MarkSpaceDeleted(ctx context.Context, account, storeID, spaceID string, at time.Time) (int64, error) {
	where := account + "/" + storeID + "/" + spaceID
	if account == "" || storeID == "" || spaceID == "" || at.IsZero() {
		return 0, fmt.Errorf("contentindex: mark space deleted %s: %w", where, contentindex.ErrInvalid)
	}
	tag, err := x.pool.Exec(ctx, sqlMarkSpaceDeleted, account, storeID, spaceID, contentindex.Truncate(at))
	if err != nil {
		return 0, fmt.Errorf("contentindex: mark space deleted %s: %w", where, err)
	}
	return tag.RowsAffected(), nil
}

func scanEntry(row pgx.Row, account, storeID, spaceID string) (contentindex.Entry, error) {
	e := contentindex.Entry{Item: contentindex.Item{Account: account, StoreID: storeID, SpaceID: spaceID}}
	err := row.Scan(&e.ContentID, &e.Checksum, &e.Size, &e.MimeType, &e.Properties, &e.Deleted, &e.Modified, &e.MissingRun)
	if e.Properties == nil {
		e.Properties = map[string]string{}
	}
	e.Modified = e.Modified.UTC()
	return e, err
}

// Get implements contentindex.Index.
func (x *Index) Get(ctx context.Context, i contentindex.Item) (*contentindex.Entry, error) {
	e, err := scanEntry(x.pool.QueryRow(ctx, sqlGet, i.Account, i.StoreID, i.SpaceID, i.ContentID), i.Account, i.StoreID, i.SpaceID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("contentindex: get %s: %w", i, contentindex.ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("contentindex: get %s: %w", i, err)
	}
	return &e, nil
}

// List implements contentindex.Index.
func (x *Index) List(ctx context.Context, account, storeID, spaceID, after string, limit int) ([]contentindex.Entry, bool, error) {
	n := contentindex.PageSize(limit)
	where := account + "/" + storeID + "/" + spaceID
	rows, err := x.pool.Query(ctx, sqlList, account, storeID, spaceID, after, n+1)
	if err != nil {
		return nil, false, fmt.Errorf("contentindex: list %s after %q: %w", where, after, err)
	}
	defer rows.Close()
	var out []contentindex.Entry
	for rows.Next() {
		e, err := scanEntry(rows, account, storeID, spaceID)
		if err != nil {
			return nil, false, fmt.Errorf("contentindex: list %s after %q: %w", where, after, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("contentindex: list %s after %q: %w", where, after, err)
	}
	more := len(out) > n
	if more {
		out = out[:n]
	}
	return out, more, nil
}

var _ contentindex.Searcher = (*Index)(nil)

// sqlSearch[bounded][after] is keyset pagination over
// content_index_search_idx (account, space_id, content_id, store_id): the
// prefix is a range of content_id ($3 <= content_id < $4 when the prefix
// has an end), so the first page reads about a page of index entries
// however many rows the space or the account holds. A bound that does not
// apply is left out of the statement rather than made optional in it (an
// OR would keep the planner from using it as an index bound), so there are
// four constant statements; every value is a $n parameter, the limit last.
var sqlSearch = [2][2]string{
	{searchHead + searchTail(4), searchHead + searchAfter(4) + searchTail(6)},
	{searchHead + ` AND content_id < $4` + searchTail(5), searchHead + ` AND content_id < $4` + searchAfter(5) + searchTail(7)},
}

const searchHead = `SELECT store_id, ` + sqlColumns + ` FROM content_index
WHERE account = $1 AND space_id = $2 AND content_id >= $3`

func searchAfter(n int) string {
	return fmt.Sprintf(` AND (content_id, store_id COLLATE "C") > ($%d, $%d)`, n, n+1)
}

func searchTail(n int) string {
	return fmt.Sprintf(`
ORDER BY content_id, store_id COLLATE "C"
LIMIT $%d`, n)
}

// searchArgs picks q's statement and its values.
func searchArgs(q contentindex.Query, limit int) (bounded, after int, args []any) {
	args = []any{q.Account, q.SpaceID, q.Prefix}
	if end, ok := contentindex.PrefixEnd(q.Prefix); ok {
		bounded = 1
		args = append(args, end)
	}
	if !q.After.IsZero() {
		after = 1
		args = append(args, q.After.ContentID, q.After.StoreID)
	}
	return bounded, after, append(args, limit)
}

// Search implements contentindex.Searcher.
func (x *Index) Search(ctx context.Context, q contentindex.Query) ([]contentindex.Entry, bool, error) {
	what := fmt.Sprintf("%s/%s %q", q.Account, q.SpaceID, q.Prefix)
	if err := q.Check(); err != nil {
		return nil, false, fmt.Errorf("contentindex: search %s: %w", what, err)
	}
	n := contentindex.PageSize(q.Limit)
	bounded, after, args := searchArgs(q, n+1)
	sql := sqlSearch[bounded][after]
	rows, err := x.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, false, fmt.Errorf("contentindex: search %s: %w", what, err)
	}
	defer rows.Close()
	var out []contentindex.Entry
	for rows.Next() {
		e := contentindex.Entry{Item: contentindex.Item{Account: q.Account, SpaceID: q.SpaceID}}
		err := rows.Scan(&e.StoreID, &e.ContentID, &e.Checksum, &e.Size, &e.MimeType, &e.Properties, &e.Deleted, &e.Modified, &e.MissingRun)
		if err != nil {
			return nil, false, fmt.Errorf("contentindex: search %s: %w", what, err)
		}
		if e.Properties == nil {
			e.Properties = map[string]string{}
		}
		e.Modified = e.Modified.UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("contentindex: search %s: %w", what, err)
	}
	more := len(out) > n
	if more {
		out = out[:n]
	}
	return out, more, nil
}

// SetChecksum implements contentindex.Index.
func (x *Index) SetChecksum(ctx context.Context, i contentindex.Item, checksum string) error {
	tag, err := x.pool.Exec(ctx, sqlSetChecksum, i.Account, i.StoreID, i.SpaceID, i.ContentID, checksum)
	return edited("set checksum", i, tag, err)
}

// SetMissing implements contentindex.Index.
func (x *Index) SetMissing(ctx context.Context, i contentindex.Item, runID string) error {
	tag, err := x.pool.Exec(ctx, sqlSetMissing, i.Account, i.StoreID, i.SpaceID, i.ContentID, runID)
	return edited("set missing", i, tag, err)
}

// edited is the outcome of an in-place UPDATE of item i's row: ErrNotFound
// when there was no row.
func edited(what string, i contentindex.Item, tag pgconn.CommandTag, err error) error {
	if err != nil {
		return fmt.Errorf("contentindex: %s %s: %w", what, i, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("contentindex: %s %s: %w", what, i, contentindex.ErrNotFound)
	}
	return nil
}

var _ contentindex.Pruner = (*Index)(nil)

// Tombstones implements contentindex.Pruner.
func (x *Index) Tombstones(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	if err := x.pool.QueryRow(ctx, sqlTombstones, before).Scan(&n); err != nil {
		return 0, fmt.Errorf("contentindex: count tombstones before %s: %w", before.Format(time.RFC3339), err)
	}
	return n, nil
}

// PurgeTombstones implements contentindex.Pruner.
func (x *Index) PurgeTombstones(ctx context.Context, before time.Time, limit int) (int64, error) {
	if limit <= 0 {
		limit = contentindex.DefaultPurgeBatch
	}
	tag, err := x.pool.Exec(ctx, sqlPurgeTombstones, before, limit)
	if err != nil {
		return 0, fmt.Errorf("contentindex: purge tombstones before %s: %w", before.Format(time.RFC3339), err)
	}
	return tag.RowsAffected(), nil
}
