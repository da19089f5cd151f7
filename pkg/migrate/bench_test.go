package migrate_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/migrate"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
)

// countingClient counts the HTTP requests of an S3 client.
type countingClient struct {
	inner interface {
		Do(*http.Request) (*http.Response, error)
	}
	n atomic.Int64
}

func (c *countingClient) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.inner.Do(r)
}

// benchStores makes a DuraCloud-layout source and a Mill-layout
// destination on the benchmark S3 endpoint, both counted by one client.
func benchStores(b *testing.B) (src, dst *s3store.Store, counter *countingClient, client *s3.Client, prefix string) {
	cfg := testenv.AWS(b)
	endpoint := testenv.BenchS3Endpoint(b)
	counter = &countingClient{inner: http.DefaultClient}
	client = cfg.S3(func(o *s3.Options) {
		o.UsePathStyle = true
		o.BaseEndpoint = aws.String(endpoint)
		if o.HTTPClient != nil {
			counter.inner = o.HTTPClient
		}
		o.HTTPClient = counter
	})
	prefix = testenv.Prefix(b)
	ak := testenv.AccessKeyID()
	books, mill := prefix+"books", prefix+"mill"
	for _, bk := range []string{books, mill} {
		testenv.CleanupBucket(b, client, bk)
		if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bk)}); err != nil {
			b.Fatal(err)
		}
	}
	for _, sp := range []string{"small", "big", "copy"} {
		testenv.CleanupBucket(b, client, strings.ToLower(ak)+"."+sp)
	}
	var err error
	if src, err = s3store.New(client, s3store.Config{Bucket: books, Layout: s3store.LayoutDuraCloud, AccountPrefix: ak}); err != nil {
		b.Fatal(err)
	}
	if dst, err = s3store.New(client, s3store.Config{Bucket: mill}); err != nil {
		b.Fatal(err)
	}
	return src, dst, counter, client, prefix
}

func envInt(b *testing.B, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q", name, v)
	}
	return n
}

// BenchmarkMigrateSmallItems migrates MILL_BENCH_MIGRATE_ITEMS (default
// 500) items of 4 KiB from a DuraCloud-layout store to a Mill store on the
// benchmark S3 endpoint with the default workers (one millctl), then runs
// again (every item skipped). Metrics: items/s of the migration, S3
// requests per migrated item (list, heads, get, put, read back), and
// items/s and requests per item of the resuming run.
//
//	make bench, or: go test -run '^$' -bench MigrateSmallItems -benchtime 1x ./pkg/migrate
func BenchmarkMigrateSmallItems(b *testing.B) {
	src, dst, counter, _, _ := benchStores(b)
	ctx := context.Background()
	n := int(envInt(b, "MILL_BENCH_MIGRATE_ITEMS", 500))
	const space = "small"
	if err := src.CreateSpace(ctx, space); err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("x", 4096)
	var wg sync.WaitGroup
	ids := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				if _, err := src.Put(ctx, space, fmt.Sprintf("item-%06d", i), strings.NewReader(body), storage.PutOptions{Size: int64(len(body)), MimeType: "text/plain"}); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for i := range n {
		ids <- i
	}
	close(ids)
	wg.Wait()
	cfg := migrate.Config{Source: src, Dest: dst, Spaces: []string{space}}
	var took, resumeTook time.Duration
	var reqs, resumeReqs int64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		emptySpace(b, dst, space)
		b.StartTimer()
		took, reqs = runBench(b, cfg, counter, migrate.Copied, n)
		resumeTook, resumeReqs = runBench(b, cfg, counter, migrate.Skipped, n)
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/took.Seconds(), "items/s")
	b.ReportMetric(float64(reqs)/float64(n), "req/item")
	b.ReportMetric(float64(n)/resumeTook.Seconds(), "resume-items/s")
	b.ReportMetric(float64(resumeReqs)/float64(n), "resume-req/item")
}

// emptySpace deletes what a previous iteration copied.
func emptySpace(b *testing.B, p storage.Provider, space string) {
	for {
		ids, _, err := p.ListContent(context.Background(), space, "", 1000)
		if err != nil || len(ids) == 0 {
			return
		}
		for _, id := range ids {
			if err := p.Delete(context.Background(), space, id); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// runBench migrates once and checks that every item had the outcome want.
func runBench(b *testing.B, cfg migrate.Config, counter *countingClient, want migrate.Outcome, n int) (time.Duration, int64) {
	s := migrate.NewSummary(time.Now())
	before := counter.n.Load()
	start := time.Now()
	if err := migrate.Migrate(context.Background(), cfg, s.Add); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	if s.Items[want] != n {
		b.Fatalf("%v, problems %v; want %d %s", s.Items, s.Problems, n, want)
	}
	return took, counter.n.Load() - before
}

// noServerSide hides a destination's server-side copy, so storage.Copy
// streams (as the dup processor with DisableServerSideCopy).
type noServerSide struct{ storage.Provider }

// BenchmarkMigrate1GiB migrates one item of MILL_BENCH_RATE_BYTES
// (testenv.BenchRateBytes: else MILL_BENCH_BIG_BYTES, else 1 GiB) from a DuraCloud-layout store to a Mill store, and in the same
// run streams the same item with storage.Copy (the dup processor's
// streamed copy, no verification beyond the destination's MD5). Metrics:
// MB/s of each and their ratio; the migration also reads the copy back.
//
//	make bench, or: MILL_BENCH_RATE_BYTES=$((64<<20)) go test -run '^$' -bench Migrate1GiB -benchtime 1x ./pkg/migrate
func BenchmarkMigrate1GiB(b *testing.B) {
	src, dst, counter, _, _ := benchStores(b)
	ctx := context.Background()
	size := testenv.BenchRateBytes(b)
	if size > s3store.DuraCloudMaxItem {
		b.Fatalf("%s=%d: DuraCloud items are at most %d bytes", testenv.BenchRateBytesVar, size, s3store.DuraCloudMaxItem)
	}
	const space, id = "big", "big.bin"
	if err := src.CreateSpace(ctx, space); err != nil {
		b.Fatal(err)
	}
	if err := dst.CreateSpace(ctx, "copy"); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if _, err := src.Put(ctx, space, id, testenv.Pattern(88172645463325252, size), storage.PutOptions{Size: size, MimeType: "application/octet-stream"}); err != nil {
		b.Fatal(err)
	}
	b.Logf("fixture: %d bytes in %v", size, time.Since(start).Round(time.Millisecond))
	cfg := migrate.Config{Source: src, Dest: dst, Spaces: []string{space}}
	var migTook, copyTook time.Duration
	var reqs int64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		_ = dst.Delete(ctx, space, id)
		_ = dst.Delete(ctx, "copy", id)
		b.StartTimer()
		migTook, reqs = runBench(b, cfg, counter, migrate.Copied, 1)
		start := time.Now()
		if _, err := storage.Copy(ctx, src, space, id, noServerSide{dst}, "copy"); err != nil {
			b.Fatal(err)
		}
		copyTook = time.Since(start)
	}
	b.StopTimer()
	mb := float64(size) / 1e6
	b.ReportMetric(mb/migTook.Seconds(), "migrate-MB/s")
	b.ReportMetric(mb/copyTook.Seconds(), "copy-MB/s")
	b.ReportMetric(copyTook.Seconds()/migTook.Seconds(), "migrate/copy")
	b.ReportMetric(float64(reqs), "req/item")
}
