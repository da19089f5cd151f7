// Package pgruns is the PostgreSQL runs.Store, on the run_record and
// run_outcome tables (pkg/milldb migration NNN_runs). Record takes the run's
// row lock, so the outcome row and the run's counts change together and
// concurrent Workmen count each task once; the statement that updates the
// counts also adds the outcome's requests to the run's
// (run_record.requests, migration NNN_run_requests; before it is applied,
// outcomes are recorded without their requests).
package pgruns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/internal/base/pgerr"
	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/task"
)

// Store is a runs.Store on PostgreSQL.
type Store struct{ pool *pgxpool.Pool }

// New returns a store on pool (migrated with milldb.Up).
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

var _ runs.Store = (*Store)(nil)

func at(t time.Time) any {
	if t.IsZero() {
		return nil // the column default or now()
	}
	return runs.Truncate(t)
}

// Start implements runs.Store.
func (s *Store) Start(ctx context.Context, r runs.Run) error {
	if err := r.Validate(); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO run_record (producer, run_id, scope, started_at)
		VALUES ($1, $2, $3, COALESCE($4, now())) ON CONFLICT DO NOTHING`, r.Producer, r.ID, r.Scope, at(r.Started))
	if err != nil {
		return fmt.Errorf("pgruns: start %s %s: %w", r.Producer, r.ID, err)
	}
	return nil
}

func noRun(producer, id string) error { return fmt.Errorf("%w: %s %q", runs.ErrNoRun, producer, id) }

// Enqueued implements runs.Store.
func (s *Store) Enqueued(ctx context.Context, producer, id string, n int64) error {
	if n < 0 {
		return fmt.Errorf("%w: negative count %d", runs.ErrInvalid, n)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE run_record SET enqueued = $3 WHERE producer = $1 AND run_id = $2`, producer, id, n)
	if err != nil {
		return fmt.Errorf("pgruns: enqueued %s %s: %w", producer, id, err)
	}
	if tag.RowsAffected() == 0 {
		return noRun(producer, id)
	}
	return nil
}

// Listed implements runs.Store.
func (s *Store) Listed(ctx context.Context, producer, id string, n int64, t time.Time) error {
	if n < 0 {
		return fmt.Errorf("%w: negative count %d", runs.ErrInvalid, n)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE run_record SET enqueued = $3, listed_at = COALESCE($4, now())
		WHERE producer = $1 AND run_id = $2`, producer, id, n, at(t))
	if err != nil {
		return fmt.Errorf("pgruns: listed %s %s: %w", producer, id, err)
	}
	if tag.RowsAffected() == 0 {
		return noRun(producer, id)
	}
	return nil
}

// Record implements runs.Store.
func (s *Store) Record(ctx context.Context, o runs.Outcome) (runs.Status, error) {
	if err := o.Validate(); err != nil {
		return runs.Status{}, err
	}
	st, err := s.record(ctx, o)
	if pgerr.Is(err, pgerr.UndefinedColumn) && len(o.Requests) > 0 {
		// A database without the requests column (its migration not
		// applied yet): the outcome counts, its requests do not.
		o.Requests = nil
		st, err = s.record(ctx, o)
	}
	if pgerr.Is(err, pgerr.UndefinedTable) {
		// A database without the runs tables (its migration not applied)
		// has no run a producer recorded: the claim is refused, not the
		// task failed.
		return st, noRun(o.Producer, o.RunID)
	}
	if err != nil && !errors.Is(err, runs.ErrNoRun) {
		err = fmt.Errorf("pgruns: record %s %s: %w", o.Producer, o.RunID, err)
	}
	return st, err
}

func (s *Store) record(ctx context.Context, o runs.Outcome) (runs.Status, error) {
	// The requests are added by the statement that updates the run's
	// counts: no statement more (none when there are none).
	var reqs []byte
	if len(o.Requests) > 0 {
		b, err := json.Marshal(o.Requests)
		if err != nil {
			return runs.Status{}, err
		}
		reqs = b
	}
	var st runs.Status
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var exists bool
		err := tx.QueryRow(ctx, `SELECT true FROM run_record WHERE producer = $1 AND run_id = $2 FOR UPDATE`,
			o.Producer, o.RunID).Scan(&exists)
		if errors.Is(err, pgx.ErrNoRows) {
			return noRun(o.Producer, o.RunID)
		}
		if err != nil {
			return err
		}
		var old string
		err = tx.QueryRow(ctx, `SELECT state FROM run_outcome WHERE producer = $1 AND run_id = $2 AND task_key = $3`,
			o.Producer, o.RunID, o.Key).Scan(&old)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		case runs.State(old).Final():
			// Counted already; a stale copy changes nothing but the
			// requests it made.
			if reqs == nil {
				return nil
			}
			_, err = tx.Exec(ctx, sqlAddRequests, o.Producer, o.RunID, string(reqs))
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO run_outcome (producer, run_id, task_key, state, task_type, item, reason, error, attempts, at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, COALESCE($10, now()))
			ON CONFLICT (producer, run_id, task_key) DO UPDATE SET state = EXCLUDED.state, reason = EXCLUDED.reason,
				error = EXCLUDED.error, attempts = EXCLUDED.attempts, at = EXCLUDED.at`,
			o.Producer, o.RunID, o.Key, string(o.State), string(o.Type), runs.Clip(o.Item), runs.Clip(o.Reason),
			runs.Clip(o.Error), o.Attempts, at(o.At))
		if err != nil {
			return err
		}
		d := map[runs.State]int64{o.State: 1}
		if old != "" {
			d[runs.StateFailed]--
		}
		if reqs == nil {
			_, err = tx.Exec(ctx, sqlCountOutcome+runKey,
				o.Producer, o.RunID, d[runs.StateDone], d[runs.StateFailed], d[runs.StateDead], at(o.At))
			return err
		}
		_, err = tx.Exec(ctx, sqlCountOutcomeRequests,
			o.Producer, o.RunID, d[runs.StateDone], d[runs.StateFailed], d[runs.StateDead], at(o.At), string(reqs))
		return err
	})
	if err == nil {
		st, err = s.Get(ctx, o.Producer, o.RunID)
	}
	return st, err
}

// The run's requests become their sum with the counts of a parameter (a
// JSON object of "service Op": count): reqSumHead + "$n" + reqSumTail.
const (
	reqSumHead = `requests = (SELECT jsonb_object_agg(k, n) FROM (SELECT k, sum(n)::bigint AS n FROM (
		SELECT key AS k, value::bigint AS n FROM jsonb_each_text(run_record.requests)
		UNION ALL SELECT key, value::bigint FROM jsonb_each_text(`
	reqSumTail = `::jsonb)) AS a GROUP BY k) AS b)`
	runKey     = ` WHERE producer = $1 AND run_id = $2`

	// sqlAddRequests adds $3's counts to run $1/$2.
	sqlAddRequests = `UPDATE run_record SET ` + reqSumHead + `$3` + reqSumTail + runKey
	// sqlCountOutcome adds an outcome ($3..$5 done, failed, dead at $6) to
	// run $1/$2; sqlCountOutcomeRequests also its requests ($7).
	sqlCountOutcome = `UPDATE run_record SET done = done + $3, failed = failed + $4, dead = dead + $5,
			first_outcome = LEAST(first_outcome, COALESCE($6, now())), last_outcome = GREATEST(last_outcome, COALESCE($6, now()))`
	sqlCountOutcomeRequests = sqlCountOutcome + `, ` + reqSumHead + `$7` + reqSumTail + runKey
)

// Complete implements runs.Store.
func (s *Store) Complete(ctx context.Context, producer, id, report string, t time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE run_record SET completed_at = COALESCE($4, now()), report = $3
		WHERE producer = $1 AND run_id = $2 AND completed_at IS NULL AND listed_at IS NOT NULL
		AND done + dead >= enqueued`, producer, id, report, at(t))
	if err != nil {
		return false, fmt.Errorf("pgruns: complete %s %s: %w", producer, id, err)
	}
	if tag.RowsAffected() == 1 {
		return true, nil
	}
	if _, err := s.Get(ctx, producer, id); err != nil {
		return false, err
	}
	return false, nil
}

const cols = `producer, run_id, scope, started_at, enqueued, listed_at, done, failed, dead,
	first_outcome, last_outcome, completed_at, report`

func scan(row pgx.CollectableRow) (runs.Status, error) {
	var s runs.Status
	var listed, first, last, completed *time.Time
	err := row.Scan(&s.Producer, &s.ID, &s.Scope, &s.Started, &s.Enqueued, &listed, &s.Done, &s.Failed, &s.Dead,
		&first, &last, &completed, &s.Report)
	utc := func(p *time.Time) time.Time {
		if p == nil {
			return time.Time{}
		}
		return p.UTC()
	}
	s.Started = s.Started.UTC()
	s.Listed, s.FirstOutcome, s.LastOutcome, s.Completed = utc(listed), utc(first), utc(last), utc(completed)
	return s, err
}

// Get implements runs.Store.
func (s *Store) Get(ctx context.Context, producer, id string) (runs.Status, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+cols+` FROM run_record WHERE producer = $1 AND run_id = $2`, producer, id)
	st, err := pgx.CollectExactlyOneRow(rows, scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, noRun(producer, id)
	}
	if err != nil {
		return st, fmt.Errorf("pgruns: get %s %s: %w", producer, id, err)
	}
	return st, nil
}

// List implements runs.Store.
func (s *Store) List(ctx context.Context, limit int) ([]runs.Status, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+cols+` FROM run_record ORDER BY started_at DESC, producer, run_id LIMIT $1`, max(limit, 0))
	out, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("pgruns: list: %w", err)
	}
	return out, nil
}

// Failures implements runs.Store.
func (s *Store) Failures(ctx context.Context, producer, id string, limit int) ([]runs.Outcome, error) {
	if _, err := s.Get(ctx, producer, id); err != nil {
		return nil, err
	}
	rows, _ := s.pool.Query(ctx, `SELECT task_key, state, task_type, item, reason, error, attempts, at FROM run_outcome
		WHERE producer = $1 AND run_id = $2 AND state <> 'done'
		ORDER BY state = 'failed', at, task_key LIMIT $3`, producer, id, max(limit, 0))
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (runs.Outcome, error) {
		o := runs.Outcome{Producer: producer, RunID: id}
		var state, typ string
		err := row.Scan(&o.Key, &state, &typ, &o.Item, &o.Reason, &o.Error, &o.Attempts, &o.At)
		o.State, o.Type, o.At = runs.State(state), task.Type(typ), o.At.UTC()
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgruns: failures %s %s: %w", producer, id, err)
	}
	return out, nil
}

// Attempts implements runs.Store.
func (s *Store) Attempts(ctx context.Context, producer, id string) (map[task.Type]int64, error) {
	if _, err := s.Get(ctx, producer, id); err != nil {
		return nil, err
	}
	rows, _ := s.pool.Query(ctx, `SELECT task_type, sum(GREATEST(attempts, 1))::bigint FROM run_outcome
		WHERE producer = $1 AND run_id = $2 GROUP BY task_type`, producer, id)
	out := map[task.Type]int64{}
	var typ string
	var n int64
	_, err := pgx.ForEachRow(rows, []any{&typ, &n}, func() error {
		out[task.Type(typ)] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgruns: attempts %s %s: %w", producer, id, err)
	}
	return out, nil
}

// Requests implements runs.Store.
func (s *Store) Requests(ctx context.Context, producer, id string) (map[string]int64, error) {
	var out map[string]int64
	err := s.pool.QueryRow(ctx, `SELECT requests FROM run_record WHERE producer = $1 AND run_id = $2`, producer, id).Scan(&out)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, noRun(producer, id)
	}
	if err != nil {
		return nil, fmt.Errorf("pgruns: requests %s %s: %w", producer, id, err)
	}
	return out, nil
}

// AddRequests implements runs.Store.
func (s *Store) AddRequests(ctx context.Context, producer, id string, reqs map[string]int64) error {
	if err := runs.CheckRequests(id, reqs); err != nil {
		return err
	}
	if len(reqs) == 0 {
		_, err := s.Get(ctx, producer, id)
		return err
	}
	b, err := json.Marshal(reqs)
	if err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, sqlAddRequests, producer, id, string(b))
	if err != nil {
		return fmt.Errorf("pgruns: add requests %s %s: %w", producer, id, err)
	}
	if tag.RowsAffected() == 0 {
		return noRun(producer, id)
	}
	return nil
}
