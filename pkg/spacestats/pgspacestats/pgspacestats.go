// Package pgspacestats is the storage statistics history (spacestats.Store)
// on PostgreSQL: the space_stats table that pkg/milldb's migrations create.
// It passes spacestatstest.Run.
package pgspacestats

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/pkg/spacestats"
)

// Store is spacestats.Store on the space_stats table (migration 006).
// Rows are upserted through space_stats_space_per_run; keys compare
// byte-wise (the columns are COLLATE "C"), as the memory implementation
// orders them. Safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
}

var _ spacestats.Store = (*Store)(nil)

// New returns the statistics store in the database of pool
// (whose search_path reaches the migrated tables).
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

const sqlStatsPut = `
INSERT INTO space_stats (run_id, account, store_id, space_id, item_count, byte_count, started_at, measured_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (run_id, account, store_id, space_id) DO UPDATE SET
    item_count  = excluded.item_count,
    byte_count  = excluded.byte_count,
    started_at  = excluded.started_at,
    measured_at = excluded.measured_at`

// Put implements spacestats.Store.
func (s *Store) Put(ctx context.Context, st spacestats.Stats) error {
	if err := st.Validate(); err != nil {
		return fmt.Errorf("milldb: space stats: %w", err)
	}
	if st.Measured.IsZero() {
		st.Measured = time.Now()
	}
	if st.Started.IsZero() {
		st.Started = st.Measured
	}
	_, err := s.pool.Exec(ctx, sqlStatsPut, st.RunID, st.Account, st.StoreID, st.SpaceID, st.Items, st.Bytes,
		spacestats.Truncate(st.Started), spacestats.Truncate(st.Measured))
	if err != nil {
		return fmt.Errorf("milldb: space stats %s/%s/%s run %s: %w", st.Account, st.StoreID, st.SpaceID, st.RunID, err)
	}
	return nil
}

// sqlStatsLatest: $1..$3 filter (an empty value matches all).
const sqlStatsLatest = `
SELECT DISTINCT ON (account, store_id, space_id)
       run_id, account, store_id, space_id, item_count, byte_count, started_at, measured_at
FROM space_stats
WHERE ($1 = '' OR account = $1) AND ($2 = '' OR store_id = $2) AND ($3 = '' OR space_id = $3)
ORDER BY account, store_id, space_id, measured_at DESC, run_id DESC`

// Latest implements spacestats.Store.
func (s *Store) Latest(ctx context.Context, f spacestats.Filter) ([]spacestats.Stats, error) {
	rows, err := s.pool.Query(ctx, sqlStatsLatest, f.Account, f.StoreID, f.SpaceID)
	if err != nil {
		return nil, fmt.Errorf("milldb: space stats: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (spacestats.Stats, error) {
		var st spacestats.Stats
		err := row.Scan(&st.RunID, &st.Account, &st.StoreID, &st.SpaceID, &st.Items, &st.Bytes, &st.Started, &st.Measured)
		st.Started, st.Measured = st.Started.UTC(), st.Measured.UTC()
		return st, err
	})
	if err != nil {
		return nil, fmt.Errorf("milldb: space stats: %w", err)
	}
	return out, nil
}

// sqlStatsHistory: $1..$3 filter, $4 since (NULL: no bound), $5 the limit.
const sqlStatsHistory = `
SELECT run_id, count(*), sum(item_count)::bigint, sum(byte_count)::bigint, min(started_at), max(measured_at)
FROM space_stats
WHERE ($1 = '' OR account = $1) AND ($2 = '' OR store_id = $2) AND ($3 = '' OR space_id = $3)
GROUP BY run_id
HAVING $4::timestamptz IS NULL OR max(measured_at) >= $4::timestamptz
ORDER BY max(measured_at) DESC, run_id DESC
LIMIT $5`

// History implements spacestats.Store.
func (s *Store) History(ctx context.Context, f spacestats.Filter, since time.Time, limit int) ([]spacestats.Total, error) {
	var sinceArg *time.Time
	if !since.IsZero() {
		t := spacestats.Truncate(since)
		sinceArg = &t
	}
	rows, err := s.pool.Query(ctx, sqlStatsHistory, f.Account, f.StoreID, f.SpaceID, sinceArg, spacestats.HistoryLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("milldb: space stats history: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (spacestats.Total, error) {
		var t spacestats.Total
		err := row.Scan(&t.RunID, &t.Spaces, &t.Items, &t.Bytes, &t.Started, &t.Measured)
		t.Started, t.Measured = t.Started.UTC(), t.Measured.UTC()
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("milldb: space stats history: %w", err)
	}
	return out, nil
}
