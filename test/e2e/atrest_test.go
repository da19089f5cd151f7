package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/internal/testkit/s3controlstub"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/task"
)

// counter is a request-counting HTTP proxy between Mill's processes and
// the emulator: it records the method, bucket and key of every request.
type counter struct {
	mu   sync.Mutex
	reqs []countedReq
}

type countedReq struct{ method, bucket, key, query string }

func startCounter(t *testing.T, target string) (*counter, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{}
	rp := httputil.NewSingleHostReverseProxy(u)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimPrefix(r.URL.Path, "/")
		bucket, key, _ := strings.Cut(path, "/")
		if k, err := url.PathUnescape(key); err == nil {
			key = k
		}
		c.mu.Lock()
		c.reqs = append(c.reqs, countedReq{r.Method, bucket, key, r.URL.RawQuery})
		c.mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return c, "http://" + ln.Addr().String()
}

// count returns how many requests match.
func (c *counter) count(match func(countedReq) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.reqs {
		if match(r) {
			n++
		}
	}
	return n
}

// TestColdCopiesAtRestEndToEnd: account acme keeps its items in store 1
// (S3, STANDARD) and store 2 (S3, archived: GLACIER and DEEP_ARCHIVE).
// One archived copy is rewritten behind Mill's back (new bytes, Mill's
// metadata kept). The real binaries then run — bitproducer twice (its run
// creates one compute-checksum job for the archived space through the S3
// Control stand-in; the next invocation ingests the completed job's report
// and queues its BIT tasks), workman for the checks and reports, then for
// the repair — with every request of theirs to the emulator counted by a
// proxy. The rewritten copy is found by the compute-checksum path (case
// 2, FAILURE, at rest), every other archived copy is SUCCESS at rest, the
// copy is repaired from store 1 in its own storage class, and Mill sent
// no GET and no RestoreObject of an archived object. `millctl fixity
// coverage` then says every copy of both stores is within target; one
// copy's verdict is aged in PostgreSQL, and the next run (--skip-covered)
// checks that copy and nothing else, after which coverage is whole again.
func TestColdCopiesAtRestEndToEnd(t *testing.T) {
	cfg := testenv.AWS(t)
	dbURL := testenv.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bins := testbin.Build(t, "millctl", "workman", "bitproducer")

	prefix := testenv.Prefix(t)
	sqsc, s3c, ddb := cfg.SQS(), cfg.S3(), cfg.DynamoDB()
	testenv.CleanupQueues(t, sqsc, prefix)
	auditTable := prefix + "audit-log"
	names := map[string]string{"MILL_CONFIG_BUCKET": prefix + "config", "MILL_STATE_BUCKET": prefix + "state", "MILL_CLAIMS_BUCKET": prefix + "state",
		"MILL_REPORTS_BUCKET": prefix + "reports", "MILL_AUDIT_TABLE": auditTable, "MILL_LEASE_TABLE": prefix + "leases",
		"MILL_FLEET_TABLE": prefix + "fleet"}
	hotBucket, coldBucket, atRestBucket := prefix+"hot", prefix+"cold", prefix+"atrest"
	for _, b := range []string{names["MILL_CONFIG_BUCKET"], names["MILL_STATE_BUCKET"], names["MILL_REPORTS_BUCKET"]} {
		testenv.CleanupBucket(t, s3c, b)
	}
	for _, b := range []string{hotBucket, coldBucket, atRestBucket} {
		if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
		testenv.CleanupBucket(t, s3c, b)
	}
	// The archive bucket is versioned: an overwrite keeps the replaced
	// version as S3's own (an unversioned bucket keeps it with a
	// server-side copy, which S3 refuses for an archived object).
	enableBucketVersioning(t, s3c, coldBucket)
	testenv.CleanupTable(t, ddb, auditTable)
	testenv.CleanupTable(t, ddb, names["MILL_LEASE_TABLE"])
	testenv.CleanupTable(t, ddb, names["MILL_FLEET_TABLE"])

	conf := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(conf, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("accounts.json", fmt.Sprintf(`{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": %q, "prefix": "mill/", "region": "us-east-1"},
  {"id": "2", "kind": "s3", "bucket": %q, "prefix": "mill/", "region": "us-east-1",
   "fixity": {"archivedMethod": "compute-checksum", "archivedInterval": "365d"}}]}]}`, hotBucket, coldBucket))
	write("duplication-accounts.json", `[]`)

	// The S3 Control stand-in reads the emulator directly; Mill's
	// processes reach the emulator only through the counting proxy.
	stub := s3controlstub.New(cfg.S3(), s3controlstub.Options{})
	if err := stub.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stub.Close)
	counted, proxyURL := startCounter(t, os.Getenv("AWS_ENDPOINT_URL"))
	env := testbin.Env("MILL_QUEUE_PREFIX="+prefix, "MILL_CONFIG_DIR="+conf, "MILL_DATABASE_URL="+dbURL,
		"AWS_ENDPOINT_URL="+proxyURL, "AWS_ENDPOINT_URL_S3_CONTROL="+stub.URL())
	for k, v := range names {
		env = append(env, k+"="+v)
	}
	runCmd := func(bin string, args ...string) string {
		t.Helper()
		c := testbin.Run(t, 3*time.Minute, testbin.Spec{Path: bin, Args: args, Env: env})
		if err := c.Err(); err != nil {
			t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), strings.Join(args, " "), err, c.Stdout(), c.Stderr())
		}
		return c.Stdout()
	}
	runCmd(bins["millctl"], "setup", "--skip-db=false", "--database-url", dbURL, "--queue-prefix", prefix, "--audit-table", auditTable)

	// The seed, written directly (not through Mill): 8 items in both
	// stores, store 2's alternately GLACIER and DEEP_ARCHIVE, with their
	// audit entries and index rows.
	const space, n = "photos", 8
	body := func(i int) []byte { return []byte(fmt.Sprintf("cold copy %d: %s\n", i, strings.Repeat("z", 100+i))) }
	classOf := func(i int) string { return []string{"GLACIER", "DEEP_ARCHIVE"}[i%2] }
	id := func(i int) string { return fmt.Sprintf("img-%02d.tif", i) }
	hot, err := s3store.New(s3c, s3store.Config{Bucket: hotBucket, Prefix: "mill/"})
	if err != nil {
		t.Fatal(err)
	}
	cold, err := s3store.New(s3c, s3store.Config{Bucket: coldBucket, Prefix: "mill/"})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	index, alog := pgcontentindex.New(pool), dynamoauditlog.New(ddb, auditTable)
	seedAt := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	for _, st := range []struct {
		id    string
		prov  storage.Provider
		class func(int) string
	}{{"1", hot, func(int) string { return "" }}, {"2", cold, classOf}} {
		if err := st.prov.CreateSpace(ctx, space); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			b := body(i)
			sum := md5hex(b)
			size := int64(len(b))
			if _, err := st.prov.Put(ctx, space, id(i), bytes.NewReader(b), storage.PutOptions{Size: size, Checksum: sum,
				MimeType: "image/tiff", StorageClass: st.class(i)}); err != nil {
				t.Fatal(err)
			}
			if _, err := alog.Put(ctx, auditlog.Entry{Account: account, StoreID: st.id, SpaceID: space, ContentID: id(i),
				Action: task.ActionAddContent, UserID: "seed", Time: seedAt, Checksum: sum, MimeType: "image/tiff", Size: &size,
				Properties: map[string]string{}, StoreType: "s3"}); err != nil {
				t.Fatal(err)
			}
			if _, err := index.Upsert(ctx, contentindex.Entry{Item: contentindex.Item{Account: account, StoreID: st.id, SpaceID: space, ContentID: id(i)},
				Checksum: sum, Size: &size, MimeType: "image/tiff", Properties: map[string]string{}, Modified: seedAt}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Behind Mill's back: store 2's copy of item 3 (DEEP_ARCHIVE) gets
	// other bytes of the same size; the class and Mill's metadata (its
	// recorded MD5) are kept.
	const bad = 3
	badKey := "mill/" + space + "/" + id(bad)
	altered := bytes.ToUpper(body(bad))
	head, err := s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(coldBucket), Key: aws.String(badKey)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(coldBucket), Key: aws.String(badKey), Body: bytes.NewReader(altered),
		Metadata: head.Metadata, ContentType: head.ContentType, StorageClass: head.StorageClass}); err != nil {
		t.Fatal(err)
	}
	archivedKeys := map[string]bool{}
	for i := range n {
		archivedKeys["mill/"+space+"/"+id(i)] = true
	}
	// S3's modification times are whole seconds, and a copy changed in
	// the second its job is created does not count as computed by it:
	// let that second pass before the job.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))

	producer := func() string {
		return runCmd(bins["bitproducer"], "--frequency", "0", "--queue-prefix", prefix, "--database-url", dbURL,
			"--at-rest-report-bucket", atRestBucket, "--at-rest-role-arn", "arn:aws:iam::"+stub.Account()+":role/mill-batch-operations",
			"--at-rest-account-id", stub.Account())
	}
	// 1. The run: BIT tasks for store 1, one job for store 2's space.
	producer()
	bitLog := pgbitlog.New(pool)
	jobs, err := bitLog.OpenAtRestJobs(ctx)
	if err != nil || len(jobs) != 1 || jobs[0].StoreID != "2" || jobs[0].Objects != n {
		t.Fatalf("at-rest jobs after the run: %+v %v, want one of %d objects for store 2", jobs, err, n)
	}
	job := jobs[0]
	if st, err := stub.Wait(ctx, job.JobID); err != nil || st != "Complete" {
		t.Fatalf("job %s: %s %v", job.JobID, st, err)
	}
	// 2. The next invocation (no run due) follows the job.
	producer()
	if j, err := bitLog.AtRestJob(ctx, job.AtRestKey); err != nil || j.State != bitlog.AtRestQueued {
		t.Fatalf("job after the second invocation: %+v %v, want queued", j, err)
	}

	queueURL := func(key string) string {
		o, err := sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue.Name(prefix, key))})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(o.QueueUrl)
	}
	depth := func(key string) int {
		d, err := testenv.QueueDepth(ctx, sqsc, queueURL(key))
		if err != nil {
			return -1
		}
		return d
	}
	// startWorkman runs workman on queues until done; it is stopped when
	// the test ends (a workman stopped while a long poll is out may lose
	// the message the poll is later given to its visibility timeout, so
	// the checking one keeps running through the repair).
	startWorkman := func(phase, types, queues string, done func() bool) {
		t.Helper()
		w := testbin.Start(t, testbin.Spec{Path: bins["workman"], Args: []string{"--task-types", types, "--queues", queues,
			"--config-dir", conf, "--database-url", dbURL, "--audit-table", auditTable, "--queue-prefix", prefix,
			"--http-addr", "", "--cloudwatch=false", "--receive-wait", "1s", "--recheck-delay", "2s",
			"--queue-backoff-min", "250ms", "--queue-backoff-max", "1s", "--long-poll-wait", "1s", "--grace-period", "5s"}, Env: env})
		if !testbin.Poll(2*time.Minute, 500*time.Millisecond, done) {
			t.Fatalf("%s: not done in time (bit %d, bit-report %d, bit-error %d, dead letters %d)\nworkman:\n%s", phase,
				depth(queue.KeyBit), depth(queue.KeyBitReport), depth(queue.KeyBitError), depth(queue.KeyDeadLetter), w.Output())
		}
	}
	report := func(store string) *bitlog.Report {
		reps, err := bitLog.Reports(ctx, bitlog.ReportFilter{RunID: job.RunID, Account: account, StoreID: store, SpaceID: space})
		if err != nil || len(reps) == 0 {
			return nil
		}
		return &reps[0]
	}
	// 3. The checks and the reports (no repair yet: BIT_ERRORs wait).
	startWorkman("check", "BIT,BIT_REPORT", "bit,bit-report", func() bool {
		return report("1") != nil && report("2") != nil && depth(queue.KeyBit) == 0
	})
	if r := report("1"); r.Result != bitlog.ResultSuccess || r.Counts.Success != n {
		t.Errorf("store 1's report: %+v, want %d SUCCESS", r, n)
	}
	if r := report("2"); r.Result != bitlog.ResultFailure || r.Counts.Total != n || r.Counts.Failure != 1 || r.Counts.Success != n-1 {
		t.Errorf("store 2's report: %+v, want %d checked, 1 FAILURE", r, n)
	}
	rows, _, err := bitLog.Results(ctx, bitlog.Filter{RunID: job.RunID, Account: account, StoreID: "2", SpaceID: space, Limit: 100})
	if err != nil || len(rows) != n {
		t.Fatalf("store 2's rows: %d %v", len(rows), err)
	}
	for _, r := range rows {
		i := strings.Index(r.ContentID, "-")
		var k int
		fmt.Sscanf(r.ContentID[i+1:], "%d", &k)
		want := bitlog.ResultSuccess
		wantC := md5hex(body(k))
		if k == bad {
			want, wantC = bitlog.ResultFailure, md5hex(altered)
		}
		if r.Result != want || r.ContentChecksum != wantC || r.Method != bitlog.MethodAtRest || !r.Archived || r.Bytes != int64(len(body(k))) ||
			(k == bad && r.Case != 2) || !strings.Contains(r.Details, "compute-checksum job "+job.JobID) {
			t.Errorf("row of %s: %s case %d C %s method %q archived %t bytes %d (%s)", r.ContentID, r.Result, r.Case,
				r.ContentChecksum, r.Method, r.Archived, r.Bytes, r.Details)
		}
	}
	if d := depth(queue.KeyBitError); d != 1 {
		t.Errorf("%d BIT_ERRORs queued, want 1 (the altered copy)", d)
	}

	// 4. The repair: BIT_ERROR (store 2's copy from store 1), its AUDIT,
	// and the re-check (by the first workman).
	badOf := func() *bitlog.Row {
		rs, _, err := bitLog.Results(ctx, bitlog.Filter{RunID: job.RunID, Account: account, StoreID: "2", SpaceID: space, ContentID: id(bad)})
		if err != nil || len(rs) != 1 {
			return nil
		}
		return &rs[0]
	}
	startWorkman("repair", "BIT_ERROR,AUDIT", "bit-error,audit", func() bool {
		r := badOf()
		return r != nil && r.Result == bitlog.ResultSuccess && depth(queue.KeyBitError) == 0 && depth(queue.KeyBit) == 0 && depth(queue.KeyAudit) == 0
	})
	if r := badOf(); !strings.Contains(r.Details, "repaired from store 1") {
		t.Errorf("the altered copy's row after the repair: %+v", r)
	}
	after, err := cold.Head(ctx, space, id(bad))
	if err != nil || after.ProviderChecksum != "md5:"+md5hex(body(bad)) || after.StorageClass != classOf(bad) {
		t.Errorf("store 2's copy after the repair: %+v %v, want the original bytes in %s", after, err, classOf(bad))
	}
	if d := depth(queue.KeyDeadLetter); d != 0 {
		t.Errorf("%d dead letters", d)
	}

	// 5. Mill read no archived object and restored none.
	gets := counted.count(func(r countedReq) bool {
		return r.method == http.MethodGet && r.bucket == coldBucket && archivedKeys[r.key]
	})
	restores := counted.count(func(r countedReq) bool { return strings.Contains(r.query, "restore") })
	heads := counted.count(func(r countedReq) bool {
		return r.method == http.MethodHead && r.bucket == coldBucket && archivedKeys[r.key]
	})
	if gets != 0 || restores != 0 {
		t.Errorf("Mill sent %d GETs and %d restores of archived objects, want none", gets, restores)
	}
	hotGets := counted.count(func(r countedReq) bool {
		return r.method == http.MethodGet && r.bucket == hotBucket && strings.HasPrefix(r.key, "mill/"+space+"/")
	})
	if heads == 0 || hotGets < n {
		t.Errorf("the proxy counted %d HEADs of archived objects and %d GETs of hot ones: it did not see Mill's requests", heads, hotGets)
	}
	t.Logf("requests to the archived objects through the proxy: %d HEAD, %d GET, %d restore", heads, gets, restores)

	// 6. Coverage: after the loop every copy of both stores is within
	// target (store 1's read, store 2's at rest).
	coverage := func() map[string]map[string]any {
		t.Helper()
		out := runCmd(bins["millctl"], "fixity", "coverage", "--account", account, "--json")
		stores := map[string]map[string]any{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var c map[string]any
			if err := json.Unmarshal([]byte(l), &c); err != nil {
				t.Fatalf("fixity coverage --json: %q: %v", l, err)
			}
			if c["level"] == "store" {
				stores[c["store_id"].(string)] = c
			}
		}
		return stores
	}
	fullyCovered := func(when string) {
		t.Helper()
		cov := coverage()
		for _, st := range []string{"1", "2"} {
			c := cov[st]
			if c == nil || c["copies"] != float64(n) || c["within_target"] != float64(n) || c["share_within_target"] != 1.0 || c["overdue"] != 0.0 {
				t.Errorf("%s: coverage of store %s: %v, want %d of %d copies within target", when, st, c, n, n)
			}
		}
		if c := cov["2"]; c != nil && c["at_rest"] != float64(n) {
			t.Errorf("%s: store 2's copies verified at rest: %v, want %d", when, c["at_rest"], n)
		}
	}
	fullyCovered("after one loop")

	// 7. Store 1's copy of item 5 made overdue: its verdict aged past the
	// 90 days of the default target. The next run, with --skip-covered,
	// checks it first — and alone: every other copy stays within target,
	// store 2's space is left out whole.
	const aged = 5
	if tag, err := pool.Exec(ctx, `UPDATE bit_verdict SET checked_at = checked_at - interval '100 days'
WHERE account = $1 AND store_id = '1' AND space_id = $2 AND content_id = $3`, account, space, id(aged)); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("age the verdict: %v %v", tag, err)
	}
	if c := coverage()["1"]; c == nil || c["overdue"] != 1.0 || c["within_target"] != float64(n-1) {
		t.Fatalf("coverage of store 1 with one verdict aged: %v, want 1 overdue", c)
	}
	runCmd(bins["bitproducer"], "--frequency", "1s", "--skip-covered", "1d", "--queue-prefix", prefix, "--database-url", dbURL,
		"--at-rest-report-bucket", atRestBucket, "--at-rest-role-arn", "arn:aws:iam::"+stub.Account()+":role/mill-batch-operations",
		"--at-rest-account-id", stub.Account())
	var next *bitlog.Report
	if !testbin.Poll(2*time.Minute, 500*time.Millisecond, func() bool {
		reps, err := bitLog.Reports(ctx, bitlog.ReportFilter{Account: account, StoreID: "1", SpaceID: space, Limit: 1})
		if err == nil && len(reps) == 1 && reps[0].RunID != job.RunID {
			next = &reps[0]
		}
		return next != nil && depth(queue.KeyBit) == 0
	}) {
		t.Fatalf("no report of the next run (bit queue %d)", depth(queue.KeyBit))
	}
	if rec, err := bitLog.RunSpace(ctx, next.RunID, account, "1", space); err != nil || rec.Expected != 1 || next.Counts.Total != 1 || next.Result != bitlog.ResultSuccess {
		t.Errorf("the next run in store 1: record %+v %v, report %+v; want 1 item queued, checked, SUCCESS", rec, err, next)
	}
	if rows, _, err := bitLog.Results(ctx, bitlog.Filter{RunID: next.RunID, Limit: 100}); err != nil || len(rows) != 1 ||
		rows[0].StoreID != "1" || rows[0].ContentID != id(aged) || rows[0].Result != bitlog.ResultSuccess {
		t.Errorf("the next run checked %+v (%v), want only store 1's %s", rows, err, id(aged))
	}
	if _, err := bitLog.RunSpace(ctx, next.RunID, account, "2", space); !errors.Is(err, bitlog.ErrNoRun) {
		t.Errorf("store 2's space in the next run: %v, want left out (every copy within target)", err)
	}
	fullyCovered("after the next run")
}

func enableBucketVersioning(t *testing.T, c *s3.Client, bucket string) {
	t.Helper()
	if _, err := c.PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
}
