package milldb_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/millfleet/mill/pkg/milldb"
)

// TestMigration008: rows of the bit log written before the migration get
// no method (NULL: not a fresh verdict), no bytes and not archived, and
// make no verdict (nothing is backfilled); afterwards the schema refuses
// an unknown method, a negative byte count, and a verdict that is an
// ERROR or not fresh. Down removes the columns and the table, and up
// again works.
func TestMigration008(t *testing.T) {
	t.Parallel()
	db := open(t)
	ctx := context.Background()
	exec := func(sql string, args ...any) error {
		_, err := db.Pool.Exec(ctx, sql, args...)
		return err
	}
	if _, err := milldb.Migrate(ctx, db.Pool, 7); err != nil {
		t.Fatal(err)
	}
	if err := exec(`SELECT bit_log_ensure_month('2024-03-01')`); err != nil {
		t.Fatal(err)
	}
	old := `INSERT INTO bit_log (run_month, run_id, account, store_id, store_kind, space_id, content_id, result, checked_at)
		VALUES ('2024-03-01', '20240301T000000Z', 'acme', '1', 's3', 'photos', $1, $2, '2024-03-01T03:00:00Z')`
	for _, r := range [][2]string{{"a", "SUCCESS"}, {"b", "FAILURE"}} {
		if err := exec(old, r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := milldb.Migrate(ctx, db.Pool, 8); err != nil {
		t.Fatal(err)
	}
	var nulls, zero, archived, verdicts int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE method IS NULL), count(*) FILTER (WHERE bytes = 0),
		count(*) FILTER (WHERE archived) FROM bit_log`).Scan(&nulls, &zero, &archived); err != nil {
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM bit_verdict`).Scan(&verdicts); err != nil {
		t.Fatal(err)
	}
	if nulls != 2 || zero != 2 || archived != 0 || verdicts != 0 {
		t.Fatalf("after up: %d rows without a method, %d of no bytes, %d archived, %d verdicts; want 2, 2, 0, 0", nulls, zero, archived, verdicts)
	}
	check := func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "23514"
	}
	row := `INSERT INTO bit_log (run_month, run_id, account, store_id, store_kind, space_id, content_id, result, method, bytes)
		VALUES ('2024-03-01', '20240301T000000Z', 'acme', '1', 's3', 'photos', 'c', 'SUCCESS', $1, $2)`
	verdict := `INSERT INTO bit_verdict (account, store_id, space_id, content_id, result, method, checked_at)
		VALUES ('acme', '1', 'photos', 'c', $1, $2, now())`
	for _, bad := range []struct {
		what, sql string
		args      []any
	}{
		{"a row of an unknown method", row, []any{"guess", 0}},
		{"a row of a negative byte count", row, []any{"read", -1}},
		{"a verdict that is an ERROR", verdict, []any{"ERROR", "read"}},
		{"a verdict of stored checksums", verdict, []any{"SUCCESS", "stored"}},
		{"a verdict of an unknown method", verdict, []any{"SUCCESS", "guess"}},
	} {
		if err := exec(bad.sql, bad.args...); !check(err) {
			t.Errorf("%s: %v, want a check violation", bad.what, err)
		}
	}
	if err := exec(row, "at-rest", 5); err != nil {
		t.Errorf("a row computed at rest: %v", err)
	}
	if err := exec(verdict, "FAILURE", "at-rest"); err != nil {
		t.Errorf("a FAILURE at rest: %v", err)
	}
	if _, err := milldb.Migrate(ctx, db.Pool, 7); err != nil {
		t.Fatal(err)
	}
	if tables(t, db)["bit_verdict"] {
		t.Fatal("bit_verdict still there after down")
	}
	if err := exec(`SELECT method FROM bit_log`); err == nil {
		t.Fatal("bit_log.method still there after down")
	}
	if _, err := milldb.Migrate(ctx, db.Pool, 8); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
