// Package scale_test holds the benchmarks of how the producers' cost grows
// with the items of one space: time per item and peak memory at each size.
package scale_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/stores"
)

// Acceptance: the time per item at the largest size within 1.2x of that at
// the smallest, and the peak RSS of every run under 64 MiB.
const (
	maxGrowth  = 1.2
	maxPeakMiB = 64
	account    = "acct"
	space      = "big"
)

// BenchmarkSpaceScale runs the dup producer and the bit producer (each a
// whole looping run: morsels, bites of the default size, its tasks sent
// to a queue that counts and drops them) over one space of each size of
// MILL_BENCH_ITEMS (fs; default 10000,100000) and MILL_BENCH_S3_ITEMS
// (an S3 store on testenv.BenchS3Endpoint — LocalStack under make bench;
// default 10000), and reports per producer and size the time per item and
// the run's peak RSS, and the time per item at the largest size over that
// at the smallest (1 = linear). A run over 1.2x linear or 64 MiB is logged
// as a MISS and counted (misses; the figures stay in the table). The real
// dupproducer and bitproducer binaries run as processes (runProcess), on
// S3 with AWS_ENDPOINT_URL_S3 naming the benchmark endpoint: their wall
// and CPU time and their own peak RSS. The acceptance sizes are
// MILL_BENCH_ITEMS=10000,100000,1000000 and the same for S3.
//
// The fs space is one flat directory of hard links to one item's files
// (listings read names only); the S3 space is seeded with empty objects
// by parallel PutObjects (64 in flight), whose rate is reported
// (seed-objects/s), and listed once with raw ListObjectsV2 pages of 1,000
// (sdk-list-N-ns/item): the emulator's own cost per item at each size,
// the baseline of the producers' (LocalStack's S3 answers a page in time
// proportional to the bucket, real S3 in time proportional to the page).
func BenchmarkSpaceScale(b *testing.B) {
	b.Run("fs", func(b *testing.B) {
		for b.Loop() {
			scale(b, testenv.BenchSizes(b, "MILL_BENCH_ITEMS", "10000,100000"), newFSSpace, runProcess)
		}
	})
	b.Run("s3", func(b *testing.B) {
		for b.Loop() {
			scale(b, testenv.BenchSizes(b, "MILL_BENCH_S3_ITEMS", "10000"), newS3Space, runProcess)
		}
	})
}

// seeded is a space of n items ready for the producers: the config
// directory of its registry and policies, and the S3 config (or nil).
type seeded struct {
	cfgDir string
	base   *aws.Config
	// env is what the producer processes need besides the SQS sink's
	// endpoint (for S3, the store's endpoint).
	env []string
	// list, for S3, lists the space with raw ListObjectsV2 pages of
	// 1,000 and returns the keys seen: the emulator's own cost per item.
	list func() int
}

type seeder func(b *testing.B, n int) seeded

// runner runs one whole run of the producer kind over a seeded space.
type runner func(b *testing.B, kind string, sp seeded) procRun

func scale(b *testing.B, ns []int, seed seeder, run runner) {
	b.StopTimer()
	defer b.StartTimer()
	per := map[string][]float64{}
	misses := 0
	for _, n := range ns {
		sp := seed(b, n)
		if sp.list != nil {
			start := time.Now()
			if got := sp.list(); got != n {
				b.Fatalf("raw listing of %d items saw %d", n, got)
			}
			ns := float64(time.Since(start).Nanoseconds()) / float64(n)
			per["sdk-list"] = append(per["sdk-list"], ns)
			b.ReportMetric(ns, fmt.Sprintf("sdk-list-%d-ns/item", n))
			b.Logf("raw ListObjectsV2 over %d items: %.0f ns/item", n, ns)
		}
		for _, kind := range []string{"dup", "bit"} {
			r := run(b, kind, sp)
			if r.tasks < int64(n) {
				b.Fatalf("%s producer over %d items queued %d tasks", kind, n, r.tasks)
			}
			ns := float64(r.wall.Nanoseconds()) / float64(n)
			per[kind] = append(per[kind], ns)
			b.ReportMetric(ns, fmt.Sprintf("%s-%d-ns/item", kind, n))
			b.ReportMetric(r.peakMiB, fmt.Sprintf("%s-%d-peak-rss-MiB", kind, n))
			cpu := ""
			if r.cpu > 0 {
				cns := float64(r.cpu.Nanoseconds()) / float64(n)
				per[kind+"-cpu"] = append(per[kind+"-cpu"], cns)
				b.ReportMetric(cns, fmt.Sprintf("%s-%d-cpu-ns/item", kind, n))
				cpu = fmt.Sprintf(", CPU %v (%.0f ns/item)", r.cpu.Round(time.Millisecond), cns)
			}
			b.Logf("%s producer, %d items: %v (%.0f ns/item)%s, %d tasks, peak RSS %.1f MiB", kind, n, r.wall.Round(time.Millisecond), ns, cpu, r.tasks, r.peakMiB)
			if r.peakMiB > maxPeakMiB {
				misses++
				b.Logf("MISS: %s producer, %d items: peak RSS %.1f MiB, want under %d", kind, n, r.peakMiB, maxPeakMiB)
			}
		}
	}
	for kind, v := range per {
		g := v[len(v)-1] / v[0]
		b.ReportMetric(g, kind+"-largest/smallest")
		if kind == "sdk-list" || strings.HasSuffix(kind, "-cpu") {
			continue // the emulator's (the baseline), or for the record
		}
		if len(v) > 1 && g > maxGrowth {
			misses++
			b.Logf("MISS: %s producer: %.2fx the time per item at %d items as at %d, want at most %.1fx", kind, g, ns[len(ns)-1], ns[0], maxGrowth)
		}
	}
	b.ReportMetric(float64(misses), "misses")
}

// writeConfig writes the registry (one account, source store src and an
// empty fs destination) and a policy duplicating 1 to 2.
func writeConfig(b *testing.B, src string) string {
	dir := b.TempDir()
	accts := fmt.Sprintf(`{"accounts": [{"id": %q, "status": "active", "stores": [%s,
    {"id": "2", "kind": "fs", "root": %q}]}]}`, account, src, filepath.Join(dir, "dst"))
	for name, data := range map[string]string{
		stores.FileName:          accts,
		policy.AccountsFile:      "[" + strconv.Quote(account) + "]",
		policy.FileName(account): `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// newFSSpace makes an fs store whose space holds n items: one put, then
// hard links to its files under the other items' names (a new copy every
// 30,000 items: ext4 allows 65,000 links).
func newFSSpace(b *testing.B, n int) seeded {
	root := b.TempDir()
	s, err := fsstore.New(root)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.CreateSpace(ctx, space); err != nil {
		b.Fatal(err)
	}
	const first = "item-00000000"
	if _, err := s.Put(ctx, space, first, strings.NewReader(""), storage.PutOptions{Size: 0}); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(root, space)
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var names []string
	contents := map[string][]byte{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), first) {
			names = append(names, e.Name())
			if contents[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
				b.Fatal(err)
			}
		}
	}
	if len(names) == 0 {
		b.Fatalf("the item's files in %s are not named after it", dir)
	}
	start := time.Now()
	bases := map[string]string{}
	for i := 1; i < n; i++ {
		if (i-1)%30000 == 0 {
			for _, name := range names {
				bases[name] = filepath.Join(root, fmt.Sprintf("base-%d-%s", i, name))
				if err := os.WriteFile(bases[name], contents[name], 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		id := fmt.Sprintf("item-%08d", i)
		for _, name := range names {
			if err := os.Link(bases[name], filepath.Join(dir, id+strings.TrimPrefix(name, first))); err != nil {
				b.Fatal(err)
			}
		}
	}
	// A space not being written: its directory last changed an hour ago.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dir, old, old); err != nil {
		b.Fatal(err)
	}
	b.Logf("fs: %d items seeded in %v", n, time.Since(start).Round(time.Millisecond))
	return seeded{cfgDir: writeConfig(b, fmt.Sprintf(`{"id": "1", "primary": true, "kind": "fs", "root": %q}`, root))}
}

// newS3Space makes an S3 store on the benchmark endpoint whose space holds
// n empty objects, put 64 at a time.
func newS3Space(b *testing.B, n int) seeded {
	cfg := testenv.AWS(b)
	ep := testenv.BenchS3Endpoint(b)
	base := cfg.AWS.Copy()
	base.BaseEndpoint = aws.String(ep)
	client := s3.NewFromConfig(base, func(o *s3.Options) { o.UsePathStyle = true })
	ctx := context.Background()
	bucket := testenv.Prefix(b) + fmt.Sprintf("scale%d", n)
	testenv.CleanupBucket(b, client, bucket)
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		b.Fatal(err)
	}
	const prefix = "mill/"
	// The space marker, as s3store.CreateSpace writes it.
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + space),
		Body: strings.NewReader(`{"acls":{}}`)}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for range 64 {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || firstErr.Load() != nil {
					return
				}
				key := fmt.Sprintf("%s%s/item-%08d", prefix, space, i)
				if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
					Body: strings.NewReader("")}); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		b.Fatalf("seed %s: %v", bucket, err)
	}
	took := time.Since(start)
	b.ReportMetric(float64(n)/took.Seconds(), fmt.Sprintf("seed-%d-objects/s", n))
	b.Logf("s3: %d objects seeded in %v (%.0f/s)", n, took.Round(time.Millisecond), float64(n)/took.Seconds())
	src := fmt.Sprintf(`{"id": "1", "primary": true, "kind": "s3", "bucket": %q, "prefix": %q, "region": "us-east-1"}`, bucket, prefix)
	list := func() int {
		seen := 0
		p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket),
			Prefix: aws.String(prefix + space + "/"), MaxKeys: aws.Int32(1000)})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				b.Fatal(err)
			}
			seen += len(out.Contents)
		}
		return seen
	}
	return seeded{cfgDir: writeConfig(b, src), base: &base, list: list, env: []string{"AWS_ENDPOINT_URL_S3=" + ep}}
}
