package milldb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TrackingTable records applied migrations: version, name, applied_at.
const TrackingTable = "mill_migrations"

// lockClass is the first key of the advisory lock migrations hold; the
// second is a hash of the current schema, so migrating one schema does not
// wait for another.
const lockClass = 0x6d696c6c // "mill"

// Direction of a migration step.
type Direction string

// Directions.
const (
	DirectionUp   Direction = "up"
	DirectionDown Direction = "down"
)

// Step is one migration applied or reverted by Migrate, Up or Down.
type Step struct {
	Migration Migration
	Direction Direction
	Duration  time.Duration
}

// MigrationStatus is one known migration and whether it is applied.
type MigrationStatus struct {
	Version   int
	Name      string
	Applied   bool
	AppliedAt time.Time // zero when not applied
}

// ErrUnknownVersion is returned when the database records a migration this
// build does not know (a newer binary migrated it), or a target version that
// does not exist is asked for.
var ErrUnknownVersion = errors.New("unknown migration version")

// Up applies every pending migration. It returns the steps taken (none when
// the database is current).
func Up(ctx context.Context, pool *pgxpool.Pool) ([]Step, error) {
	migs, err := Migrations()
	if err != nil {
		return nil, err
	}
	return migrate(ctx, pool, migs, len(migs), -1)
}

// Down reverts the latest steps applied migrations (all of them when steps
// exceeds the number applied). steps must be positive.
func Down(ctx context.Context, pool *pgxpool.Pool, steps int) ([]Step, error) {
	if steps <= 0 {
		return nil, fmt.Errorf("milldb: down: steps must be positive, got %d", steps)
	}
	migs, err := Migrations()
	if err != nil {
		return nil, err
	}
	return migrate(ctx, pool, migs, -1, steps)
}

// Migrate brings the database to version target: applying pending
// migrations up to it, or reverting those above it. Target 0 reverts
// everything; a target beyond the latest known version is an error.
func Migrate(ctx context.Context, pool *pgxpool.Pool, target int) ([]Step, error) {
	migs, err := Migrations()
	if err != nil {
		return nil, err
	}
	if target < 0 || target > len(migs) {
		return nil, fmt.Errorf("milldb: migrate to %d: %w (known: 0 to %d)", target, ErrUnknownVersion, len(migs))
	}
	return migrate(ctx, pool, migs, target, -1)
}

// Status lists every known migration with its applied time. It reads only:
// on a database never migrated, everything is pending. A recorded version
// this build does not know is an error wrapping ErrUnknownVersion.
func Status(ctx context.Context, pool *pgxpool.Pool) ([]MigrationStatus, error) {
	migs, err := Migrations()
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("milldb: status: %w", err)
	}
	defer conn.Release()
	applied, err := readApplied(ctx, conn.Conn())
	if err != nil {
		return nil, fmt.Errorf("milldb: status: %w", err)
	}
	if err := checkKnown(applied, migs); err != nil {
		return nil, fmt.Errorf("milldb: status: %w", err)
	}
	out := make([]MigrationStatus, len(migs))
	for i, m := range migs {
		at, ok := applied[m.Version]
		out[i] = MigrationStatus{Version: m.Version, Name: m.Name, Applied: ok, AppliedAt: at}
	}
	return out, nil
}

// Pending returns the number of known migrations not yet applied.
func Pending(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	st, err := Status(ctx, pool)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range st {
		if !s.Applied {
			n++
		}
	}
	return n, nil
}

// migrate runs under the advisory lock. Exactly one of target (>= 0) and
// downSteps (> 0) selects what to do; the applied set is read after the lock
// is held, so a concurrent migrator's work is seen and not repeated.
func migrate(ctx context.Context, pool *pgxpool.Pool, migs []Migration, target, downSteps int) (steps []Step, err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("milldb: migrate: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1, hashtext(coalesce(current_schema(), '')))", int32(lockClass)); err != nil {
		conn.Release()
		return nil, fmt.Errorf("milldb: migrate: take advisory lock: %w", err)
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, uerr := conn.Exec(uctx, "SELECT pg_advisory_unlock($1, hashtext(coalesce(current_schema(), '')))", int32(lockClass)); uerr != nil {
			// Never return a connection holding the lock to the pool:
			// closing the session releases it.
			_ = conn.Conn().Close(uctx)
		}
		conn.Release()
	}()

	c := conn.Conn()
	if _, err := c.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+TrackingTable+` (
		version    integer     PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return nil, fmt.Errorf("milldb: migrate: create %s: %w", TrackingTable, err)
	}
	applied, err := readApplied(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("milldb: migrate: %w", err)
	}
	if err := checkKnown(applied, migs); err != nil {
		return nil, fmt.Errorf("milldb: migrate: %w", err)
	}
	if downSteps > 0 {
		// Revert the downSteps highest applied versions.
		target = 0
		n := 0
		for i := len(migs) - 1; i >= 0; i-- {
			if _, ok := applied[migs[i].Version]; !ok {
				continue
			}
			n++
			if n > downSteps {
				target = migs[i].Version
				break
			}
		}
	}
	// Up: apply every unapplied migration at or below target, in order.
	for _, m := range migs {
		if m.Version > target {
			break
		}
		if _, ok := applied[m.Version]; ok {
			continue
		}
		st, err := runStep(ctx, c, m, DirectionUp)
		if err != nil {
			return steps, err
		}
		steps = append(steps, st)
	}
	// Down: revert every applied migration above target, newest first.
	for i := len(migs) - 1; i >= 0; i-- {
		m := migs[i]
		if m.Version <= target {
			break
		}
		if _, ok := applied[m.Version]; !ok {
			continue
		}
		st, err := runStep(ctx, c, m, DirectionDown)
		if err != nil {
			return steps, err
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// runStep applies or reverts m in one transaction together with its
// tracking row, so a failed migration leaves no trace.
func runStep(ctx context.Context, c *pgx.Conn, m Migration, dir Direction) (Step, error) {
	start := time.Now()
	err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		sql := m.Up
		if dir == DirectionDown {
			sql = m.Down
		}
		if _, err := tx.Exec(ctx, sql); err != nil {
			return err
		}
		var err error
		if dir == DirectionUp {
			_, err = tx.Exec(ctx, "INSERT INTO "+TrackingTable+" (version, name) VALUES ($1, $2)", m.Version, m.Name)
		} else {
			_, err = tx.Exec(ctx, "DELETE FROM "+TrackingTable+" WHERE version = $1", m.Version)
		}
		return err
	})
	if err != nil {
		return Step{}, fmt.Errorf("milldb: migration %s %s: %w", m.ID(), dir, err)
	}
	return Step{Migration: m, Direction: dir, Duration: time.Since(start)}, nil
}

// readApplied returns the applied versions and their times; an absent
// tracking table means none.
func readApplied(ctx context.Context, c *pgx.Conn) (map[int]time.Time, error) {
	var exists bool
	if err := c.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", TrackingTable).Scan(&exists); err != nil {
		return nil, fmt.Errorf("look for %s: %w", TrackingTable, err)
	}
	out := map[int]time.Time{}
	if !exists {
		return out, nil
	}
	rows, err := c.Query(ctx, "SELECT version, applied_at FROM "+TrackingTable)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", TrackingTable, err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		var at time.Time
		if err := rows.Scan(&v, &at); err != nil {
			return nil, fmt.Errorf("read %s: %w", TrackingTable, err)
		}
		out[v] = at
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", TrackingTable, err)
	}
	return out, nil
}

func checkKnown(applied map[int]time.Time, migs []Migration) error {
	for v := range applied {
		if v < 1 || v > len(migs) {
			return fmt.Errorf("database records migration %03d but this build knows only 001 to %03d (was it migrated by a newer Mill?): %w", v, len(migs), ErrUnknownVersion)
		}
	}
	return nil
}
