package pgbitlog_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/milldb"
)

// benchRetentionRows is MILL_BENCH_BITLOG_ROWS, or a default that keeps
// `make bench` quick; the acceptance size is 10 000 000.
func benchRetentionRows() int64 {
	if n, err := strconv.ParseInt(os.Getenv("MILL_BENCH_BITLOG_ROWS"), 10, 64); err == nil && n >= 20000 {
		return n
	}
	return 200000
}

// BenchmarkBitLogRetention: a bit log of MILL_BENCH_BITLOG_ROWS synthetic
// rows (default 200 000) over 20 months, of which retention keeps 13, so
// DropMonths drops the 7 expired months (35% of the rows), after a
// checkpoint (an expired month is a year old, long written to disk). It reports the
// time DropMonths takes (drop-ms), and as the baseline measured in the same
// run, what deleting those rows would take (delete-est-ms: a DELETE of one
// kept month's rows, timed and scaled to the rows dropped).
func BenchmarkBitLogRetention(b *testing.B) {
	pool := testenv.Pool(b)
	ctx := context.Background()
	if _, err := milldb.Up(ctx, pool); err != nil {
		b.Fatal(err)
	}
	n := benchRetentionRows()
	const months, keep = 20, 13
	now := time.Now().UTC()
	cutoff := bitlog.Cutoff(now, keep)
	first := bitlog.MonthOf(now).AddDate(0, -(months - 1), 0)
	l := pgbitlog.New(pool)
	perMonth := n / months
	start := time.Now()
	for i := range months {
		m := first.AddDate(0, i, 0)
		run := m.Format("20060102") + "T030000Z"
		// Record makes the month's partition; the rest is one INSERT … SELECT.
		if err := l.Record(ctx, bitlog.Row{RunID: run, Account: "acme", StoreID: "1", SpaceID: "space-0", ContentID: "first", Result: bitlog.ResultSuccess}); err != nil {
			b.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `
INSERT INTO bit_log (run_month, run_id, account, store_id, store_kind, space_id, content_id, result, case_number,
    content_checksum, storage_checksum, index_checksum, audit_checksum, details, checked_at)
SELECT $1::date, $2, 'acme', '1', 's3', 'space-' || (g % 100), 'item-' || lpad(g::text, 9, '0'),
    CASE WHEN g % 1000 = 0 THEN 'FAILURE' ELSE 'SUCCESS' END, CASE WHEN g % 1000 = 0 THEN 2 ELSE 1 END,
    md5(g::text), md5(g::text), md5(g::text), md5(g::text), '', $1::timestamptz + interval '3 hours'
FROM generate_series(1, $3::bigint - 1) g`, m, run, perMonth); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d rows in %d months written in %v", perMonth*months, months, time.Since(start).Round(time.Millisecond))
	if _, err := pool.Exec(ctx, "ANALYZE bit_log"); err != nil {
		b.Fatal(err)
	}
	// Expired months were written a year ago and checkpointed long since:
	// flush what this benchmark just wrote, so the drop does not race the
	// checkpointer writing those very pages (skipped without the right).
	if _, err := pool.Exec(ctx, "CHECKPOINT"); err != nil {
		b.Logf("no checkpoint before the drop: %v", err)
	}

	b.ResetTimer()
	t0 := time.Now()
	dropped, err := l.DropMonths(ctx, cutoff)
	drop := time.Since(t0)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	var droppedRows int64
	for _, m := range dropped {
		droppedRows += m.Rows
	}
	if len(dropped) != months-keep {
		b.Fatalf("dropped %d months, want %d", len(dropped), months-keep)
	}
	var left int64
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM bit_log").Scan(&left); err != nil {
		b.Fatal(err)
	}
	if want := perMonth * keep; left != want {
		b.Fatalf("%d rows left, want %d", left, want)
	}
	// Baseline: delete one kept month's rows.
	t0 = time.Now()
	tag, err := pool.Exec(ctx, "DELETE FROM bit_log WHERE run_month = $1", cutoff)
	del := time.Since(t0)
	if err != nil || tag.RowsAffected() != perMonth {
		b.Fatalf("baseline delete: %v rows, %v", tag.RowsAffected(), err)
	}
	est := del.Seconds() * 1000 * float64(perMonth*(months-keep)) / float64(perMonth)
	b.ReportMetric(float64(perMonth*months), "rows")
	b.ReportMetric(float64(perMonth*(months-keep)), "rows-dropped")
	b.ReportMetric(drop.Seconds()*1000, "drop-ms")
	b.ReportMetric(est, "delete-est-ms")
	b.ReportMetric(drop.Seconds()*1000/est, "drop/delete")
	b.Logf("dropped %d months (%d rows, PostgreSQL's estimate %d) in %v; deleting one month's %d rows took %v",
		len(dropped), perMonth*(months-keep), droppedRows, drop.Round(time.Microsecond), perMonth, del.Round(time.Millisecond))
}
