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

// benchVerdictCopies is MILL_BENCH_VERDICTS, or the acceptance size of
// fixity coverage, 1 000 000 copies.
func benchVerdictCopies() int {
	if n, err := strconv.Atoi(os.Getenv("MILL_BENCH_VERDICTS")); err == nil && n >= 1000 {
		return n
	}
	return 1_000_000
}

// BenchmarkVerdicts: one space of MILL_BENCH_VERDICTS copies (default
// 1 000 000) with a verdict each, written in an order unrelated to their
// content IDs (as runs of many spaces interleave), with other spaces'
// verdicts around them. Each iteration reads the space's verdicts whole,
// page after page of bitlog.MaxPageSize, as fixity coverage does: before
// a vacuum (unvacuumed: just after a run wrote them, the index-only scan
// visits the heap) and after (vacuumed: as autovacuum keeps the table).
// It reports copies/s, ns/copy and the allocations.
func BenchmarkVerdicts(b *testing.B) {
	pool := testenv.Pool(b)
	ctx := context.Background()
	if _, err := milldb.Up(ctx, pool); err != nil {
		b.Fatal(err)
	}
	n := benchVerdictCopies()
	start := time.Now()
	// One INSERT … SELECT: the verdicts as Record leaves them, in an order
	// unrelated to their content IDs; 'photos' of store 1 is the space
	// read, smaller spaces of the same content IDs are around it.
	if _, err := pool.Exec(ctx, `
INSERT INTO bit_verdict (account, store_id, space_id, content_id, result, method, archived, checked_at)
SELECT 'acme', s.store, s.space, 'dir-' || (g % 997) || '/' || md5(g::text),
       CASE WHEN g % 5000 = 0 THEN 'FAILURE' ELSE 'SUCCESS' END,
       CASE WHEN g % 10 = 0 THEN 'at-rest' ELSE 'read' END, g % 10 = 0,
       now() - (g % 400) * interval '1 day'
FROM (VALUES ('1', 'photos', $1::bigint), ('1', 'photos2', 10000), ('2', 'photos', 10000)) AS s(store, space, n),
     generate_series(1, s.n) g
ORDER BY md5(g::text || s.space || s.store)`, n); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d verdicts written in %v", n+20000, time.Since(start).Round(time.Millisecond))
	l := pgbitlog.New(pool)
	if _, err := pool.Exec(ctx, "ANALYZE bit_verdict"); err != nil {
		b.Fatal(err)
	}
	// Before a vacuum, the index-only scan reads the heap of every page
	// changed since the last: the worst case, just after a run wrote.
	b.Run("unvacuumed", func(b *testing.B) { benchVerdictPages(b, l, n) })
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE bit_verdict"); err != nil {
		b.Fatal(err)
	}
	b.Run("vacuumed", func(b *testing.B) { benchVerdictPages(b, l, n) })
}

// benchVerdictPages reads acme/1/photos's n verdicts whole per iteration.
func benchVerdictPages(b *testing.B, l *pgbitlog.Log, n int) {
	ctx := context.Background()
	b.ReportAllocs()
	var copies, pages int
	for b.Loop() {
		got, after := 0, ""
		for {
			vs, more, err := l.Verdicts(ctx, "acme", "1", "photos", after, bitlog.MaxPageSize)
			if err != nil {
				b.Fatal(err)
			}
			pages++
			got += len(vs)
			if !more {
				break
			}
			after = vs[len(vs)-1].ContentID
		}
		if got != n {
			b.Fatalf("read %d verdicts, want %d", got, n)
		}
		copies += got
	}
	elapsed := b.Elapsed()
	b.ReportMetric(float64(copies)/elapsed.Seconds(), "copies/s")
	b.ReportMetric(float64(n), "copies")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(copies), "ns/copy")
	b.ReportMetric(float64(pages)/float64(b.N), "pages")
}
