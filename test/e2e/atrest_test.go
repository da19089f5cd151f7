package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/s3controlstub"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/queue"
)

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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f := newColdFleet(ctx, t, "compute-checksum")
	atRestBucket := f.bucket("atrest")
	// The archive bucket is versioned: an overwrite keeps the replaced
	// version as S3's own (an unversioned bucket keeps it with a
	// server-side copy, which S3 refuses for an archived object).
	enableBucketVersioning(t, f.s3c, f.coldBucket)
	// The S3 Control stand-in reads the emulator directly; Mill's
	// processes reach the emulator only through the counting proxy.
	stub := s3controlstub.New(f.s3c, s3controlstub.Options{})
	if err := stub.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stub.Close)
	f.env = append(f.env, "AWS_ENDPOINT_URL_S3_CONTROL="+stub.URL())
	f.setup()

	// The seed, written directly (not through Mill): 8 items in both
	// stores, store 2's alternately GLACIER and DEEP_ARCHIVE, with their
	// audit entries and index rows.
	const space, n = "photos", 8
	body := func(i int) []byte { return []byte(fmt.Sprintf("cold copy %d: %s\n", i, strings.Repeat("z", 100+i))) }
	classOf := func(i int) string { return []string{"GLACIER", "DEEP_ARCHIVE"}[i%2] }
	id := func(i int) string { return fmt.Sprintf("img-%02d.tif", i) }
	archivedKeys := f.seed(coldSeed{space: space, n: n, id: id, body: body, class: classOf})
	// Behind Mill's back: store 2's copy of item 3 (DEEP_ARCHIVE) gets
	// other bytes of the same size; the class and Mill's metadata (its
	// recorded MD5) are kept.
	const bad = 3
	badKey := "mill/" + space + "/" + id(bad)
	altered := bytes.ToUpper(body(bad))
	head, err := f.s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(f.coldBucket), Key: aws.String(badKey)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(f.coldBucket), Key: aws.String(badKey), Body: bytes.NewReader(altered),
		Metadata: head.Metadata, ContentType: head.ContentType, StorageClass: head.StorageClass}); err != nil {
		t.Fatal(err)
	}
	// S3's modification times are whole seconds, and a copy changed in
	// the second its job is created does not count as computed by it:
	// let that second pass before the job.
	waitNextSecond()

	atRest := []string{"--at-rest-report-bucket", atRestBucket, "--at-rest-role-arn", "arn:aws:iam::" + stub.Account() + ":role/mill-batch-operations",
		"--at-rest-account-id", stub.Account()}
	producer := func() { f.bitproducer(append([]string{"--frequency", "0"}, atRest...)...) }
	// 1. The run: BIT tasks for store 1, one job for store 2's space.
	producer()
	jobs, err := f.bitLog.OpenAtRestJobs(ctx)
	if err != nil || len(jobs) != 1 || jobs[0].StoreID != "2" || jobs[0].Objects != n {
		t.Fatalf("at-rest jobs after the run: %+v %v, want one of %d objects for store 2", jobs, err, n)
	}
	job := jobs[0]
	if st, err := stub.Wait(ctx, job.JobID); err != nil || st != "Complete" {
		t.Fatalf("job %s: %s %v", job.JobID, st, err)
	}
	// 2. The next invocation (no run due) follows the job.
	producer()
	if j, err := f.bitLog.AtRestJob(ctx, job.AtRestKey); err != nil || j.State != bitlog.AtRestQueued {
		t.Fatalf("job after the second invocation: %+v %v, want queued", j, err)
	}

	// startWorkman runs workman on queues until done; it is stopped when
	// the test ends (a workman stopped while a long poll is out may lose
	// the message the poll is later given to its visibility timeout, so
	// the checking one keeps running through the repair).
	startWorkman := func(phase, types, queues string, done func() bool) {
		t.Helper()
		w := f.startWorkman(types, queues)
		if !testbin.Poll(2*time.Minute, 500*time.Millisecond, done) {
			t.Fatalf("%s: not done in time (bit %d, bit-report %d, bit-error %d, dead letters %d)\nworkman:\n%s", phase,
				f.depth(queue.KeyBit), f.depth(queue.KeyBitReport), f.depth(queue.KeyBitError), f.depth(queue.KeyDeadLetter), w.Output())
		}
	}
	report := func(store string) *bitlog.Report {
		reps, err := f.bitLog.Reports(ctx, bitlog.ReportFilter{RunID: job.RunID, Account: account, StoreID: store, SpaceID: space})
		if err != nil || len(reps) == 0 {
			return nil
		}
		return &reps[0]
	}
	// 3. The checks and the reports (no repair yet: BIT_ERRORs wait).
	startWorkman("check", "BIT,BIT_REPORT", "bit,bit-report", func() bool {
		return report("1") != nil && report("2") != nil && f.depth(queue.KeyBit) == 0
	})
	if r := report("1"); r.Result != bitlog.ResultSuccess || r.Counts.Success != n {
		t.Errorf("store 1's report: %+v, want %d SUCCESS", r, n)
	}
	if r := report("2"); r.Result != bitlog.ResultFailure || r.Counts.Total != n || r.Counts.Failure != 1 || r.Counts.Success != n-1 {
		t.Errorf("store 2's report: %+v, want %d checked, 1 FAILURE", r, n)
	}
	rows, _, err := f.bitLog.Results(ctx, bitlog.Filter{RunID: job.RunID, Account: account, StoreID: "2", SpaceID: space, Limit: 100})
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
	if d := f.depth(queue.KeyBitError); d != 1 {
		t.Errorf("%d BIT_ERRORs queued, want 1 (the altered copy)", d)
	}

	// 4. The repair: BIT_ERROR (store 2's copy from store 1), its AUDIT,
	// and the re-check (by the first workman).
	badOf := func() *bitlog.Row {
		rs, _, err := f.bitLog.Results(ctx, bitlog.Filter{RunID: job.RunID, Account: account, StoreID: "2", SpaceID: space, ContentID: id(bad)})
		if err != nil || len(rs) != 1 {
			return nil
		}
		return &rs[0]
	}
	startWorkman("repair", "BIT_ERROR,AUDIT", "bit-error,audit", func() bool {
		r := badOf()
		return r != nil && r.Result == bitlog.ResultSuccess && f.depth(queue.KeyBitError) == 0 && f.depth(queue.KeyBit) == 0 && f.depth(queue.KeyAudit) == 0
	})
	if r := badOf(); !strings.Contains(r.Details, "repaired from store 1") {
		t.Errorf("the altered copy's row after the repair: %+v", r)
	}
	after, err := f.cold.Head(ctx, space, id(bad))
	if err != nil || after.ProviderChecksum != "md5:"+md5hex(body(bad)) || after.StorageClass != classOf(bad) {
		t.Errorf("store 2's copy after the repair: %+v %v, want the original bytes in %s", after, err, classOf(bad))
	}
	if d := f.depth(queue.KeyDeadLetter); d != 0 {
		t.Errorf("%d dead letters", d)
	}

	// 5. Mill read no archived object and restored none.
	gets := f.counted.count(func(r countedReq) bool {
		return r.method == http.MethodGet && r.bucket == f.coldBucket && archivedKeys[r.key]
	})
	restores := f.counted.count(func(r countedReq) bool { return strings.Contains(r.query, "restore") })
	heads := f.counted.count(func(r countedReq) bool {
		return r.method == http.MethodHead && r.bucket == f.coldBucket && archivedKeys[r.key]
	})
	if gets != 0 || restores != 0 {
		t.Errorf("Mill sent %d GETs and %d restores of archived objects, want none", gets, restores)
	}
	hotGets := f.counted.count(func(r countedReq) bool {
		return r.method == http.MethodGet && r.bucket == f.hotBucket && strings.HasPrefix(r.key, "mill/"+space+"/")
	})
	if heads == 0 || hotGets < n {
		t.Errorf("the proxy counted %d HEADs of archived objects and %d GETs of hot ones: it did not see Mill's requests", heads, hotGets)
	}
	t.Logf("requests to the archived objects through the proxy: %d HEAD, %d GET, %d restore", heads, gets, restores)

	// 6. Coverage: after the loop every copy of both stores is within
	// target (store 1's read, store 2's at rest).
	fullyCovered := func(when string) {
		t.Helper()
		cov := f.coverage()
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
	if tag, err := f.pool.Exec(ctx, `UPDATE bit_verdict SET checked_at = checked_at - interval '100 days'
WHERE account = $1 AND store_id = '1' AND space_id = $2 AND content_id = $3`, account, space, id(aged)); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("age the verdict: %v %v", tag, err)
	}
	if c := f.coverage()["1"]; c == nil || c["overdue"] != 1.0 || c["within_target"] != float64(n-1) {
		t.Fatalf("coverage of store 1 with one verdict aged: %v, want 1 overdue", c)
	}
	f.bitproducer(append([]string{"--frequency", "1s", "--skip-covered", "1d"}, atRest...)...)
	var next *bitlog.Report
	if !testbin.Poll(2*time.Minute, 500*time.Millisecond, func() bool {
		reps, err := f.bitLog.Reports(ctx, bitlog.ReportFilter{Account: account, StoreID: "1", SpaceID: space, Limit: 1})
		if err == nil && len(reps) == 1 && reps[0].RunID != job.RunID {
			next = &reps[0]
		}
		return next != nil && f.depth(queue.KeyBit) == 0
	}) {
		t.Fatalf("no report of the next run (bit queue %d)", f.depth(queue.KeyBit))
	}
	if rec, err := f.bitLog.RunSpace(ctx, next.RunID, account, "1", space); err != nil || rec.Expected != 1 || next.Counts.Total != 1 || next.Result != bitlog.ResultSuccess {
		t.Errorf("the next run in store 1: record %+v %v, report %+v; want 1 item queued, checked, SUCCESS", rec, err, next)
	}
	if rows, _, err := f.bitLog.Results(ctx, bitlog.Filter{RunID: next.RunID, Limit: 100}); err != nil || len(rows) != 1 ||
		rows[0].StoreID != "1" || rows[0].ContentID != id(aged) || rows[0].Result != bitlog.ResultSuccess {
		t.Errorf("the next run checked %+v (%v), want only store 1's %s", rows, err, id(aged))
	}
	if _, err := f.bitLog.RunSpace(ctx, next.RunID, account, "2", space); !errors.Is(err, bitlog.ErrNoRun) {
		t.Errorf("store 2's space in the next run: %v, want left out (every copy within target)", err)
	}
	fullyCovered("after the next run")
}
