package milldb_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/millfleet/mill/pkg/milldb"
)

// TestMigration007: SUCCESS reports of no item made before the migration
// become EMPTY (a forged BIT_REPORT claiming 0 items wrote such a SUCCESS),
// others keep their result; afterwards the schema refuses a SUCCESS of no
// item, an EMPTY of some, and run records that are half listed or count
// negatively. Down turns EMPTY back into the SUCCESS the earlier code
// wrote.
func TestMigration007(t *testing.T) {
	t.Parallel()
	db := open(t)
	ctx := context.Background()
	if _, err := milldb.Migrate(ctx, db.Pool, 6); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string, args ...any) error {
		_, err := db.Pool.Exec(ctx, sql, args...)
		return err
	}
	check := func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "23514"
	}
	ins := `INSERT INTO bit_report (run_id, account, store_id, space_id, result, total_count, success_count) VALUES ($1, 'acme', '1', $2, $3, $4, $4)`
	for _, r := range []struct {
		space, result string
		n             int
	}{{"forged", "SUCCESS", 0}, {"checked", "SUCCESS", 3}, {"failed", "ERROR", 0}} {
		if err := exec(ins, "r0", r.space, r.result, r.n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := milldb.Migrate(ctx, db.Pool, 7); err != nil {
		t.Fatal(err)
	}
	results := func() map[string]string {
		t.Helper()
		rows, err := db.Pool.Query(ctx, `SELECT space_id, result FROM bit_report WHERE run_id = 'r0'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var s, r string
			if err := rows.Scan(&s, &r); err != nil {
				t.Fatal(err)
			}
			out[s] = r
		}
		return out
	}
	if got := results(); got["forged"] != "EMPTY" || got["checked"] != "SUCCESS" || got["failed"] != "ERROR" {
		t.Fatalf("after up: %v, want forged EMPTY, checked SUCCESS, failed ERROR", got)
	}
	for _, bad := range []struct {
		what string
		sql  string
		args []any
	}{
		{"a SUCCESS of no item", ins, []any{"r1", "a", "SUCCESS", 0}},
		{"an EMPTY of 2 items", ins, []any{"r1", "b", "EMPTY", 2}},
		{"a listing time without a count", `INSERT INTO bit_run_space (run_id, account, store_id, space_id, listed_at) VALUES ('r1', 'acme', '1', 'a', now())`, nil},
		{"a negative count", `INSERT INTO bit_run_space (run_id, account, store_id, space_id, listed_at, expected) VALUES ('r1', 'acme', '1', 'a', now(), -1)`, nil},
	} {
		if err := exec(bad.sql, bad.args...); !check(err) {
			t.Errorf("%s: %v, want a check violation", bad.what, err)
		}
	}
	if err := exec(ins, "r1", "c", "EMPTY", 0); err != nil {
		t.Errorf("an EMPTY of no item: %v", err)
	}
	if _, err := milldb.Migrate(ctx, db.Pool, 6); err != nil {
		t.Fatal(err)
	}
	if got := results(); got["forged"] != "SUCCESS" {
		t.Fatalf("after down: %v, want forged SUCCESS again", got)
	}
}
