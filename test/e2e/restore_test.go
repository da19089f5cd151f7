package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5/pgxpool"

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

// TestColdCopiesRestoredEndToEnd: account acme keeps its items in store 1
// (S3, STANDARD) and store 2 (S3, GLACIER and DEEP_ARCHIVE), whose
// archived method is restore. The real binaries run, every request of
// theirs to the emulator counted by a proxy. Run 1 of bitproducer asks
// for one restore (Bulk) per archived copy and queues no BIT for them:
// store 2's report counts none, and coverage says they were never
// verified. The emulator completes a restore at once (S3 takes hours) and
// does not report restore states in listings, so run 2 learns from a Head
// that the copies are restored, asks for no new restore, and queues a BIT
// per copy: workman reads and hashes them (method read), and coverage
// counts every copy of store 2 within target.
func TestColdCopiesRestoredEndToEnd(t *testing.T) {
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
	hotBucket, coldBucket := prefix+"hot", prefix+"cold"
	for _, b := range []string{names["MILL_CONFIG_BUCKET"], names["MILL_STATE_BUCKET"], names["MILL_REPORTS_BUCKET"]} {
		testenv.CleanupBucket(t, s3c, b)
	}
	for _, b := range []string{hotBucket, coldBucket} {
		if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
		testenv.CleanupBucket(t, s3c, b)
	}
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
   "fixity": {"archivedMethod": "restore", "archivedInterval": "365d"}}]}]}`, hotBucket, coldBucket))
	write("duplication-accounts.json", `[]`)

	counted, proxyURL := startCounter(t, os.Getenv("AWS_ENDPOINT_URL"))
	env := testbin.Env("MILL_QUEUE_PREFIX="+prefix, "MILL_CONFIG_DIR="+conf, "MILL_DATABASE_URL="+dbURL, "AWS_ENDPOINT_URL="+proxyURL)
	for k, v := range names {
		env = append(env, k+"="+v)
	}
	runCmd := func(bin string, args ...string) string {
		t.Helper()
		c := testbin.Run(t, 3*time.Minute, testbin.Spec{Path: bin, Args: args, Env: env})
		if err := c.Err(); err != nil {
			t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), strings.Join(args, " "), err, c.Stdout(), c.Stderr())
		}
		return c.Stdout() + c.Stderr()
	}
	runCmd(bins["millctl"], "setup", "--skip-db=false", "--database-url", dbURL, "--queue-prefix", prefix, "--audit-table", auditTable)

	// The seed, written directly: n items in both stores, store 2's
	// alternately GLACIER and DEEP_ARCHIVE, with audit entries and index
	// rows.
	const space, n = "scans", 4
	body := func(i int) []byte { return []byte(fmt.Sprintf("restored copy %d: %s\n", i, strings.Repeat("r", 50+i))) }
	classOf := func(i int) string { return []string{"GLACIER", "DEEP_ARCHIVE"}[i%2] }
	id := func(i int) string { return fmt.Sprintf("scan-%02d.tif", i) }
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
	archivedKeys := map[string]bool{}
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
			if st.id == "2" {
				archivedKeys["mill/"+space+"/"+id(i)] = true
			}
		}
	}
	restores := func() int {
		return counted.count(func(r countedReq) bool {
			return r.method == http.MethodPost && r.bucket == coldBucket && archivedKeys[r.key] && strings.Contains(r.query, "restore")
		})
	}
	archivedGets := func() int {
		return counted.count(func(r countedReq) bool {
			return r.method == http.MethodGet && r.bucket == coldBucket && archivedKeys[r.key]
		})
	}
	producer := func(run string) string {
		return runCmd(bins["bitproducer"], "--frequency", "0", "--queue-prefix", prefix, "--database-url", dbURL,
			"--state", filepath.Join(conf, run+"-state.json"), "--progress", "off")
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
	bitLog := pgbitlog.New(pool)
	reports := func(store string) []bitlog.Report {
		reps, err := bitLog.Reports(ctx, bitlog.ReportFilter{Account: account, StoreID: store, SpaceID: space})
		if err != nil {
			t.Fatal(err)
		}
		return reps
	}
	coverage := func() map[string]int64 {
		out := runCmd(bins["millctl"], "fixity", "coverage", "--account", account, "--store", "2", "--json")
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var x struct {
				Level         string `json:"level"`
				Copies        int64  `json:"copies"`
				Within        int64  `json:"within_target"`
				NeverVerified int64  `json:"never_verified"`
				Read          int64  `json:"read"`
			}
			if json.Unmarshal([]byte(l), &x) != nil || x.Level != "store" {
				continue
			}
			return map[string]int64{"copies": x.Copies, "within": x.Within, "never": x.NeverVerified, "read": x.Read}
		}
		t.Fatalf("millctl fixity coverage: no store line:\n%s", out)
		return nil
	}

	// 1. Run 1: BITs for store 1, a restore request per archived copy.
	out := producer("run1")
	if got := restores(); got != n {
		t.Fatalf("run 1 sent %d restore requests, want %d (one per archived copy)\n%s", got, n, out)
	}
	if !strings.Contains(out, fmt.Sprintf(`"restores_requested":%d`, n)) {
		t.Errorf("run 1's log does not count %d restores requested:\n%s", n, out)
	}
	if d := depth(queue.KeyBit); d != n {
		t.Fatalf("run 1 queued %d BITs, want %d (store 1 only)", d, n)
	}
	w := testbin.Start(t, testbin.Spec{Path: bins["workman"], Args: []string{"--task-types", "BIT,BIT_REPORT", "--queues", "bit,bit-report",
		"--config-dir", conf, "--database-url", dbURL, "--audit-table", auditTable, "--queue-prefix", prefix,
		"--http-addr", "", "--cloudwatch=false", "--receive-wait", "1s", "--recheck-delay", "2s",
		"--queue-backoff-min", "250ms", "--queue-backoff-max", "1s", "--long-poll-wait", "1s", "--grace-period", "5s"}, Env: env})
	waitReports := func(phase string, k int) {
		t.Helper()
		if !testbin.Poll(2*time.Minute, 500*time.Millisecond, func() bool {
			return len(reports("1")) == k && len(reports("2")) == k && depth(queue.KeyBit) == 0
		}) {
			t.Fatalf("%s: reports not made in time (bit %d, dead letters %d)\nworkman:\n%s", phase, depth(queue.KeyBit), depth(queue.KeyDeadLetter), w.Output())
		}
	}
	waitReports("run 1", 1)
	if r := reports("2")[0]; r.Counts.Total != 0 {
		t.Errorf("store 2's report of run 1: %+v, want no item counted (all being restored)", r)
	}
	if got := archivedGets(); got != 0 {
		t.Errorf("run 1 sent %d GETs of archived objects, want none", got)
	}
	if c := coverage(); c["copies"] != n || c["within"] != 0 || c["never"] != n {
		t.Errorf("coverage of store 2 after run 1: %v, want %d copies never verified", c, n)
	}

	// 2. Run 2 (a new run: another state, a later second): the copies are
	// restored, so each gets a BIT, and no restore is asked for again.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)))
	out = producer("run2")
	if got := restores(); got != n {
		t.Errorf("run 2 sent %d more restore requests, want none\n%s", got-n, out)
	}
	waitReports("run 2", 2)
	r2 := reports("2")[0]
	if r2.Result != bitlog.ResultSuccess || r2.Counts.Total != n || r2.Counts.Success != n {
		t.Fatalf("store 2's report of run 2: %+v, want %d SUCCESS", r2, n)
	}
	rows, _, err := bitLog.Results(ctx, bitlog.Filter{RunID: r2.RunID, Account: account, StoreID: "2", SpaceID: space, Limit: 100})
	if err != nil || len(rows) != n {
		t.Fatalf("store 2's rows of run 2: %d %v", len(rows), err)
	}
	for _, r := range rows {
		if r.Method != bitlog.MethodRead || !r.Archived || r.Result != bitlog.ResultSuccess {
			t.Errorf("row of %s: %s method %q archived %t (%s), want a read of the restored copy", r.ContentID, r.Result, r.Method, r.Archived, r.Details)
		}
	}
	if got := archivedGets(); got < n {
		t.Errorf("%d GETs of archived objects after run 2, want at least %d (the restored copies read)", got, n)
	}
	if c := coverage(); c["copies"] != n || c["within"] != n || c["read"] != n {
		t.Errorf("coverage of store 2 after run 2: %v, want all %d copies within target, read", c, n)
	}
	if d := depth(queue.KeyDeadLetter); d != 0 {
		t.Errorf("%d dead letters", d)
	}
}
