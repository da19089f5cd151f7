package milldb_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/milldb"
)

func open(t *testing.T) *milldb.DB {
	t.Helper()
	url := testenv.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	db, err := milldb.Open(ctx, url, milldb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

func tables(t *testing.T, db *milldb.DB) map[string]bool {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(),
		`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

func ids(steps []milldb.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, string(s.Direction)+":"+s.Migration.ID())
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMigrateUpDownUp(t *testing.T) {
	t.Parallel()
	db := open(t)
	ctx := context.Background()
	all := []string{"content_index", "bit_log", "bit_report", "space_stats", "bit_run_space", "bit_verdict", "bit_at_rest_job", "bit_at_rest_object", "run_record", "run_outcome"}

	st, err := milldb.Status(ctx, db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Applied {
			t.Fatalf("fresh schema: %d already applied", s.Version)
		}
	}
	if tables(t, db)[milldb.TrackingTable] {
		t.Fatal("Status created the tracking table; it must only read")
	}

	migs, err := milldb.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var wantUp, wantDown []string // every migration, in order; the reverse
	for _, m := range migs {
		wantUp = append(wantUp, "up:"+m.ID())
		wantDown = append([]string{"down:" + m.ID()}, wantDown...)
	}
	for round := 1; round <= 2; round++ {
		steps, err := milldb.Up(ctx, db.Pool)
		if err != nil {
			t.Fatalf("round %d up: %v", round, err)
		}
		if want := wantUp; !equal(ids(steps), want) {
			t.Fatalf("round %d up steps = %v, want %v", round, ids(steps), want)
		}
		got := tables(t, db)
		for _, tb := range append(all, milldb.TrackingTable) {
			if !got[tb] {
				t.Fatalf("round %d: table %s missing after up; have %v", round, tb, got)
			}
		}
		exerciseSchema(t, db)
		again, err := milldb.Up(ctx, db.Pool)
		if err != nil || len(again) != 0 {
			t.Fatalf("second up: steps %v err %v, want nothing to do", ids(again), err)
		}
		st, err := milldb.Status(ctx, db.Pool)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range st {
			if !s.Applied || s.AppliedAt.IsZero() || time.Since(s.AppliedAt) > time.Hour {
				t.Fatalf("status after up: %+v", s)
			}
		}

		// One step down, then all the way down.
		steps, err = milldb.Down(ctx, db.Pool, 1)
		if err != nil || !equal(ids(steps), wantDown[:1]) {
			t.Fatalf("down 1: %v %v", ids(steps), err)
		}
		if n, err := milldb.Pending(ctx, db.Pool); err != nil || n != 1 {
			t.Fatalf("pending after down 1 = %d, %v; want 1", n, err)
		}
		steps, err = milldb.Down(ctx, db.Pool, 99)
		if err != nil || !equal(ids(steps), wantDown[1:]) {
			t.Fatalf("down all: %v %v", ids(steps), err)
		}
		got = tables(t, db)
		for _, tb := range all {
			if got[tb] {
				t.Fatalf("round %d: table %s still there after down", round, tb)
			}
		}
		if steps, err := milldb.Down(ctx, db.Pool, 1); err != nil || len(steps) != 0 {
			t.Fatalf("down on an empty database: %v %v", ids(steps), err)
		}
	}

	// Migrate to a version in the middle, then past the end.
	if steps, err := milldb.Migrate(ctx, db.Pool, 2); err != nil || !equal(ids(steps), []string{"up:001_content_index", "up:002_bit_log"}) {
		t.Fatalf("migrate 2: %v %v", ids(steps), err)
	}
	if steps, err := milldb.Migrate(ctx, db.Pool, 1); err != nil || !equal(ids(steps), []string{"down:002_bit_log"}) {
		t.Fatalf("migrate 1: %v %v", ids(steps), err)
	}
	if _, err := milldb.Migrate(ctx, db.Pool, len(migs)+1); !errors.Is(err, milldb.ErrUnknownVersion) {
		t.Fatalf("migrate %d: %v, want ErrUnknownVersion", len(migs)+1, err)
	}
	if _, err := milldb.Down(ctx, db.Pool, 0); err == nil {
		t.Fatal("down 0 steps: no error")
	}
}

// exerciseSchema checks the keys and constraints the processors rely on.
func exerciseSchema(t *testing.T, db *milldb.DB) {
	t.Helper()
	ctx := context.Background()
	exec := func(sql string, args ...any) error {
		_, err := db.Pool.Exec(ctx, sql, args...)
		return err
	}
	mustExec := func(sql string, args ...any) {
		t.Helper()
		if err := exec(sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	violates := func(err error, code string) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == code
	}

	// content_index: byte-wise ordering for keyset pagination.
	for _, id := range []string{"b", "B", "a/b", "a-b", "a", "Z", "é"} {
		mustExec(`INSERT INTO content_index (account, store_id, space_id, content_id, checksum, size, modified)
			VALUES ('acct', 's1', 'sp', $1, 'md5', 1, now())`, id)
	}
	if err := exec(`INSERT INTO content_index (account, store_id, space_id, content_id, modified) VALUES ('acct','s1','sp','a', now())`); !violates(err, "23505") {
		t.Fatalf("duplicate content_index key: %v, want unique violation", err)
	}
	if err := exec(`INSERT INTO content_index (account, store_id, space_id, content_id, properties, modified) VALUES ('acct','s1','sp','x', '[1]', now())`); !violates(err, "23514") {
		t.Fatalf("non-object properties: %v, want check violation", err)
	}
	var page []string
	after := ""
	for {
		rows, err := db.Pool.Query(ctx, `SELECT content_id FROM content_index
			WHERE account = 'acct' AND store_id = 's1' AND space_id = 'sp' AND content_id > $1
			ORDER BY content_id LIMIT 3`, after)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		page = append(page, got...)
		after = got[len(got)-1]
	}
	if want := []string{"B", "Z", "a", "a-b", "a/b", "b", "é"}; !equal(page, want) {
		t.Fatalf("keyset pages = %v, want byte order %v", page, want)
	}

	// bit_log: one row per item per run; results checked.
	upsert := `INSERT INTO bit_log (run_id, account, store_id, store_kind, space_id, content_id, result, case_number, details)
		VALUES ('r1', 'acct', 's1', 's3', 'sp', 'a', $1, 1, $2)
		ON CONFLICT ON CONSTRAINT bit_log_item_per_run
		DO UPDATE SET result = excluded.result, details = excluded.details, checked_at = now()`
	mustExec(upsert, "FAILURE", "first delivery")
	mustExec(upsert, "SUCCESS", "redelivered")
	var n int
	var details string
	if err := db.Pool.QueryRow(ctx, `SELECT count(*), max(details) FROM bit_log WHERE run_id = 'r1'`).Scan(&n, &details); err != nil || n != 1 || details != "redelivered" {
		t.Fatalf("bit_log after redelivery: %d rows, %q, %v; want 1 row updated", n, details, err)
	}
	if err := exec(`INSERT INTO bit_log (run_id, account, store_id, store_kind, space_id, content_id, result) VALUES ('r1','acct','s1','s3','sp','b','MAYBE')`); !violates(err, "23514") {
		t.Fatalf("bad bit_log result: %v, want check violation", err)
	}

	// bit_report: one row per space per run.
	report := `INSERT INTO bit_report (run_id, account, store_id, space_id, result, total_count, success_count)
		VALUES ('r1', 'acct', 's1', 'sp', 'SUCCESS', 7, 7)`
	mustExec(report)
	if err := exec(report); !violates(err, "23505") {
		t.Fatalf("duplicate bit_report: %v, want unique violation", err)
	}
	if err := exec(`INSERT INTO bit_report (run_id, account, store_id, space_id, result, total_count) VALUES ('r2','acct','s1','sp','SUCCESS',-1)`); !violates(err, "23514") {
		t.Fatalf("negative count: %v, want check violation", err)
	}

	// space_stats: one row per space per run, counts not negative.
	stats := `INSERT INTO space_stats (run_id, account, store_id, space_id, item_count, byte_count, started_at, measured_at)
		VALUES ('r1', 'acct', 's1', 'sp', 7, 700, now(), now())`
	mustExec(stats)
	if err := exec(stats); !violates(err, "23505") {
		t.Fatalf("duplicate space_stats: %v, want unique violation", err)
	}
	if err := exec(`INSERT INTO space_stats (run_id, account, store_id, space_id, item_count, byte_count, started_at, measured_at)
		VALUES ('r2', 'acct', 's1', 'sp', 1, -1, now(), now())`); !violates(err, "23514") {
		t.Fatalf("negative byte count: %v, want check violation", err)
	}
}

func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	url := testenv.Schema(t)
	ctx := context.Background()
	const n = 4
	var wg sync.WaitGroup
	total := make([]int, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Separate pools: separate "processes".
			db, err := milldb.Open(ctx, url, milldb.Config{MaxConns: 2})
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			steps, err := milldb.Up(ctx, db.Pool)
			total[i], errs[i] = len(steps), err
		}()
	}
	wg.Wait()
	sum := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("migrator %d: %v", i, errs[i])
		}
		sum += total[i]
	}
	migs, err := milldb.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if sum != len(migs) {
		t.Fatalf("concurrent migrators applied %v steps in all, want exactly %d", total, len(migs))
	}
}

func TestStatusRejectsUnknownVersion(t *testing.T) {
	t.Parallel()
	db := open(t)
	ctx := context.Background()
	if _, err := milldb.Up(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO mill_migrations (version, name) VALUES (99, 'from_the_future')`); err != nil {
		t.Fatal(err)
	}
	if _, err := milldb.Status(ctx, db.Pool); !errors.Is(err, milldb.ErrUnknownVersion) {
		t.Fatalf("status: %v, want ErrUnknownVersion", err)
	}
	if _, err := milldb.Up(ctx, db.Pool); !errors.Is(err, milldb.ErrUnknownVersion) {
		t.Fatalf("up: %v, want ErrUnknownVersion", err)
	}
}

func TestFailedMigrationLeavesNoTrace(t *testing.T) {
	t.Parallel()
	db := open(t)
	ctx := context.Background()
	// Occupy a name migration 002 creates: it fails, 001 stays applied.
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE bit_log (x int)`); err != nil {
		t.Fatal(err)
	}
	steps, err := milldb.Up(ctx, db.Pool)
	if err == nil {
		t.Fatal("up over a conflicting table: no error")
	}
	if !equal(ids(steps), []string{"up:001_content_index"}) {
		t.Fatalf("steps before the failure = %v", ids(steps))
	}
	st, err := milldb.Status(ctx, db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if !st[0].Applied || st[1].Applied || st[2].Applied {
		t.Fatalf("status after failed 002: %+v", st)
	}
}

// TestBitLogByMonthKeepsRows: migration 005 moves the rows of the
// unpartitioned bit_log into their months' partitions (a run's month from
// its ID, a row outside a run by its check time); its down migration
// brings them back; up again keeps them.
func TestBitLogByMonthKeepsRows(t *testing.T) {
	t.Parallel()
	db := open(t)
	ctx := context.Background()
	if _, err := milldb.Migrate(ctx, db.Pool, 4); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ run, content, at string }{
		{"20250105T010000Z", "a", "2025-01-05T02:00:00Z"},
		{"20250105T010000Z", "b", "2025-02-01T00:10:00Z"}, // checked in the run's next month
		{"20250203T000000Z", "a", "2025-02-03T01:00:00Z"},
		{"adhoc", "a", "2025-03-15T00:00:00Z"},
		{"", "a", "2025-04-02T00:00:00Z"},
	} {
		if _, err := db.Pool.Exec(ctx, `INSERT INTO bit_log (run_id, account, store_id, store_kind, space_id, content_id, result, case_number, checked_at)
			VALUES ($1, 'acme', '1', 'fs', 'photos', $2, 'SUCCESS', 1, $3)`, r.run, r.content, r.at); err != nil {
			t.Fatal(err)
		}
	}
	where := func() map[string]string {
		t.Helper()
		rows, err := db.Pool.Query(ctx, `SELECT run_id || '/' || content_id, tableoid::regclass::text FROM bit_log`)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for rows.Next() {
			var k, p string
			if err := rows.Scan(&k, &p); err != nil {
				t.Fatal(err)
			}
			out[k] = p
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for round := 1; round <= 2; round++ {
		if _, err := milldb.Migrate(ctx, db.Pool, 5); err != nil {
			t.Fatalf("round %d: up to 5: %v", round, err)
		}
		want := map[string]string{"20250105T010000Z/a": "bit_log_y2025m01", "20250105T010000Z/b": "bit_log_y2025m01",
			"20250203T000000Z/a": "bit_log_y2025m02", "adhoc/a": "bit_log_y2025m03", "/a": "bit_log_y2025m04"}
		if got := where(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d: rows by partition %v, want %v", round, got, want)
		}
		if c, err := pgbitlog.New(db.Pool).Count(ctx, "20250105T010000Z", "acme", "1", "photos"); err != nil || c.Total != 2 {
			t.Fatalf("round %d: count of the January run %+v %v", round, c, err)
		}
		if _, err := milldb.Migrate(ctx, db.Pool, 4); err != nil {
			t.Fatalf("round %d: down to 4: %v", round, err)
		}
		got := where()
		if len(got) != 5 {
			t.Fatalf("round %d: after down, %d rows: %v", round, len(got), got)
		}
		for k, p := range got {
			if p != "bit_log" {
				t.Fatalf("round %d: after down, %s is in %s", round, k, p)
			}
		}
	}
}

// A server that answers and refuses (a wrong password) is not said to be
// unreachable.
func TestOpenRefusedIsNotUnreachable(t *testing.T) {
	u, err := url.Parse(testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("mill-no-such-user", "wrong")
	db, err := milldb.Open(t.Context(), u.String(), milldb.Config{})
	if err == nil {
		db.Close()
		t.Fatal("Open with a wrong user succeeded")
	}
	var ue *milldb.UnreachableError
	if errors.As(err, &ue) {
		t.Fatalf("a refused login is reported as unreachable: %v", err)
	}
}
