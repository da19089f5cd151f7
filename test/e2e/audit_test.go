package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/base/paging"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/task"
)

const (
	auditItems   = 100
	auditDeletes = 10
	auditSpace   = "docs"
)

func auditItemID(i int) string { return fmt.Sprintf("dir/item-%03d.txt", i) }

func auditContent(i int) []byte {
	return []byte(fmt.Sprintf("audit e2e item %03d: %s\n", i, strings.Repeat(fmt.Sprintf("%x", i*104729), 8)))
}

// runN runs f(0..n-1) on workers goroutines and returns every error.
func runN(n, workers int, f func(i int) error) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

func TestMain(m *testing.M) { testbin.Main(m) }

// TestAuditDuplicationEndToEnd is the change flow (docs/ARCHITECTURE.md,
// Flows) through the real binaries: millctl content put of 100 items into
// store 1 (S3) of an account whose policy duplicates store 1 to stores 2 (S3)
// and 3 (fs); workman (AUDIT, DUP, NOOP) until the queues drain; the audit
// log, the content index and both destinations then hold every item (and the
// destinations' own writes are audited and indexed). Then 10 items are
// removed from store 1 and a second workman run removes them everywhere, the
// index marking them deleted in all three stores.
func TestAuditDuplicationEndToEnd(t *testing.T) {
	cfg := testenv.AWS(t)
	dbURL := testenv.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()

	bins := testbin.Build(t, "millctl", "workman")
	millctl, workman := bins["millctl"], bins["workman"]
	t.Logf("built the binaries in %v", time.Since(start).Round(time.Millisecond))

	prefix := testenv.Prefix(t)
	sqsc, s3c, ddb := cfg.SQS(), cfg.S3(), cfg.DynamoDB()
	testenv.CleanupQueues(t, sqsc, prefix)
	auditTable := prefix + "audit-log"
	names := map[string]string{"MILL_CONFIG_BUCKET": prefix + "config", "MILL_STATE_BUCKET": prefix + "state", "MILL_CLAIMS_BUCKET": prefix + "state",
		"MILL_REPORTS_BUCKET": prefix + "reports", "MILL_AUDIT_TABLE": auditTable, "MILL_LEASE_TABLE": prefix + "leases",
		"MILL_FLEET_TABLE": prefix + "fleet"}
	bucket1, bucket2 := prefix+"store1", prefix+"store2"
	for _, b := range []string{names["MILL_CONFIG_BUCKET"], names["MILL_STATE_BUCKET"], names["MILL_REPORTS_BUCKET"], bucket1, bucket2} {
		testenv.CleanupBucket(t, s3c, b)
	}
	testenv.CleanupTable(t, ddb, auditTable)
	testenv.CleanupTable(t, ddb, names["MILL_LEASE_TABLE"])
	testenv.CleanupTable(t, ddb, names["MILL_FLEET_TABLE"])
	for _, b := range []string{bucket1, bucket2} {
		if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	root3 := t.TempDir()

	conf := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(conf, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("accounts.json", fmt.Sprintf(`{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": %q, "prefix": "one/", "region": "us-east-1"},
  {"id": "2", "kind": "s3", "bucket": %q, "prefix": "two/", "region": "us-east-1"},
  {"id": "3", "kind": "fs", "root": %q}]}]}`, bucket1, bucket2, root3))
	write("duplication-accounts.json", `["acme"]`)
	write("acme-duplication-policy.json", `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "1", "destStoreId": "3"}]}`)

	// The children's environment: the emulator's, and this test's names.
	env := testbin.Env("MILL_QUEUE_PREFIX="+prefix, "MILL_CONFIG_DIR="+conf, "MILL_DATABASE_URL="+dbURL)
	for k, v := range names {
		env = append(env, k+"="+v)
	}
	runCmd := func(bin string, args ...string) string {
		c := testbin.Run(t, 5*time.Minute, testbin.Spec{Path: bin, Args: args, Env: env})
		if err := c.Err(); err != nil {
			t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), strings.Join(args, " "), err, c.Stdout(), c.Stderr())
		}
		return c.Stdout()
	}
	// tryCmd is runCmd for other goroutines: it returns the failure.
	tryCmd := func(bin string, args ...string) error {
		c := exec.CommandContext(ctx, bin, args...)
		c.Env = env
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
		}
		return nil
	}

	runCmd(millctl, "setup", "--skip-db=false", "--database-url", dbURL, "--queue-prefix", prefix, "--audit-table", auditTable)
	t.Logf("setup done at %v", time.Since(start).Round(time.Millisecond))

	queueURL := func(key string) *string {
		o, err := sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue.Name(prefix, key))})
		if err != nil {
			t.Fatal(err)
		}
		return o.QueueUrl
	}
	auditQ, dupQ, dlq := queueURL(queue.KeyAudit), queueURL(queue.KeyDupHigh), queueURL(queue.KeyDeadLetter)
	depth := func(u *string) int {
		n, err := testenv.QueueDepth(ctx, sqsc, aws.ToString(u))
		if err != nil {
			t.Logf("queue attributes: %v", err)
			return -1
		}
		return n
	}

	// 1. 100 items into store 1, one millctl exec each (the first creates
	// the space).
	files := t.TempDir()
	for i := range auditItems {
		if err := os.WriteFile(filepath.Join(files, fmt.Sprint(i)), auditContent(i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put := func(i int, extra ...string) error {
		args := append([]string{"content", "put"}, extra...)
		return tryCmd(millctl, append(args, "acme", "1", auditSpace, auditItemID(i), filepath.Join(files, fmt.Sprint(i)))...)
	}
	if err := put(0, "--create-space"); err != nil {
		t.Fatal(err)
	}
	if err := runN(auditItems-1, 4, func(i int) error { return put(i + 1) }); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d items put at %v", auditItems, time.Since(start).Round(time.Millisecond))

	// 2. workman until audit, dup-high and the dead letter stay empty.
	runWorkman := func(phase string) {
		t.Helper()
		w := testbin.Start(t, testbin.Spec{Path: workman, Args: []string{"--task-types", "AUDIT,DUP,NOOP", "--queues", "audit,dup-high",
			"--config-dir", conf, "--database-url", dbURL, "--audit-table", auditTable, "--queue-prefix", prefix,
			"--http-addr", "", "--cloudwatch=false", "--receive-wait", "1s",
			"--queue-backoff-min", "250ms", "--queue-backoff-max", "1s", "--long-poll-wait", "1s",
			"--grace-period", "5s"}, Env: env})
		began := time.Now()
		empty := 0
		for deadline := time.Now().Add(75 * time.Second); empty < 3; time.Sleep(500 * time.Millisecond) {
			if a, d, l := depth(auditQ), depth(dupQ), depth(dlq); a == 0 && d == 0 && l == 0 {
				empty++
			} else {
				empty = 0
				if l > 0 {
					t.Fatalf("%s: %d dead letters (audit %d, dup-high %d)\nworkman:\n%s", phase, l, a, d, w.Output())
				}
			}
			if w.Exited() {
				t.Fatalf("%s: workman exited early: %v\n%s", phase, w.Err(), w.Output())
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: queues did not drain: audit %d, dup-high %d, dead-letter %d\nworkman:\n%s",
					phase, depth(auditQ), depth(dupQ), depth(dlq), w.Output())
			}
		}
		w.Signal(t, syscall.SIGTERM)
		if werr := w.Wait(t, 30*time.Second); werr != nil {
			t.Errorf("%s: workman after SIGTERM: %v\n%s", phase, werr, w.Output())
		}
		if s := w.Output(); strings.Contains(s, `"level":"ERROR"`) {
			t.Errorf("%s: workman logged errors:\n%s", phase, s)
		}
		t.Logf("%s: drained in %v (at %v)", phase, time.Since(began).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	}
	runWorkman("after put")

	// 3. The audit log, the index and the destinations.
	db, err := milldb.Open(ctx, dbURL, milldb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	index := pgcontentindex.New(db.Pool)
	alog := dynamoauditlog.New(ddb, auditTable)
	stores := []string{"1", "2", "3"}

	// history counts, per store, the entries of each action on the items.
	history := func(storeID string) map[task.Action]map[string]int {
		t.Helper()
		got := map[task.Action]map[string]int{}
		for tok := ""; ; {
			es, next, err := alog.SpaceHistory(ctx, "acme", storeID, auditSpace, tok, auditlog.MaxPageSize)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				if e.ContentID == "" {
					continue
				}
				if got[e.Action] == nil {
					got[e.Action] = map[string]int{}
				}
				got[e.Action][e.ContentID]++
			}
			if next == "" {
				return got
			}
			tok = next
		}
	}
	checkHistory := func(storeID string, action task.Action, want func(i int) int) {
		t.Helper()
		h := history(storeID)
		n, bad := 0, 0
		for i := range auditItems {
			c := h[action][auditItemID(i)]
			n += c
			if c != want(i) {
				if bad++; bad <= 5 {
					t.Errorf("store %s: %d %s entries for %s, want %d", storeID, c, action, auditItemID(i), want(i))
				}
			}
		}
		t.Logf("store %s: %d %s audit entries", storeID, n, action)
	}
	// live lists the content index's live rows of a store.
	live := func(storeID string) map[string]contentindex.Entry {
		t.Helper()
		out := map[string]contentindex.Entry{}
		for after := ""; ; {
			es, more, err := index.List(ctx, "acme", storeID, auditSpace, after, paging.MaxItems)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				out[e.ContentID] = e
			}
			if !more || len(es) == 0 {
				return out
			}
			after = es[len(es)-1].ContentID
		}
	}
	deleted := func(i int) bool { return i%(auditItems/auditDeletes) == 3 }
	// checkIndex checks every store's rows; gone reports the items that
	// must be tombstones.
	checkIndex := func(gone func(i int) bool) {
		t.Helper()
		for _, s := range stores {
			rows := live(s)
			wantLive := 0
			for i := range auditItems {
				id := auditItemID(i)
				if gone(i) {
					e, err := index.Get(ctx, contentindex.Item{Account: "acme", StoreID: s, SpaceID: auditSpace, ContentID: id})
					if err != nil {
						t.Errorf("store %s: index get %s: %v", s, id, err)
					} else if !e.Deleted {
						t.Errorf("store %s: index row of %s is not marked deleted", s, id)
					}
					continue
				}
				wantLive++
				if e, ok := rows[id]; !ok {
					t.Errorf("store %s: no live index row for %s", s, id)
				} else if want := md5hex(auditContent(i)); e.Checksum != want {
					t.Errorf("store %s: index checksum of %s is %q, want %s", s, id, e.Checksum, want)
				}
			}
			if len(rows) != wantLive {
				t.Errorf("store %s: %d live index rows, want %d", s, len(rows), wantLive)
			}
		}
	}
	// checkDestinations checks stores 2 (one S3 listing, ETags) and 3 (fs,
	// read back).
	fs3, err := fsstore.New(root3)
	if err != nil {
		t.Fatal(err)
	}
	checkDestinations := func(gone func(i int) bool) {
		t.Helper()
		etags := map[string]string{}
		p := s3.NewListObjectsV2Paginator(s3c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket2), Prefix: aws.String("two/" + auditSpace + "/")})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page.Contents {
				etags[strings.TrimPrefix(aws.ToString(o.Key), "two/"+auditSpace+"/")] = strings.Trim(aws.ToString(o.ETag), `"`)
			}
		}
		want2 := 0
		for i := range auditItems {
			id, sum := auditItemID(i), md5hex(auditContent(i))
			etag, in2 := etags[id]
			rc, _, err := fs3.Get(ctx, auditSpace, id)
			if gone(i) {
				if in2 {
					t.Errorf("store 2 still holds deleted %s", id)
				}
				if err == nil {
					rc.Close()
					t.Errorf("store 3 still holds deleted %s", id)
				} else if !errors.Is(err, storage.ErrNotFound) {
					t.Errorf("store 3: get %s: %v", id, err)
				}
				continue
			}
			want2++
			if !in2 {
				t.Errorf("store 2 lacks %s", id)
			} else if etag != sum {
				t.Errorf("store 2: %s has ETag %s, want md5 %s", id, etag, sum)
			}
			if err != nil {
				t.Errorf("store 3: get %s: %v", id, err)
				continue
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Errorf("store 3: read %s: %v", id, err)
			} else if got := md5hex(b); got != sum {
				t.Errorf("store 3: %s has md5 %s, want %s", id, got, sum)
			}
		}
		// Store 2's bucket may also hold a space marker; only items count.
		n2 := 0
		for k := range etags {
			if strings.HasPrefix(k, "dir/") {
				n2++
			}
		}
		if n2 != want2 {
			t.Errorf("store 2 holds %d items, want %d", n2, want2)
		}
	}
	none := func(int) bool { return false }
	// Store 1's items were put; the dup processor copies S3 to S3 server
	// side (audited COPY_CONTENT) and streams to the fs store (ADD_CONTENT).
	one, zero := func(int) int { return 1 }, func(int) int { return 0 }
	checkHistory("1", task.ActionAddContent, one)
	checkHistory("2", task.ActionCopyContent, one)
	checkHistory("2", task.ActionAddContent, zero)
	checkHistory("3", task.ActionAddContent, one)
	checkIndex(none)
	checkDestinations(none)
	if n := depth(dlq); n != 0 {
		t.Errorf("dead-letter queue holds %d messages", n)
	}
	if t.Failed() {
		t.FailNow()
	}

	// 4. Remove 10 items from store 1; a second run removes them from the
	// destinations and the index marks them deleted everywhere.
	if err := runN(auditItems, 4, func(i int) error {
		if !deleted(i) {
			return nil
		}
		return tryCmd(millctl, "content", "rm", "acme", "1", auditSpace, auditItemID(i))
	}); err != nil {
		t.Fatal(err)
	}
	runWorkman("after rm")
	checkDestinations(deleted)
	checkIndex(deleted)
	for _, s := range stores {
		checkHistory(s, task.ActionDeleteContent, func(i int) int {
			if deleted(i) {
				return 1
			}
			return 0
		})
	}
	if n := depth(dlq); n != 0 {
		t.Errorf("dead-letter queue holds %d messages", n)
	}
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}
