package pgcontentindex_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/milldb"
)

// benchSearchRows is MILL_BENCH_SEARCH_ROWS, or the acceptance size of the
// console's item search, 1 000 000 rows.
func benchSearchRows() int {
	if n, err := strconv.Atoi(os.Getenv("MILL_BENCH_SEARCH_ROWS")); err == nil && n >= 1000 {
		return n
	}
	return 1_000_000
}

// BenchmarkSearch: MILL_BENCH_SEARCH_ROWS rows (default 1 000 000) — one
// space of an account on three stores, written in an order unrelated to
// their content IDs, with other spaces and accounts around them. Each
// iteration asks for the first page (50 rows, the console's page) of a
// prefix search: a narrow prefix, a wide one, none, and one that matches
// nothing. The acceptance bound is 200 ms a page; it fails above it.
func BenchmarkSearch(b *testing.B) {
	pool := testenv.Pool(b)
	ctx := context.Background()
	if _, err := milldb.Up(ctx, pool); err != nil {
		b.Fatal(err)
	}
	n := benchSearchRows()
	start := time.Now()
	if _, err := pool.Exec(ctx, `
INSERT INTO content_index (account, store_id, space_id, content_id, checksum, size, deleted, modified)
SELECT s.account, ((g % 3) + 1)::text, s.space, 'dir-' || (g / 3 % 997) || '/' || md5((g / 3)::text),
       md5(g::text), g, g % 100 = 0, now()
FROM (VALUES ('acme', 'photos', $1::bigint), ('acme', 'docs', 20000), ('globex', 'photos', 20000)) AS s(account, space, n),
     generate_series(1, s.n) g
ORDER BY md5(g::text || s.space || s.account)`, n-40000); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE content_index"); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d rows written in %v", n, time.Since(start).Round(time.Millisecond))
	x := pgcontentindex.New(pool)
	for _, prefix := range []string{"dir-42/a", "dir-4", "", "zzz"} {
		b.Run("prefix="+prefix, func(b *testing.B) {
			var worst time.Duration
			for b.Loop() {
				t := time.Now()
				es, _, err := x.Search(ctx, contentindex.Query{Account: "acme", SpaceID: "photos", Prefix: prefix, Limit: 50})
				if err != nil {
					b.Fatal(err)
				}
				if prefix != "zzz" && len(es) == 0 {
					b.Fatalf("prefix %q: no rows", prefix)
				}
				worst = max(worst, time.Since(t))
			}
			b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
			if worst > 200*time.Millisecond {
				b.Errorf("prefix %q: the slowest first page took %v, want < 200 ms", prefix, worst)
			}
		})
	}
}
