package scale_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// The package's TestMain (testbin.Main, which removes the built Workman)
// is in proc_bench_test.go.

// BenchmarkBitReportScale runs the real Workman (cmd/workman, one worker,
// BIT_REPORT only) over one BIT_REPORT of a space of each size of
// MILL_BENCH_REPORT_ITEMS (fs; default 10000,100000) and
// MILL_BENCH_REPORT_S3_ITEMS (an S3 store on testenv.BenchS3Endpoint —
// LocalStack under make bench; skipped when unset), and reports per size the
// time per item (from Workman's receive of the task — the message in
// flight — until its bit_report row exists),
// Workman's peak RSS (VmHWM of a process that did nothing else) and its
// RSS before the task, and the time per item at the largest size over
// that at the smallest (1 = linear). A run over 1.2x linear or 64 MiB is
// logged as a MISS and counted (misses). The acceptance sizes are
// 10000,100000,1000000. On S3 the space is also listed once with raw
// ListObjectsV2 pages (sdk-list-N-ns/item and its largest/smallest): the
// emulator's own growth, the baseline of the report's (LocalStack answers
// a page in time proportional to the bucket).
//
// Each size has its own PostgreSQL schema, seeded server-side: a content
// index row and a SUCCESS bit log row of the run per item, and the bit
// producer's record of the run (the space listed, N items expected); the
// store's items are seeded as BenchmarkSpaceScale seeds them. So the
// report merges three listings of N items and writes N lines.
func BenchmarkBitReportScale(b *testing.B) {
	b.Run("fs", func(b *testing.B) {
		for b.Loop() {
			reportScale(b, testenv.BenchSizes(b, "MILL_BENCH_REPORT_ITEMS", "10000,100000"), newFSSpace, "")
		}
	})
	b.Run("s3", func(b *testing.B) {
		if os.Getenv("MILL_BENCH_REPORT_S3_ITEMS") == "" {
			b.Skip("MILL_BENCH_REPORT_S3_ITEMS is not set (seeding LocalStack's S3 takes about an hour per million objects)")
		}
		for b.Loop() {
			reportScale(b, testenv.BenchSizes(b, "MILL_BENCH_REPORT_S3_ITEMS", ""), newS3Space, testenv.BenchS3Endpoint(b))
		}
	})
}

func reportScale(b *testing.B, ns []int, seed seeder, s3Endpoint string) {
	b.StopTimer()
	defer b.StartTimer()
	var per, raw []float64
	misses := 0
	for _, n := range ns {
		sp := seed(b, n)
		if sp.list != nil { // the emulator's own time per listed item: the baseline
			t := time.Now()
			if got := sp.list(); got != n {
				b.Fatalf("raw listing of %d items saw %d", n, got)
			}
			raw = append(raw, float64(time.Since(t).Nanoseconds())/float64(n))
			b.ReportMetric(raw[len(raw)-1], fmt.Sprintf("sdk-list-%d-ns/item", n))
		}
		m := runReport(b, n, sp, s3Endpoint)
		ns := float64(m.elapsed.Nanoseconds()) / float64(n)
		per = append(per, ns)
		b.ReportMetric(ns, fmt.Sprintf("report-%d-ns/item", n))
		b.ReportMetric(m.peak, fmt.Sprintf("report-%d-peak-rss-MiB", n))
		b.ReportMetric(m.before.total, fmt.Sprintf("report-%d-start-rss-MiB", n))
		// One line per size: a benchmark's log is cut at ten lines.
		b.Logf("BIT_REPORT, %d items (PostgreSQL seeded in %v, the task received %v after its send): %v (%.0f ns/item); Workman's RSS before %s, after %s, peak %.1f MiB",
			n, m.seeded.Round(time.Millisecond), m.queued.Round(time.Millisecond), m.elapsed.Round(time.Millisecond), ns, m.before, m.after, m.peak)
		if m.peak > maxPeakMiB {
			misses++
			b.Logf("MISS: BIT_REPORT, %d items: peak RSS %.1f MiB, want under %d", n, m.peak, maxPeakMiB)
		}
	}
	g := per[len(per)-1] / per[0]
	b.ReportMetric(g, "report-largest/smallest")
	if len(raw) > 0 {
		b.ReportMetric(raw[len(raw)-1]/raw[0], "sdk-list-largest/smallest")
	}
	if len(per) > 1 && g > maxGrowth {
		misses++
		b.Logf("MISS: BIT_REPORT: %.2fx the time per item at %d items as at %d, want at most %.1fx", g, ns[len(ns)-1], ns[0], maxGrowth)
	}
	b.ReportMetric(float64(misses), "misses")
}

// rss is a process's resident set in MiB: in all, anonymous (the Go heap,
// stacks, the runtime) and file-backed (mostly the binary's code).
type rss struct{ total, anon, file float64 }

func (r rss) String() string {
	return fmt.Sprintf("%.1f MiB (%.1f anonymous, %.1f file-backed)", r.total, r.anon, r.file)
}

// reportRun is what runReport measured.
type reportRun struct {
	elapsed, seeded time.Duration
	queued          time.Duration // from the send to Workman's receive
	before, after   rss
	peak            float64 // MiB
}

// runReport seeds the bit log and the content index of a space of n items
// in a fresh schema, starts Workman on it, sends one BIT_REPORT of the run
// and waits for its bit_report row. It returns the time from the send to
// the row, and Workman's RSS before the task, after it and at its peak.
func runReport(b *testing.B, n int, sp seeded, s3Endpoint string) reportRun {
	ctx := context.Background()
	cfg := testenv.AWS(b)
	prefix := testenv.Prefix(b) + fmt.Sprintf("rep%d-", n)
	sqsc := cfg.SQS()
	testenv.CleanupQueues(b, sqsc, prefix)
	urls := map[string]string{}
	for _, k := range queue.AllKeys {
		u, err := (setup.Queue{Client: sqsc, QueueName: queue.Name(prefix, k), VisibilityTimeout: 5 * time.Minute}).Ensure(ctx)
		if err != nil {
			b.Fatal(err)
		}
		urls[k] = u
	}
	// The reports bucket, beside the store's objects on S3.
	s3base := cfg.AWS.Copy()
	if s3Endpoint != "" {
		s3base.BaseEndpoint = aws.String(s3Endpoint)
	}
	s3c := s3.NewFromConfig(s3base, func(o *s3.Options) { o.UsePathStyle = true })
	reports := prefix + "reports"
	testenv.CleanupBucket(b, s3c, reports)
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(reports)}); err != nil {
		b.Fatal(err)
	}
	table := prefix + "audit"
	ddb := cfg.DynamoDB()
	testenv.CleanupTable(b, ddb, table)
	if _, err := ddb.CreateTable(ctx, dynamoauditlog.CreateTableInput(table)); err != nil {
		b.Fatal(err)
	}

	dbURL := testenv.Schema(b)
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if _, err := milldb.Up(ctx, pool); err != nil {
		b.Fatal(err)
	}
	run := time.Now().UTC().Format("20060102") + "T030000Z"
	kind := "fs"
	if sp.base != nil {
		kind = "s3"
	}
	var m reportRun
	m.seeded = seedReport(b, pool, run, n, kind)

	addr := testbin.FreeAddr(b)
	env := testbin.Env("MILL_CONFIG_DIR="+sp.cfgDir, "MILL_DATABASE_URL="+dbURL, "MILL_AUDIT_TABLE="+table,
		"MILL_REPORTS_BUCKET="+reports, "MILL_QUEUE_PREFIX="+prefix, "TMPDIR="+b.TempDir())
	if s3Endpoint != "" {
		env = append(env, "AWS_ENDPOINT_URL_S3="+s3Endpoint)
	}
	w := testbin.Start(b, testbin.Spec{Path: testbin.Build(b, "workman")["workman"], Env: env, Args: []string{
		"--queues", "bit-report", "--task-types", "BIT_REPORT", "--workers", "1", "--max-attempts", "1",
		"--http-addr", addr, "--cloudwatch=false", "--fleet-table", "", "--instance-metadata=false",
		"--worker-id", "bench", "--log-level", "warn"}, Grace: 2 * time.Second})
	w.WaitHealthy(b, time.Minute, addr)
	mib := func(field string) float64 { return float64(w.Status(field)) / (1 << 20) }
	now := func() rss { return rss{mib("VmRSS"), mib("RssAnon"), mib("RssFile")} }
	m.before = now()

	expected := int64(n)
	body, err := task.Encode(task.BitReport{Account: account, StoreID: "1", SpaceID: space, RunID: run, Expected: &expected}.Task(), task.FormatJSON)
	if err != nil {
		b.Fatal(err)
	}
	log := pgbitlog.New(pool)
	url := urls[queue.KeyBitReport]
	b.StartTimer()
	sent := time.Now()
	if _, err := sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(string(body))}); err != nil {
		b.Fatal(err)
	}
	// The report's time runs from Workman's receive (the message in
	// flight) to its bit_report row: an idle Workman's wait for the
	// message is the queue's, not the report's.
	var taken, made time.Time
	var rep bitlog.Report
	testbin.Poll(time.Hour, 10*time.Millisecond, func() bool {
		if w.Exited() {
			b.Fatalf("workman exited: %v", w.Err())
		}
		if taken.IsZero() {
			o, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
			if err != nil {
				b.Fatal(err)
			}
			if o.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)] != "0" {
				taken = time.Now()
			}
		}
		reps, err := log.Reports(ctx, bitlog.ReportFilter{RunID: run, Account: account, StoreID: "1", SpaceID: space})
		if err != nil {
			b.Fatal(err)
		}
		if len(reps) > 0 {
			rep, made = reps[0], time.Now()
		}
		return !made.IsZero()
	})
	b.StopTimer()
	if made.IsZero() {
		b.Fatalf("no report of %d items within an hour", n)
	}
	if taken.IsZero() {
		b.Fatalf("the report of %d items was made before its task was seen in flight", n)
	}
	m.elapsed, m.queued = made.Sub(taken), taken.Sub(sent)
	m.peak, m.after = mib("VmHWM"), now()
	if rep.Result != bitlog.ResultSuccess || rep.Counts.Total != expected || rep.Counts.Success != expected {
		b.Fatalf("report of %d healthy items: %s, counts %+v", n, rep.Result, rep.Counts)
	}
	_ = w.Stop() // the report is made: an idle long poll may hold the stop, so it ends in a kill
	return m
}

// seedReport writes, in the schema of pool, what a finished bit producer
// run over n healthy items of the space leaves: a content index row and a
// SUCCESS bit log row (case 1, read) per item, and the run's record of the
// space (listed, n expected). One statement each, server-side. It returns
// the time it took.
func seedReport(b *testing.B, pool *pgxpool.Pool, run string, n int, kind string) time.Duration {
	ctx := context.Background()
	start := time.Now()
	const md5Empty = "d41d8cd98f00b204e9800998ecf8427e"
	if _, err := pool.Exec(ctx, `
INSERT INTO content_index (account, store_id, space_id, content_id, checksum, size, mimetype, modified)
SELECT $1, '1', $2, 'item-' || lpad(g::text, 8, '0'), $3, 0, 'application/octet-stream', now() - interval '1 day'
FROM generate_series(0, $4::bigint - 1) g`, account, space, md5Empty, n); err != nil {
		b.Fatal(err)
	}
	l := pgbitlog.New(pool)
	row := bitlog.Row{RunID: run, Account: account, StoreID: "1", StoreKind: kind, SpaceID: space,
		ContentID: "item-00000000", Result: bitlog.ResultSuccess, Case: 1, ContentChecksum: md5Empty,
		StorageChecksum: md5Empty, IndexChecksum: md5Empty, AuditChecksum: md5Empty, Method: bitlog.MethodRead}
	if err := l.Record(ctx, row); err != nil { // makes the run's month
		b.Fatal(err)
	}
	month, _ := bitlog.RunMonth(run)
	if _, err := pool.Exec(ctx, `
INSERT INTO bit_log (run_month, run_id, account, store_id, store_kind, space_id, content_id, result, case_number,
    content_checksum, storage_checksum, index_checksum, audit_checksum, details, checked_at, method, bytes, archived)
SELECT $1::date, $2, $3, '1', $4, $5, 'item-' || lpad(g::text, 8, '0'), 'SUCCESS', 1,
    $6, $6, $6, $6, '', now(), 'read', 0, false
FROM generate_series(1, $7::bigint - 1) g`, month, run, account, kind, space, md5Empty, n); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE content_index; ANALYZE bit_log`); err != nil {
		b.Fatal(err)
	}
	rs := bitlog.RunSpace{RunID: run, Account: account, StoreID: "1", SpaceID: space, Expected: int64(n)}
	if err := l.FinishSpace(ctx, rs); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
