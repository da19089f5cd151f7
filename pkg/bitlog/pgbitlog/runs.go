package pgbitlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/millfleet/mill/pkg/bitlog"
)

// The bit producer's record of its runs: bitlog.Runs on the bit_run_space
// table (migration 007).

const sqlRunStart = `
INSERT INTO bit_run_space (run_id, account, store_id, space_id, started_at)
VALUES ($1, $2, $3, $4, COALESCE($5::timestamptz, now()))
ON CONFLICT (run_id, account, store_id, space_id) DO NOTHING`

const sqlRunFinish = `
INSERT INTO bit_run_space (run_id, account, store_id, space_id, started_at, listed_at, expected)
VALUES ($1, $2, $3, $4, COALESCE($5::timestamptz, now()), COALESCE($6::timestamptz, now()), $7)
ON CONFLICT (run_id, account, store_id, space_id) DO UPDATE SET
    listed_at = excluded.listed_at,
    expected  = excluded.expected`

const sqlRunSpace = `
SELECT started_at, listed_at, COALESCE(expected, 0)
FROM bit_run_space
WHERE run_id = $1 AND account = $2 AND store_id = $3 AND space_id = $4`

// StartSpace implements bitlog.Runs.
func (l *Log) StartSpace(ctx context.Context, s bitlog.RunSpace) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("milldb: bit run start: %w", err)
	}
	if _, err := l.pool.Exec(ctx, sqlRunStart, s.RunID, s.Account, s.StoreID, s.SpaceID, optTime(s.Started)); err != nil {
		return fmt.Errorf("milldb: bit run start %s: %w", s.Key(), err)
	}
	return nil
}

// FinishSpace implements bitlog.Runs.
func (l *Log) FinishSpace(ctx context.Context, s bitlog.RunSpace) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("milldb: bit run finish: %w", err)
	}
	_, err := l.pool.Exec(ctx, sqlRunFinish, s.RunID, s.Account, s.StoreID, s.SpaceID,
		optTime(s.Started), optTime(s.Listed), s.Expected)
	if err != nil {
		return fmt.Errorf("milldb: bit run finish %s: %w", s.Key(), err)
	}
	return nil
}

// RunSpace implements bitlog.Runs.
func (l *Log) RunSpace(ctx context.Context, runID, account, storeID, spaceID string) (bitlog.RunSpace, error) {
	s := bitlog.RunSpace{RunID: runID, Account: account, StoreID: storeID, SpaceID: spaceID}
	var listed *time.Time
	err := l.pool.QueryRow(ctx, sqlRunSpace, runID, account, storeID, spaceID).Scan(&s.Started, &listed, &s.Expected)
	if errors.Is(err, pgx.ErrNoRows) {
		return bitlog.RunSpace{}, fmt.Errorf("%w: %s", bitlog.ErrNoRun, s.Key())
	}
	if err != nil {
		return bitlog.RunSpace{}, fmt.Errorf("milldb: bit run %s: %w", s.Key(), err)
	}
	s.Started = s.Started.UTC()
	if listed != nil {
		s.Listed = listed.UTC()
	}
	return s, nil
}
