package benchtable

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Pick chooses a metric: the first unit (in sorted order) matching the
// first pattern that matches any unit.
type Pick []*regexp.Regexp

func units(patterns ...string) Pick {
	p := make(Pick, len(patterns))
	for i, s := range patterns {
		p[i] = regexp.MustCompile(s)
	}
	return p
}

func (p Pick) from(m map[string]float64) (unit string, v float64, ok bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, re := range p {
		for _, k := range keys {
			if re.MatchString(k) {
				return k, m[k], true
			}
		}
	}
	return "", 0, false
}

// Row is one line of the table.
type Row struct {
	Measure string
	Pkg     string         // package path suffix (a trailing "/" matches a subtree)
	Name    *regexp.Regexp // benchmark name
	// Value is required; Baseline and Ratio are optional. Without a Ratio
	// metric the ratio is Value/Baseline when both are present.
	Value, Baseline, Ratio Pick
	// Expect describes the benchmark for the "not in this tree" note.
	Expect string
	// Last: of several matching benchmarks (sub-benchmarks of sizes set
	// by a setting, run smallest first), take the last, the largest.
	Last bool
}

// findFor returns the benchmark of row: the first matching one that
// reported its value (a broad pattern such as "producers/" may match
// benchmarks measuring something else first), else the first match.
func (r *Result) findFor(row Row) *Bench {
	var found *Bench
	for _, b := range r.Benches {
		if pkgMatch(b.Pkg, row.Pkg) && row.Name.MatchString(b.Name) && b.Status == "ok" {
			if _, _, ok := row.Value.from(b.Metrics); ok {
				if !row.Last {
					return b
				}
				found = b
			}
		}
	}
	if found != nil {
		return found
	}
	return r.Find(row.Pkg, row.Name)
}

// Rows is Mill's table, in print order. The units are those the benchmarks
// pass to b.ReportMetric; alternatives cover benchmarks still landing.
var Rows = []Row{
	{Measure: "SQS requests/task: Workman steady state (NOOP)", Pkg: "pkg/workman", Name: regexp.MustCompile(`^BenchmarkEmulatorNoop`),
		Value: units(`^req/task$`), Expect: "pkg/workman BenchmarkEmulatorNoop"},
	{Measure: "SQS requests/task: producer enqueue", Pkg: "producers/", Name: regexp.MustCompile(`^Benchmark`),
		Value: units(`^req/task$`, `^req/msg$`, `^req/`), Expect: "a producers/... benchmark reporting req/task"},
	{Measure: "Throughput: producer enqueue, DefaultSendsInFlight batches in flight vs one at a time (tasks/s)", Pkg: "producers/looping", Name: regexp.MustCompile(`^BenchmarkEnqueueInFlight`),
		Value: units(`^tasks/s$`), Baseline: units(`^seq-tasks/s$`), Ratio: units(`^inflight/seq$`), Expect: "producers/looping BenchmarkEnqueueInFlight"},
	{Measure: "Throughput: producer enqueue, 8 batches in flight vs one at a time (tasks/s)", Pkg: "producers/looping", Name: regexp.MustCompile(`^BenchmarkEnqueueInFlight`),
		Value: units(`^8-tasks/s$`), Baseline: units(`^seq-tasks/s$`), Expect: "producers/looping BenchmarkEnqueueInFlight"},
	{Measure: "CPU: producer enqueue, the producer's own CPU time per task (µs)", Pkg: "producers/looping", Name: regexp.MustCompile(`^BenchmarkEnqueueInFlight`),
		Value: units(`^cpu-µs/task$`), Expect: "producers/looping BenchmarkEnqueueInFlight"},
	{Measure: "Throughput: producer enqueue on a stub SQS answering at once, the producer's ceiling (tasks/s)", Pkg: "producers/looping", Name: regexp.MustCompile(`^BenchmarkEnqueueStubSQS/latency=0ms`),
		Value: units(`^tasks/s$`), Baseline: units(`^seq-tasks/s$`), Ratio: units(`^inflight/seq$`), Expect: "producers/looping BenchmarkEnqueueStubSQS"},
	{Measure: "Throughput: producer enqueue on a stub SQS answering after 10 ms, DefaultSendsInFlight vs one at a time (tasks/s)", Pkg: "producers/looping", Name: regexp.MustCompile(`^BenchmarkEnqueueStubSQS/latency=10ms`),
		Value: units(`^tasks/s$`), Baseline: units(`^seq-tasks/s$`), Ratio: units(`^inflight/seq$`), Expect: "producers/looping BenchmarkEnqueueStubSQS"},
	{Measure: "Throughput: producer enqueue on a stub SQS answering after 10 ms, 8 in flight (tasks/s)", Pkg: "producers/looping", Name: regexp.MustCompile(`^BenchmarkEnqueueStubSQS/latency=10ms`),
		Value: units(`^8-tasks/s$`), Baseline: units(`^seq-tasks/s$`), Expect: "producers/looping BenchmarkEnqueueStubSQS"},
	{Measure: "Throttling: a bucket answering SlowDown above 50 req/s, achieved vs allowed (req/s)", Pkg: "pkg/awsconfig", Name: regexp.MustCompile(`^BenchmarkThrottledBucket`),
		Value: units(`^throttled-req/s$`), Baseline: units(`^allowed-req/s$`), Ratio: units(`^throttled/allowed$`), Expect: "pkg/awsconfig BenchmarkThrottledBucket"},
	{Measure: "Throttling: another bucket of the same client in the same run (req/s)", Pkg: "pkg/awsconfig", Name: regexp.MustCompile(`^BenchmarkThrottledBucket`),
		Value: units(`^other-req/s$`), Expect: "pkg/awsconfig BenchmarkThrottledBucket"},
	{Measure: "SQS requests/msg: sqsqueue send+receive+delete", Pkg: "pkg/queue/sqsqueue", Name: regexp.MustCompile(`^BenchmarkSendReceiveDelete`),
		Value: units(`^req/msg$`), Expect: "pkg/queue/sqsqueue BenchmarkSendReceiveDelete"},
	{Measure: "DynamoDB writes/heartbeat: fleet registry (one per worker per interval)", Pkg: "pkg/workman/fleetmember", Name: regexp.MustCompile(`^BenchmarkHeartbeat`),
		Value: units(`^writes/beat$`), Expect: "pkg/workman/fleetmember BenchmarkHeartbeat"},
	{Measure: "DynamoDB reads/heartbeat: fleet registry (the pauses, one Query)", Pkg: "pkg/workman/fleetmember", Name: regexp.MustCompile(`^BenchmarkHeartbeat`),
		Value: units(`^reads/beat$`), Expect: "pkg/workman/fleetmember BenchmarkHeartbeat"},
	{Measure: "Idle: SQS requests/minute per workman (long polls; measured at 1/20 of the default intervals)", Pkg: "cmd/workman", Name: regexp.MustCompile(`^BenchmarkIdle`),
		Value: units(`^sqs-req/min$`), Expect: "cmd/workman BenchmarkIdle"},
	{Measure: "Idle: DynamoDB requests/minute per workman (fleet heartbeat, --heartbeat-interval 30s)", Pkg: "cmd/workman", Name: regexp.MustCompile(`^BenchmarkIdle`),
		Value: units(`^dynamodb-req/min$`), Expect: "cmd/workman BenchmarkIdle"},
	{Measure: "Idle: DynamoDB requests/heartbeat (PutItem + Query; per --heartbeat-interval)", Pkg: "cmd/workman", Name: regexp.MustCompile(`^BenchmarkIdle`),
		Value: units(`^dynamodb-req/beat$`), Expect: "cmd/workman BenchmarkIdle"},
	{Measure: "Idle: CloudWatch requests/minute per workman (nothing to publish)", Pkg: "cmd/workman", Name: regexp.MustCompile(`^BenchmarkIdle`),
		Value: units(`^monitoring-req/min$`), Expect: "cmd/workman BenchmarkIdle"},
	{Measure: "Idle: AWS requests/minute per workman, all services", Pkg: "cmd/workman", Name: regexp.MustCompile(`^BenchmarkIdle`),
		Value: units(`^idle-req/min$`), Expect: "cmd/workman BenchmarkIdle"},
	{Measure: "Throughput: Workman vs raw SDK loop (tasks/s)", Pkg: "pkg/workman", Name: regexp.MustCompile(`^BenchmarkEmulatorNoop`),
		Value: units(`^tasks/s$`), Baseline: units(`^raw-tasks/s$`), Ratio: units(`^ratio$`), Expect: "pkg/workman BenchmarkEmulatorNoop"},
	{Measure: "SQS requests/task: Workman, six queues (one busy) vs one", Pkg: "pkg/workman", Name: regexp.MustCompile(`^BenchmarkEmulatorSixQueues`),
		Value: units(`^six-req/task$`), Baseline: units(`^one-req/task$`), Expect: "pkg/workman BenchmarkEmulatorSixQueues"},
	{Measure: "Throughput: Workman six queues (one busy) vs one (tasks/s)", Pkg: "pkg/workman", Name: regexp.MustCompile(`^BenchmarkEmulatorSixQueues`),
		Value: units(`^six-tasks/s$`), Baseline: units(`^one-tasks/s$`), Ratio: units(`^six/one$`), Expect: "pkg/workman BenchmarkEmulatorSixQueues"},
	{Measure: "Latency: dup-high start while dup-low busy vs low task + 1 s (s)", Pkg: "pkg/workman", Name: regexp.MustCompile(`^BenchmarkEmulatorHighPickup`),
		Value: units(`^pickup-s$`), Baseline: units(`^bound-s$`), Expect: "pkg/workman BenchmarkEmulatorHighPickup"},
	{Measure: "Share: bit of tasks done while dup-high flooded, --min-share bit=0.2 (%)", Pkg: "pkg/workman", Name: regexp.MustCompile(`^BenchmarkEmulatorMinShare`),
		Value: units(`^bit-%-share$`), Expect: "pkg/workman BenchmarkEmulatorMinShare"},
	{Measure: "Share: bit of tasks done while dup-high flooded, strict (%)", Pkg: "pkg/workman", Name: regexp.MustCompile(`^BenchmarkEmulatorMinShare`),
		Value: units(`^bit-%-strict$`), Expect: "pkg/workman BenchmarkEmulatorMinShare"},
	{Measure: "Throughput: dup copy vs minimal SDK multipart copy, unshaped (MB/s)", Pkg: "processors/dup", Name: regexp.MustCompile(`^Benchmark`),
		Value: units(`^(copy|dup|mill)[-_]?Mi?B/s$`, `^[^rs].*Mi?B/s$`), Baseline: units(`^(sdk|raw)[-_].*Mi?B/s$`), Ratio: units(`^mill/sdk$`, `^mill/raw$`, `ratio`, `/raw$`),
		Expect: "a processors/dup benchmark (1 GiB copy)"},
	{Measure: "Throughput: bit check read path vs md5sum (MB/s)", Pkg: "test/readpath", Name: regexp.MustCompile(`^BenchmarkBitCheck`),
		Value: units(`^bitcheck[-_]Mi?B/s$`, `^(hash|bit|mill)[-_]?Mi?B/s$`), Baseline: units(`^md5sum[-_]Mi?B/s$`, `md5sum`), Ratio: units(`^ratio$`, `/md5sum$`),
		Expect: "test/readpath BenchmarkBitCheckReadPath (hashing vs md5sum)"},
	{Measure: "Throughput: copy S3 → GCS of MILL_BENCH_RATE_BYTES, Mill vs the SDKs' minimal loop (MiB/s)", Pkg: "test/e2e", Name: regexp.MustCompile(`^BenchmarkCopyToClouds/gcs$`),
		Value: units(`^mill-MiB/s$`), Baseline: units(`^sdk-MiB/s$`), Ratio: units(`^mill/sdk$`), Expect: "test/e2e BenchmarkCopyToClouds/gcs"},
	{Measure: "Throughput: copy S3 → Azure of MILL_BENCH_RATE_BYTES, Mill vs the SDKs' minimal loop (MiB/s)", Pkg: "test/e2e", Name: regexp.MustCompile(`^BenchmarkCopyToClouds/azure$`),
		Value: units(`^mill-MiB/s$`), Baseline: units(`^sdk-MiB/s$`), Ratio: units(`^mill/sdk$`), Expect: "test/e2e BenchmarkCopyToClouds/azure"},
	{Measure: "Throughput: DuraCloud migration, 4 KiB items, one millctl (8 workers; items/s)", Pkg: "pkg/migrate", Name: regexp.MustCompile(`^BenchmarkMigrateSmallItems$`),
		Value: units(`^items/s$`), Expect: "pkg/migrate BenchmarkMigrateSmallItems"},
	{Measure: "S3 requests/item: DuraCloud migration (heads, get, put, read back; resumed: 2 heads)", Pkg: "pkg/migrate", Name: regexp.MustCompile(`^BenchmarkMigrateSmallItems$`),
		Value: units(`^req/item$`), Baseline: units(`^resume-req/item$`), Expect: "pkg/migrate BenchmarkMigrateSmallItems"},
	{Measure: "Throughput: DuraCloud migration of a MILL_BENCH_RATE_BYTES item (read back) vs streamed copy (MB/s)", Pkg: "pkg/migrate", Name: regexp.MustCompile(`^BenchmarkMigrate1GiB$`),
		Value: units(`^migrate-MB/s$`), Baseline: units(`^copy-MB/s$`), Ratio: units(`^migrate/copy$`), Expect: "pkg/migrate BenchmarkMigrate1GiB"},
	{Measure: "Throughput: s3store big object put (MiB/s)", Pkg: "pkg/storage/s3store", Name: regexp.MustCompile(`^BenchmarkBigObject`),
		Value: units(`^put-MiB/s$`), Expect: "pkg/storage/s3store BenchmarkBigObject"},
	{Measure: "Throughput: s3store big object get+MD5 (MiB/s)", Pkg: "pkg/storage/s3store", Name: regexp.MustCompile(`^BenchmarkBigObject`),
		Value: units(`^get-MiB/s$`), Expect: "pkg/storage/s3store BenchmarkBigObject"},
	{Measure: "Peak RSS MiB: s3store big object put+get vs its bound (streams × part size + constant)", Pkg: "pkg/storage/s3store", Name: regexp.MustCompile(`^BenchmarkBigObject`),
		Value: units(`^peak-rss-MiB$`, `^peak.*MiB$`), Baseline: units(`^bound-MiB$`), Expect: "pkg/storage/s3store BenchmarkBigObject"},
	{Measure: "Peak RSS MiB: dup copy vs its bound (streams × part size + constant)", Pkg: "processors/dup", Name: regexp.MustCompile(`^Benchmark`),
		Value: units(`^peak-rss-MiB$`, `^VmHWM-MiB$`, `^mill-peak.*MiB$`, `^peak.*MiB$`), Baseline: units(`^bound-MiB$`), Expect: "a processors/dup benchmark reporting peak-rss-MiB"},
	{Measure: "Peak RSS MiB: bit check (download + hash) vs its bound (streams × part size + constant)", Pkg: "test/readpath", Name: regexp.MustCompile(`^BenchmarkBitCheck`),
		Value: units(`^peak-rss-MiB$`, `^VmHWM-MiB$`, `^(mill|hash)-peak.*MiB$`, `^peak.*MiB$`), Baseline: units(`^bound-MiB$`), Expect: "test/readpath BenchmarkBitCheckReadPath reporting peak memory"},
	{Measure: "Console: dead-letter page, first page of 5,000 dead letters (ms; from the index of the console's scan)", Pkg: "internal/app/console", Name: regexp.MustCompile(`^BenchmarkDeadLetterFirstPage`),
		Value: units(`^first-page-ms$`), Baseline: units(`^bound-ms$`), Expect: "internal/app/console BenchmarkDeadLetterFirstPage"},
	{Measure: "Console: dead-letter page, from the console's start to a first page vs 5 raw receives (ms)", Pkg: "internal/app/console", Name: regexp.MustCompile(`^BenchmarkDeadLetterFirstPage`),
		Value: units(`^cold-first-page-ms$`), Baseline: units(`^raw-50-ms$`), Ratio: units(`^cold/raw$`), Expect: "internal/app/console BenchmarkDeadLetterFirstPage"},
	{Measure: "SQS requests/dead letter: the console's dead-letter scan", Pkg: "internal/app/console", Name: regexp.MustCompile(`^BenchmarkDeadLetterFirstPage`),
		Value: units(`^req/letter$`), Expect: "internal/app/console BenchmarkDeadLetterFirstPage"},
	{Measure: "Shaped like S3: streamed copy vs the aggregate limit of its streams (MB/s)", Pkg: "test/transfer", Name: regexp.MustCompile(`^BenchmarkShaped`),
		Value: units(`^copy-MB/s$`), Baseline: units(`^copy-limit-MB/s$`), Ratio: units(`^copy/limit$`), Expect: "test/transfer BenchmarkShapedTransfers"},
	{Measure: "Shaped like S3: streamed copy vs rclone, same object and buckets (MB/s)", Pkg: "test/transfer", Name: regexp.MustCompile(`^BenchmarkShaped`),
		Value: units(`^copy-MB/s$`), Baseline: units(`^rclone-MB/s$`), Ratio: units(`^copy/rclone$`), Expect: "test/transfer BenchmarkShapedTransfers (with rclone installed)"},
	{Measure: "Shaped like S3: streamed copy vs a minimal SDK copy, same streams and parts (MB/s)", Pkg: "test/transfer", Name: regexp.MustCompile(`^BenchmarkShaped`),
		Value: units(`^copy-MB/s$`), Baseline: units(`^sdk-copy-MB/s$`), Ratio: units(`^copy/sdk-copy$`), Expect: "test/transfer BenchmarkShapedTransfers"},
	{Measure: "Shaped like S3: streamed copy with one stream (MB/s)", Pkg: "test/transfer", Name: regexp.MustCompile(`^BenchmarkShaped`),
		Value: units(`^copy-1stream-MB/s$`), Expect: "test/transfer BenchmarkShapedTransfers"},
	{Measure: "Shaped like S3: bit check vs the aggregate limit of its streams (MB/s)", Pkg: "test/transfer", Name: regexp.MustCompile(`^BenchmarkShaped`),
		Value: units(`^check-MB/s$`), Baseline: units(`^check-limit-MB/s$`), Ratio: units(`^check/limit$`), Expect: "test/transfer BenchmarkShapedTransfers"},
	{Measure: "Shaped like S3: bit check vs rclone md5sum --download (MB/s)", Pkg: "test/transfer", Name: regexp.MustCompile(`^BenchmarkShaped`),
		Value: units(`^check-MB/s$`), Baseline: units(`^rclone-md5sum-MB/s$`), Ratio: units(`^check/rclone-md5sum$`), Expect: "test/transfer BenchmarkShapedTransfers (with rclone installed)"},
	{Measure: "Shaped like S3: bit check vs minimal SDK ranged GETs, same streams and parts (MB/s)", Pkg: "test/transfer", Name: regexp.MustCompile(`^BenchmarkShaped`),
		Value: units(`^check-MB/s$`), Baseline: units(`^sdk-get-MB/s$`), Ratio: units(`^check/sdk-get$`), Expect: "test/transfer BenchmarkShapedTransfers"},
	{Measure: "Shaped like S3: bit check with one stream (MB/s)", Pkg: "test/transfer", Name: regexp.MustCompile(`^BenchmarkShaped`),
		Value: units(`^check-1stream-MB/s$`), Expect: "test/transfer BenchmarkShapedTransfers"},
	{Measure: "Shaped like S3: s3store put (MB/s)", Pkg: "test/transfer", Name: regexp.MustCompile(`^BenchmarkShaped`),
		Value: units(`^put-MB/s$`), Expect: "test/transfer BenchmarkShapedTransfers"},
	{Measure: "Shaped like S3: s3store get + MD5 (MB/s)", Pkg: "test/transfer", Name: regexp.MustCompile(`^BenchmarkShaped`),
		Value: units(`^get-MB/s$`), Expect: "test/transfer BenchmarkShapedTransfers"},
	{Measure: "Peak RSS MiB: shaped copy (default settings, MILL_BENCH_SHAPED_BYTES) vs its bound", Pkg: "test/transfer", Name: regexp.MustCompile(`^BenchmarkShaped`),
		Value: units(`^copy-peak-rss-MiB$`), Baseline: units(`^bound-MiB$`), Expect: "test/transfer BenchmarkShapedTransfers"},
	{Measure: "Peak RSS MiB: shaped bit check (default settings, MILL_BENCH_SHAPED_BYTES) vs its bound", Pkg: "test/transfer", Name: regexp.MustCompile(`^BenchmarkShaped`),
		Value: units(`^check-peak-rss-MiB$`), Baseline: units(`^bound-MiB$`), Expect: "test/transfer BenchmarkShapedTransfers"},
	{Measure: "fs walk, one flat directory: time per item, the most items of MILL_BENCH_FLAT_ITEMS (acceptance: 1,000,000) vs 10,000 (ns/item)", Pkg: "pkg/storage/fsstore", Name: regexp.MustCompile(`^BenchmarkFlatWalk`),
		Value: units(`^1000000-ns/item$`, `^largest-ns/item$`), Baseline: units(`^10000-ns/item$`), Ratio: units(`^largest/smallest$`), Expect: "pkg/storage/fsstore BenchmarkFlatWalk"},
	{Measure: "fs walk, one flat directory: time per item at 100,000 items (ns/item)", Pkg: "pkg/storage/fsstore", Name: regexp.MustCompile(`^BenchmarkFlatWalk`),
		Value: units(`^100000-ns/item$`), Expect: "pkg/storage/fsstore BenchmarkFlatWalk"},
	{Measure: "Peak RSS MiB: fs walk of the most items of MILL_BENCH_FLAT_ITEMS (acceptance: 1,000,000) in one directory", Pkg: "pkg/storage/fsstore", Name: regexp.MustCompile(`^BenchmarkFlatWalk`),
		Value: units(`^1000000-peak-rss-MiB$`, `^largest-peak-rss-MiB$`), Expect: "pkg/storage/fsstore BenchmarkFlatWalk"},
	{Measure: "Producer state bytes/changed morsel, 20,000 spaces: journal vs whole-state rewrite", Pkg: "producers/looping", Name: regexp.MustCompile(`^BenchmarkStateWrites`),
		Value: units(`^B/changed-morsel$`), Baseline: units(`^old-B/changed-morsel$`), Ratio: units(`^journal/old$`), Expect: "producers/looping BenchmarkStateWrites20000Spaces"},
	{Measure: "Producer state objects left current after a 20,000-space run vs versions kept for good by the rewrite", Pkg: "producers/looping", Name: regexp.MustCompile(`^BenchmarkStateWrites`),
		Value: units(`^current-objects$`), Baseline: units(`^old-versions$`), Expect: "producers/looping BenchmarkStateWrites20000Spaces"},
	{Measure: "Dupproducer run, the most spaces of MILL_BENCH_DUP_STATE_SPACES (acceptance: 20,000): state bytes/changed morsel, journal vs whole-state rewrite", Pkg: "producers/dup", Name: regexp.MustCompile(`^BenchmarkDupproducerState/spaces=\d+$`),
		Value: units(`^B/changed-morsel$`), Baseline: units(`^old-B/changed-morsel$`), Ratio: units(`^journal/old$`), Expect: "producers/dup BenchmarkDupproducerState (MILL_BENCH_DUP_STATE_SPACES)", Last: true},
	{Measure: "Dupproducer run, the fewest spaces of MILL_BENCH_DUP_STATE_SPACES: state bytes/changed morsel, journal vs whole-state rewrite", Pkg: "producers/dup", Name: regexp.MustCompile(`^BenchmarkDupproducerState/spaces=\d+$`),
		Value: units(`^B/changed-morsel$`), Baseline: units(`^old-B/changed-morsel$`), Ratio: units(`^journal/old$`), Expect: "producers/dup BenchmarkDupproducerState (MILL_BENCH_DUP_STATE_SPACES)"},
	{Measure: "Dupproducer run, the most spaces: state bytes/changed morsel in journal entries vs in base rewrites", Pkg: "producers/dup", Name: regexp.MustCompile(`^BenchmarkDupproducerState/spaces=\d+$`),
		Value: units(`^entry-B/changed-morsel$`), Baseline: units(`^base-B/changed-morsel$`), Expect: "producers/dup BenchmarkDupproducerState (MILL_BENCH_DUP_STATE_SPACES)", Last: true},
	{Measure: "Dupproducer run, the most spaces: state PUTs (one per save or base)", Pkg: "producers/dup", Name: regexp.MustCompile(`^BenchmarkDupproducerState/spaces=\d+$`),
		Value: units(`^state-PUTs$`), Expect: "producers/dup BenchmarkDupproducerState (MILL_BENCH_DUP_STATE_SPACES)", Last: true},
	{Measure: "Dupproducer run, the most spaces: state versions left that no lifecycle rule expires", Pkg: "producers/dup", Name: regexp.MustCompile(`^BenchmarkDupproducerState/spaces=\d+$`),
		Value: units(`^unexpiring$`), Expect: "producers/dup BenchmarkDupproducerState (MILL_BENCH_DUP_STATE_SPACES)", Last: true},
	{Measure: "Bit log retention: rows in the log (MILL_BENCH_BITLOG_ROWS)", Pkg: "pkg/bitlog/pgbitlog", Name: regexp.MustCompile(`^BenchmarkBitLogRetention`),
		Value: units(`^rows$`), Expect: "pkg/bitlog/pgbitlog BenchmarkBitLogRetention"},
	{Measure: "Bit log retention: drop 7 expired months vs DELETE of their rows (ms)", Pkg: "pkg/bitlog/pgbitlog", Name: regexp.MustCompile(`^BenchmarkBitLogRetention`),
		Value: units(`^drop-ms$`), Baseline: units(`^delete-est-ms$`), Ratio: units(`^drop/delete$`), Expect: "pkg/bitlog/pgbitlog BenchmarkBitLogRetention"},
	{Measure: "Bit verdicts of a 1,000,000-copy space read in pages (copies/s), vacuumed", Pkg: "pkg/bitlog/pgbitlog", Name: regexp.MustCompile(`^BenchmarkVerdicts/vacuumed$`),
		Value: units(`^copies/s$`), Expect: "pkg/bitlog/pgbitlog BenchmarkVerdicts/vacuumed"},
	{Measure: "Bit verdicts of a 1,000,000-copy space read in pages (copies/s), just written (before a vacuum)", Pkg: "pkg/bitlog/pgbitlog", Name: regexp.MustCompile(`^BenchmarkVerdicts/unvacuumed$`),
		Value: units(`^copies/s$`), Expect: "pkg/bitlog/pgbitlog BenchmarkVerdicts/unvacuumed"},
	{Measure: "Fixity coverage: copies/s, content index + bit log verdicts on PostgreSQL (MILL_BENCH_FIXITY_COPIES; acceptance: 1,000,000)", Pkg: "pkg/fixity", Name: regexp.MustCompile(`^BenchmarkCoverage`),
		Value: units(`^copies/s$`), Expect: "pkg/fixity BenchmarkCoverage"},
	{Measure: "Fixity coverage: seconds per 1,000,000 copies (at MILL_BENCH_FIXITY_COPIES; acceptance: under 10 at 1,000,000)", Pkg: "pkg/fixity", Name: regexp.MustCompile(`^BenchmarkCoverage`),
		Value: units(`^s/1M-copies$`), Expect: "pkg/fixity BenchmarkCoverage"},
	{Measure: "Peak RSS MiB: fixity coverage, MILL_BENCH_FIXITY_COPIES copies (acceptance: 1,000,000) vs 100,000 (flat memory: alike)", Pkg: "pkg/fixity", Name: regexp.MustCompile(`^BenchmarkCoverage`),
		Value: units(`^peak-MiB-big$`), Baseline: units(`^peak-MiB-100k$`), Expect: "pkg/fixity BenchmarkCoverage"},
	{Measure: "Evidence log: events appended/s, batches of 1,000, fs store, vs 20x a 100M-item archive checked every 90 days", Pkg: "pkg/evidence", Name: regexp.MustCompile(`^BenchmarkEvidenceLog`),
		Value: units(`^events/s$`), Baseline: units(`^goal-events/s$`), Ratio: units(`^events/goal$`), Expect: "pkg/evidence BenchmarkEvidenceLog"},
	{Measure: "Evidence log: verification time per million events (s; extrapolated from MILL_BENCH_EVIDENCE_EVENTS, default 100,000)", Pkg: "pkg/evidence", Name: regexp.MustCompile(`^BenchmarkEvidenceLog`),
		Value: units(`^verify-s/Mevents$`), Expect: "pkg/evidence BenchmarkEvidenceLog"},
	{Measure: "Evidence log: size of one inclusion proof file (bytes)", Pkg: "pkg/evidence", Name: regexp.MustCompile(`^BenchmarkEvidenceLog`),
		Value: units(`^proof-B$`), Expect: "pkg/evidence BenchmarkEvidenceLog"},
}

// Line is one computed row.
type Line struct {
	Measure, Value, Baseline, Ratio, Source string
	NA                                      bool
}

func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func short(pkg string) string {
	if i := strings.Index(pkg, "/mill/"); i >= 0 {
		return pkg[i+len("/mill/"):]
	}
	return pkg
}

// Compute evaluates rows against r.
func Compute(r *Result, rows []Row) []Line {
	out := make([]Line, 0, len(rows))
	for _, row := range rows {
		l := Line{Measure: row.Measure, Value: "n/a", Baseline: "", Ratio: ""}
		b := r.findFor(row)
		switch {
		case b == nil:
			l.NA = true
			if why, ok := r.pkgFailure(row.Pkg); ok {
				l.Source = "package failed: " + why
			} else {
				l.Source = "not run: " + row.Expect + " is not in this tree (or was filtered out)"
			}
		case b.Status == "skip":
			l.NA, l.Source = true, fmt.Sprintf("%s %s skipped: %s", short(b.Pkg), b.Name, b.Reason)
		case b.Status == "fail":
			l.NA, l.Source = true, fmt.Sprintf("%s %s failed: %s", short(b.Pkg), b.Name, b.Reason)
		default:
			l.Source = short(b.Pkg) + " " + b.Name
			vu, v, ok := row.Value.from(b.Metrics)
			if !ok {
				l.NA = true
				l.Source += ": did not report " + describe(row.Value)
				break
			}
			l.Value = num(v) + " " + vu
			var base float64
			haveBase := false
			if row.Baseline != nil {
				if bu, bv, ok := row.Baseline.from(b.Metrics); ok {
					l.Baseline, base, haveBase = num(bv)+" "+bu, bv, true
				} else {
					l.Baseline = "n/a"
				}
			}
			if row.Ratio != nil {
				if _, rv, ok := row.Ratio.from(b.Metrics); ok {
					l.Ratio = num(rv) + "x"
				} else if haveBase && base != 0 {
					l.Ratio = num(v/base) + "x"
				} else {
					l.Ratio = "n/a"
				}
			}
		}
		out = append(out, l)
	}
	return out
}

func describe(p Pick) string {
	s := make([]string, len(p))
	for i, re := range p {
		s[i] = re.String()
	}
	return "a metric matching " + strings.Join(s, " or ")
}

// Write prints lines as one aligned table.
func Write(w io.Writer, lines []Line) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEASURE\tVALUE\tBASELINE\tRATIO\tBENCHMARK / WHY N/A")
	for _, l := range lines {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Measure, l.Value, dash(l.Baseline), dash(l.Ratio), l.Source)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
