package pgbitlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/millfleet/mill/pkg/bitlog"
)

// The bit producer's record of its at-rest jobs: bitlog.AtRestJobs on the
// bit_at_rest_job and bit_at_rest_object tables (migration 009).

var _ bitlog.AtRestJobs = (*Log)(nil)

const sqlAtRestJobEnsure = `
INSERT INTO bit_at_rest_job (run_id, account, store_id, space_id)
VALUES ($1, $2, $3, $4)
ON CONFLICT (run_id, account, store_id, space_id) DO NOTHING`

const sqlAtRestJobLock = `
SELECT job_id, state, objects, reason, submitted_at, updated_at
FROM bit_at_rest_job
WHERE run_id = $1 AND account = $2 AND store_id = $3 AND space_id = $4`

const sqlAtRestObjectPut = `
INSERT INTO bit_at_rest_object (run_id, account, store_id, space_id, content_id, size, storage_class)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (run_id, account, store_id, space_id, content_id) DO UPDATE SET
    size = excluded.size, storage_class = excluded.storage_class,
    reported = false, ok = false, checksum = '', error = ''`

const sqlAtRestJobSet = `
UPDATE bit_at_rest_job SET job_id = $5, state = $6, objects = $7, reason = $8,
    submitted_at = COALESCE($9::timestamptz, submitted_at), updated_at = COALESCE($10::timestamptz, now())
WHERE run_id = $1 AND account = $2 AND store_id = $3 AND space_id = $4`

const sqlAtRestResult = `
UPDATE bit_at_rest_object SET reported = true, ok = $6, checksum = $7, error = $8
WHERE run_id = $1 AND account = $2 AND store_id = $3 AND space_id = $4 AND content_id = $5`

const sqlAtRestObject = `
SELECT content_id, size, storage_class, reported, ok, checksum, error
FROM bit_at_rest_object
WHERE run_id = $1 AND account = $2 AND store_id = $3 AND space_id = $4 AND content_id = $5`

const sqlAtRestObjects = `
SELECT content_id, size, storage_class, reported, ok, checksum, error
FROM bit_at_rest_object
WHERE run_id = $1 AND account = $2 AND store_id = $3 AND space_id = $4 AND content_id > $5
ORDER BY content_id
LIMIT $6`

const sqlAtRestOpen = `
SELECT run_id, account, store_id, space_id, job_id, state, objects, reason, submitted_at, updated_at
FROM bit_at_rest_job
WHERE state IN ('submitted', 'ingested')
ORDER BY submitted_at, run_id, account, store_id, space_id`

// sqlAtRestDrop deletes the jobs of runs (IDs of the producer's form,
// which sort as their start) before $1.
const sqlAtRestDrop = `
DELETE FROM bit_at_rest_job
WHERE run_id ~ '^[1-9][0-9]{3}(0[1-9]|1[0-2])[0-9]{2}T[0-9]{6}Z$' AND run_id < $1`

func keyArgs(k bitlog.AtRestKey) []any { return []any{k.RunID, k.Account, k.StoreID, k.SpaceID} }

// lockJob reads the job's record (FOR UPDATE inside tx).
func lockJob(ctx context.Context, tx pgx.Tx, k bitlog.AtRestKey) (bitlog.AtRestJob, error) {
	j := bitlog.AtRestJob{AtRestKey: k}
	var submitted *time.Time
	err := tx.QueryRow(ctx, sqlAtRestJobLock+" FOR UPDATE", keyArgs(k)...).Scan(&j.JobID, &j.State, &j.Objects, &j.Reason, &submitted, &j.Updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return j, fmt.Errorf("%w: %s", bitlog.ErrNoAtRestJob, k)
	}
	if submitted != nil {
		j.Submitted = submitted.UTC()
	}
	j.Updated = j.Updated.UTC()
	return j, err
}

// AddAtRestObjects implements bitlog.AtRestJobs.
func (l *Log) AddAtRestObjects(ctx context.Context, k bitlog.AtRestKey, objs []bitlog.AtRestObject) error {
	if err := k.Validate(); err != nil {
		return fmt.Errorf("milldb: at-rest objects: %w", err)
	}
	for _, o := range objs {
		if err := bitlog.ValidateAtRestObject(k, o); err != nil {
			return fmt.Errorf("milldb: at-rest objects: %w", err)
		}
	}
	return pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlAtRestJobEnsure, keyArgs(k)...); err != nil {
			return fmt.Errorf("milldb: at-rest job %s: %w", k, err)
		}
		j, err := lockJob(ctx, tx, k)
		if err != nil {
			return fmt.Errorf("milldb: at-rest job %s: %w", k, err)
		}
		if j.State != bitlog.AtRestListing {
			return fmt.Errorf("milldb: at-rest objects: %w: job %s is %s, its manifest is closed", bitlog.ErrInvalid, k, j.State)
		}
		b := &pgx.Batch{}
		for _, o := range objs {
			b.Queue(sqlAtRestObjectPut, k.RunID, k.Account, k.StoreID, k.SpaceID, o.ContentID, o.Size, o.StorageClass)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("milldb: at-rest objects of %s: %w", k, err)
		}
		return nil
	})
}

// SetAtRestJob implements bitlog.AtRestJobs.
func (l *Log) SetAtRestJob(ctx context.Context, j bitlog.AtRestJob) error {
	if err := j.Validate(); err != nil {
		return fmt.Errorf("milldb: at-rest job: %w", err)
	}
	return pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		old, err := lockJob(ctx, tx, j.AtRestKey)
		if err != nil {
			return fmt.Errorf("milldb: at-rest job: %w", err)
		}
		if err := bitlog.CheckAtRestMove(old, j); err != nil {
			return fmt.Errorf("milldb: at-rest job: %w", err)
		}
		_, err = tx.Exec(ctx, sqlAtRestJobSet, j.RunID, j.Account, j.StoreID, j.SpaceID, j.JobID, string(j.State), j.Objects, j.Reason,
			optTime(j.Submitted), optTime(j.Updated))
		if err != nil {
			return fmt.Errorf("milldb: at-rest job %s: %w", j.AtRestKey, err)
		}
		return nil
	})
}

// RecordAtRestResults implements bitlog.AtRestJobs.
func (l *Log) RecordAtRestResults(ctx context.Context, k bitlog.AtRestKey, results []bitlog.AtRestObject) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if _, err := lockJob(ctx, tx, k); err != nil {
			return fmt.Errorf("milldb: at-rest results: %w", err)
		}
		b := &pgx.Batch{}
		for _, r := range results {
			b.Queue(sqlAtRestResult, k.RunID, k.Account, k.StoreID, k.SpaceID, r.ContentID, r.OK, r.Checksum, r.Error)
		}
		br := tx.SendBatch(ctx, b)
		for range results {
			tag, err := br.Exec()
			if err != nil {
				br.Close()
				return fmt.Errorf("milldb: at-rest results of %s: %w", k, err)
			}
			n += int(tag.RowsAffected())
		}
		return br.Close()
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// AtRestJob implements bitlog.AtRestJobs.
func (l *Log) AtRestJob(ctx context.Context, k bitlog.AtRestKey) (bitlog.AtRestJob, error) {
	j := bitlog.AtRestJob{AtRestKey: k}
	var submitted *time.Time
	err := l.pool.QueryRow(ctx, sqlAtRestJobLock, keyArgs(k)...).Scan(&j.JobID, &j.State, &j.Objects, &j.Reason, &submitted, &j.Updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return bitlog.AtRestJob{}, fmt.Errorf("%w: %s", bitlog.ErrNoAtRestJob, k)
	}
	if err != nil {
		return bitlog.AtRestJob{}, fmt.Errorf("milldb: at-rest job %s: %w", k, err)
	}
	if submitted != nil {
		j.Submitted = submitted.UTC()
	}
	j.Updated = j.Updated.UTC()
	return j, nil
}

func scanObject(row pgx.Row) (bitlog.AtRestObject, error) {
	var o bitlog.AtRestObject
	err := row.Scan(&o.ContentID, &o.Size, &o.StorageClass, &o.Reported, &o.OK, &o.Checksum, &o.Error)
	return o, err
}

// AtRestObject implements bitlog.AtRestJobs.
func (l *Log) AtRestObject(ctx context.Context, k bitlog.AtRestKey, contentID string) (bitlog.AtRestObject, error) {
	o, err := scanObject(l.pool.QueryRow(ctx, sqlAtRestObject, k.RunID, k.Account, k.StoreID, k.SpaceID, contentID))
	if errors.Is(err, pgx.ErrNoRows) {
		return bitlog.AtRestObject{}, fmt.Errorf("%w: object %q of %s", bitlog.ErrNoAtRestJob, contentID, k)
	}
	if err != nil {
		return bitlog.AtRestObject{}, fmt.Errorf("milldb: at-rest object of %s: %w", k, err)
	}
	return o, nil
}

// AtRestObjects implements bitlog.AtRestJobs.
func (l *Log) AtRestObjects(ctx context.Context, k bitlog.AtRestKey, after string, limit int) ([]bitlog.AtRestObject, bool, error) {
	if _, err := l.AtRestJob(ctx, k); err != nil {
		return nil, false, err
	}
	limit = bitlog.PageSize(limit)
	rows, err := l.pool.Query(ctx, sqlAtRestObjects, k.RunID, k.Account, k.StoreID, k.SpaceID, after, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("milldb: at-rest objects of %s: %w", k, err)
	}
	defer rows.Close()
	var out []bitlog.AtRestObject
	for rows.Next() {
		o, err := scanObject(rows)
		if err != nil {
			return nil, false, fmt.Errorf("milldb: at-rest objects of %s: %w", k, err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("milldb: at-rest objects of %s: %w", k, err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// OpenAtRestJobs implements bitlog.AtRestJobs.
func (l *Log) OpenAtRestJobs(ctx context.Context) ([]bitlog.AtRestJob, error) {
	rows, err := l.pool.Query(ctx, sqlAtRestOpen)
	if err != nil {
		return nil, fmt.Errorf("milldb: open at-rest jobs: %w", err)
	}
	defer rows.Close()
	var out []bitlog.AtRestJob
	for rows.Next() {
		var j bitlog.AtRestJob
		var submitted *time.Time
		if err := rows.Scan(&j.RunID, &j.Account, &j.StoreID, &j.SpaceID, &j.JobID, &j.State, &j.Objects, &j.Reason, &submitted, &j.Updated); err != nil {
			return nil, fmt.Errorf("milldb: open at-rest jobs: %w", err)
		}
		if submitted != nil {
			j.Submitted = submitted.UTC()
		}
		j.Updated = j.Updated.UTC()
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("milldb: open at-rest jobs: %w", err)
	}
	return out, nil
}
