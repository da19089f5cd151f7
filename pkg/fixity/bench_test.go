package fixity_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/internal/testkit/memstat"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/fixity"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/stores"
)

// benchCopies is MILL_BENCH_FIXITY_COPIES, or the acceptance size of one
// million.
func benchCopies() int64 {
	if n, err := strconv.ParseInt(os.Getenv("MILL_BENCH_FIXITY_COPIES"), 10, 64); err == nil && n >= 100000 {
		return n
	}
	return 1000000
}

// fillSpace writes n live content-index rows of a space and a verdict for
// nine copies in ten (of every age up to 200 days, one in five archived and
// computed at rest, one in a thousand a FAILURE), with two INSERT … SELECT.
func fillSpace(ctx context.Context, b *testing.B, pool *pgxpool.Pool, space string, n int64, now time.Time) {
	b.Helper()
	if _, err := pool.Exec(ctx, `
INSERT INTO content_index (account, store_id, space_id, content_id, checksum, size, mimetype, modified)
SELECT 'acme', '1', $1, 'item-' || lpad(g::text, 9, '0'), md5(g::text), g, 'application/octet-stream', $3::timestamptz - interval '400 days'
FROM generate_series(1, $2::bigint) g`, space, n, now); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
INSERT INTO bit_verdict (account, store_id, space_id, content_id, result, method, archived, checked_at)
SELECT 'acme', '1', $1, 'item-' || lpad(g::text, 9, '0'),
    CASE WHEN g % 1000 = 1 THEN 'FAILURE' ELSE 'SUCCESS' END,
    CASE WHEN g % 5 = 0 THEN 'at-rest' ELSE 'read' END, g % 5 = 0,
    $3::timestamptz - (g % 200) * interval '1 day' - interval '1 hour'
FROM generate_series(1, $2::bigint) g WHERE g % 10 <> 0`, space, n, now); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCoverage: the fixity coverage of a space of 1,000,000 copies
// (MILL_BENCH_FIXITY_COPIES) in the content index and the bit log's
// verdicts on PostgreSQL, and of one of 100,000, each measured after
// resetting the peak resident set size. It reports copies/s and the
// seconds of the large space (the acceptance bound is 10 s), and the peak
// RSS of each: flat memory means the two are alike.
func BenchmarkCoverage(b *testing.B) {
	pool := testenv.Pool(b)
	ctx := context.Background()
	if _, err := milldb.Up(ctx, pool); err != nil {
		b.Fatal(err)
	}
	n := benchCopies()
	now := time.Now().UTC()
	t0 := time.Now()
	fillSpace(ctx, b, pool, "small", 100000, now)
	fillSpace(ctx, b, pool, "big", n, now)
	if _, err := pool.Exec(ctx, "ANALYZE content_index; ANALYZE bit_verdict"); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d + 100000 copies written in %v", n, time.Since(t0).Round(time.Millisecond))
	src := fixity.Source{Index: pgcontentindex.New(pool), Verdicts: pgbitlog.New(pool)}
	measure := func(space string, want int64) (fixity.Coverage, time.Duration, float64) {
		memstat.ResetPeak()
		start := time.Now()
		c, err := src.Compute(ctx, fixity.Space{Account: "acme", StoreID: "1", SpaceID: space}, stores.Fixity{})
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if c.Copies != want || c.NeverVerified != want/10 || c.Within+c.Overdue+c.NotCovered != c.Copies || c.AtRest == 0 || c.Failed == 0 {
			b.Fatalf("coverage of %s: %+v", space, c)
		}
		return c, took, memstat.PeakRSSMiB()
	}
	b.ResetTimer()
	var big fixity.Coverage
	var took time.Duration
	var peakSmall, peakBig float64
	for range b.N {
		_, _, peakSmall = measure("small", 100000)
		big, took, peakBig = measure("big", n)
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/took.Seconds(), "copies/s")
	b.ReportMetric(took.Seconds()*1e6/float64(n), "s/1M-copies")
	b.ReportMetric(peakSmall, "peak-MiB-100k")
	b.ReportMetric(peakBig, "peak-MiB-big")
	b.Logf("%s copies: %v (%.0f copies/s), %d within target, %d overdue; peak RSS %.1f MiB (100,000 copies: %.1f MiB)",
		fmt.Sprint(n), took.Round(time.Millisecond), float64(n)/took.Seconds(), big.Within, big.Overdue, peakBig, peakSmall)
}
