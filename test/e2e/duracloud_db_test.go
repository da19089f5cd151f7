package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/duradb"
	"github.com/millfleet/mill/pkg/duradb/mysqlduradb"
	"github.com/millfleet/mill/pkg/queue"
)

// The SQL DuraStore runs on the mill database, translated by hand from
// DuraCloud's mill-db-repo JPA repositories (Spring Data's derived queries
// written out; the native ones as they run, with their named parameters
// as placeholders).
const (
	// JpaManifestItemRepo.getMinId, then
	// findByAccountAndStoreIdAndSpaceIdAndDeletedFalse(account, store,
	// space, lastId, limit): the pages of a manifest download
	// (ManifestRest → ManifestGenerator → JpaManifestStore.getItems).
	duraStoreManifestMinID = `select ifnull(min(id),0) from manifest_item
		where account = ? and store_id = ? and space_id = ? and deleted = false`
	duraStoreManifestPage = `select content_id, content_checksum, content_size, content_mimetype
		from manifest_item where account = ? and store_id = ? and space_id = ? and deleted = false
		and id > ? order by id limit ?`
	// JpaBitIntegrityReportRepo.findByStoreIdAndSpaceIdAndDisplayTrueOrderByCompletionDateDesc
	// (storeId, spaceId, first page of 1): BitIntegrityReportRest's report.
	duraStoreBitReport = `select report_space_id, report_content_id, result, completion_date
		from bit_report where store_id = ? and space_id = ? and display = true
		order by completion_date desc limit 1`
	// JpaSpaceStatsRepo.getByAccountIdAndStoreIdAndSpaceId(account, store,
	// space, start, end, interval): StorageStatsRest's space statistics
	// over time, by day (INTERVAL_DAY).
	duraStoreSpaceStats = `select unix_timestamp(date_format(min(modified), '%Y-%m-%d 23:59:59')) as modified,
		account_id, store_id, space_id, avg(byte_count) as byte_count, avg(object_count) as object_count,
		date_format(modified, ?)
		from space_stats where account_id = ? and store_id = ? and space_id = ? and modified between ? and ?
		group by date_format(modified, ?), account_id, store_id, space_id`
	// JpaSpaceStatsRepo.getByAccountIdAndStoreIdAndDay(account, store,
	// start, end): StorageStatsRest's statistics of every space of a store
	// on one day.
	duraStoreStoreDay = `select unix_timestamp(date_format(min(modified), '%Y-%m-%d 23:59:59')) as modified,
		account_id, store_id, space_id, avg(byte_count) as byte_count, avg(object_count) as object_count,
		date_format(modified, '%Y-%m-%d 00:00:00')
		from space_stats where account_id = ? and store_id = ? and modified between ? and ?
		group by date_format(modified, '%Y-%m-%d'), account_id, store_id, space_id`
	intervalDay = "%Y-%m-%d"
)

// javaBody writes a task as DuraCloud's Java workers do: the
// java.util.Properties text of its fields, a date comment first.
func javaBody(fields map[string]string) string {
	esc := strings.NewReplacer(`\`, `\\`, "=", `\=`, ":", `\:`, "#", `\#`, "!", `\!`, "\n", `\n`)
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("#" + time.Now().UTC().Format("Mon Jan 02 15:04:05 MST 2006") + "\n")
	for _, k := range keys {
		b.WriteString(esc.Replace(k) + "=" + esc.Replace(fields[k]) + "\n")
	}
	return b.String()
}

// TestDuraCloudDatabaseEndToEnd: a DuraCloud deployment as DuraCloud
// writes it (a bucket per space per store, properties as metadata; the
// MySQL mill database with its schema and rows the Java Mill wrote), and
// Mill's real Workman in place of the Java workers (--wire-format
// properties, --duracloud-db, --report-admin-space), fed Java-shaped
// AUDIT, BIT, BIT_REPORT and STORAGE_STATS messages. Workman duplicates
// store 1's space to store 2 and checks both in place; DuraStore's queries
// then return current rows: every item of both stores in the manifest
// with the values in the stores (and not the item a forged AUDIT claimed), today's SUCCESS report naming
// its copy in the admin space, and today's statistics.
func TestDuraCloudDatabaseEndToEnd(t *testing.T) {
	cfg := testenv.AWS(t)
	dbURL := testenv.Schema(t)
	dsn := testenv.MySQL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bins := testbin.Build(t, "millctl", "workman")
	prefix := testenv.Prefix(t)
	sqsc, s3c, ddb := cfg.SQS(), cfg.S3(), cfg.DynamoDB()
	testenv.CleanupQueues(t, sqsc, prefix)

	// The deployment's stores: DuraCloud's buckets, written its way.
	key1, key2 := testenv.AccessKeyID(), testenv.AccessKeyID()
	b1, b2 := strings.ToLower(key1), strings.ToLower(key2)
	duraBucket(ctx, t, s3c, b1+".photos", map[string]string{"space-created": "2019-03-04T05:06:07"})
	items := map[string]string{"a.txt": "alpha", "b/c.txt": "beta gamma", "d.jpg": "jpeg bytes, not really"}
	sums := map[string]string{}
	for id, body := range items {
		sums[id] = duraObject(ctx, t, s3c, b1+".photos", id, "text/plain", body, map[string]string{"creator": "alice"})
	}
	seeded := time.Now()
	for _, b := range []string{b2 + ".photos", b1 + ".x-duracloud-admin", b2 + ".x-duracloud-admin"} {
		testenv.CleanupBucket(t, s3c, b) // made by Mill
	}
	names := map[string]string{"MILL_CONFIG_BUCKET": prefix + "config", "MILL_STATE_BUCKET": prefix + "state",
		"MILL_CLAIMS_BUCKET": prefix + "state", "MILL_REPORTS_BUCKET": prefix + "reports",
		"MILL_AUDIT_TABLE": prefix + "audit-log", "MILL_LEASE_TABLE": prefix + "leases", "MILL_FLEET_TABLE": prefix + "fleet"}
	for _, b := range []string{prefix + "config", prefix + "state", prefix + "reports", prefix + "books1", prefix + "books2"} {
		testenv.CleanupBucket(t, s3c, b)
	}
	for _, b := range []string{prefix + "books1", prefix + "books2"} {
		if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tb := range []string{"MILL_AUDIT_TABLE", "MILL_LEASE_TABLE", "MILL_FLEET_TABLE"} {
		testenv.CleanupTable(t, ddb, names[tb])
	}

	// The mill database: DuraCloud's schema, and what the Java Mill wrote
	// before (a manifest row of a.txt's old content, an old report).
	mdb, err := mysqlduradb.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer mdb.Close()
	my := mdb.SQL()
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := my.ExecContext(ctx, `insert into manifest_item (modified, account, store_id, space_id, content_id,
		content_checksum, content_size, content_mimetype, deleted, missing_from_storage_provider, unique_key, version)
		values (?, 'acme', '1', 'photos', 'a.txt', 'd41d8cd98f00b204e9800998ecf8427e', '0', 'text/plain', 0, 0, ?, 0)`,
		old, duradb.UniqueKey("acme", "1", "photos", "a.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := my.ExecContext(ctx, `insert into bit_report (modified, account, store_id, space_id, report_space_id,
		report_content_id, completion_date, display, result, version)
		values (?, 'acme', '1', 'photos', 'x-duracloud-admin', 'bit-integrity/photos/1/old.tsv', ?, 1, 'FAILURE', 0)`, old, old); err != nil {
		t.Fatal(err)
	}

	conf := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(conf, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("accounts.json", fmt.Sprintf(`{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "layout": "duracloud", "accountPrefix": %q, "bucket": %q, "region": "us-east-1"},
  {"id": "2", "kind": "s3", "layout": "duracloud", "accountPrefix": %q, "bucket": %q, "region": "us-east-1"}]}]}`,
		key1, prefix+"books1", key2, prefix+"books2"))
	write("duplication-accounts.json", `["acme"]`)
	write("acme-duplication-policy.json", `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`)
	env := testbin.Env("MILL_QUEUE_PREFIX="+prefix, "MILL_CONFIG_DIR="+conf, "MILL_DATABASE_URL="+dbURL,
		"MILL_WIRE_FORMAT=properties", "MILL_DURACLOUD_DB="+dsn)
	for k, v := range names {
		env = append(env, k+"="+v)
	}
	if c := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: bins["millctl"], Env: env,
		Args: []string{"setup", "--skip-db=false", "--database-url", dbURL, "--queue-prefix", prefix, "--audit-table", names["MILL_AUDIT_TABLE"]}}); c.Err() != nil {
		t.Fatalf("millctl setup: %v\n%s", c.Err(), c.Stderr())
	}

	queueURL := map[string]*string{}
	for _, k := range []string{queue.KeyAudit, queue.KeyDupHigh, queue.KeyBit, queue.KeyBitReport, queue.KeyBitError, queue.KeyDeadLetter} {
		o, err := sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue.Name(prefix, k))})
		if err != nil {
			t.Fatal(err)
		}
		queueURL[k] = o.QueueUrl
	}
	send := func(key string, fields map[string]string) {
		t.Helper()
		if _, err := sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: queueURL[key], MessageBody: aws.String(javaBody(fields))}); err != nil {
			t.Fatal(err)
		}
	}
	depth := func(key string) int {
		n, err := testenv.QueueDepth(ctx, sqsc, aws.ToString(queueURL[key]))
		if err != nil {
			return -1
		}
		return n
	}

	// DuraStore's audit writer's messages for the writes above (an event
	// after them: the audit processor confirms it against the store), and
	// one forged for an item that is not there (the audit log records the
	// claim; DuraCloud's manifest must not list it).
	if wait := 2*time.Second - time.Since(seeded); wait > 0 {
		time.Sleep(wait) // S3 keeps whole seconds: the writes must precede the event
	}
	at := fmt.Sprint(time.Now().UnixMilli())
	for id, body := range items {
		send(queue.KeyAudit, map[string]string{"type": "AUDIT", "account": "acme", "storeId": "1", "spaceId": "photos",
			"contentId": id, "action": "ADD_CONTENT", "content-checksum": sums[id], "content-mimetype": "text/plain",
			"content-size": fmt.Sprint(len(body)), "content-properties": "{\n  \"creator\" : \"alice\"\n}",
			"date-time": at, "user-id": "alice", "store-type": "AMAZON_S3"})
	}
	send(queue.KeyAudit, map[string]string{"type": "AUDIT", "account": "acme", "storeId": "1", "spaceId": "photos",
		"contentId": "ghost.txt", "action": "ADD_CONTENT", "content-checksum": "0123456789abcdef0123456789abcdef",
		"content-mimetype": "text/plain", "content-size": "5", "date-time": at, "user-id": "mallory", "store-type": "AMAZON_S3"})

	w := testbin.Start(t, testbin.Spec{Path: bins["workman"], Env: env, Args: []string{"--config-dir", conf,
		"--report-admin-space", "--http-addr", "", "--cloudwatch=false", "--receive-wait", "1s",
		"--queue-backoff-min", "250ms", "--queue-backoff-max", "1s", "--long-poll-wait", "1s", "--grace-period", "5s"}})
	defer w.Stop()
	// until waits for cond, with the work queues empty and the dead
	// letters at deadLetters.
	until := func(phase string, deadLetters int, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(500 * time.Millisecond) {
			idle := true
			for _, k := range []string{queue.KeyAudit, queue.KeyDupHigh, queue.KeyBit, queue.KeyBitReport, queue.KeyBitError} {
				idle = idle && depth(k) == 0
			}
			if idle && depth(queue.KeyDeadLetter) == deadLetters && cond() {
				return
			}
			if w.Exited() {
				t.Fatalf("%s: workman exited: %v\n%s", phase, w.Err(), w.Output())
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not done in 90 s (dead letters %d)\nworkman:\n%s", phase, depth(queue.KeyDeadLetter), w.Output())
			}
		}
	}
	live := func(store string) map[string][3]string {
		t.Helper()
		out := map[string][3]string{}
		var minID int64
		if err := my.QueryRowContext(ctx, duraStoreManifestMinID, "acme", store, "photos").Scan(&minID); err != nil {
			t.Fatal(err)
		}
		rows, err := my.QueryContext(ctx, duraStoreManifestPage, "acme", store, "photos", minID-1, 1000)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id, sum, size, mime string
			if err := rows.Scan(&id, &sum, &size, &mime); err != nil {
				t.Fatal(err)
			}
			out[id] = [3]string{sum, size, mime}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	current := func(store string) bool {
		got := live(store)
		if len(got) != len(items) {
			return false
		}
		for id, body := range items {
			if got[id] != [3]string{sums[id], fmt.Sprint(len(body)), "text/plain"} {
				return false
			}
		}
		return true
	}
	until("audit and duplication", 0, func() bool { return current("1") && current("2") })

	// The Java bit producer's and storage stats producer's tasks: no run.
	for _, store := range []string{"1", "2"} {
		for id := range items {
			send(queue.KeyBit, map[string]string{"type": "BIT", "account": "acme", "storeId": store, "spaceId": "photos", "contentId": id})
		}
	}
	until("bit checks", 0, func() bool { return true })
	for _, store := range []string{"1", "2"} {
		send(queue.KeyBitReport, map[string]string{"type": "BIT_REPORT", "account": "acme", "storeId": store, "spaceId": "photos"})
		send(queue.KeyBit, map[string]string{"type": "STORAGE_STATS", "account": "acme", "storeId": store, "spaceId": "photos"})
	}
	type report struct {
		space, id, result string
		completed         time.Time
	}
	latest := func(store string) (r report, ok bool) {
		err := my.QueryRowContext(ctx, duraStoreBitReport, store, "photos").Scan(&r.space, &r.id, &r.result, &r.completed)
		if err == sql.ErrNoRows {
			return r, false
		}
		if err != nil {
			t.Fatal(err)
		}
		return r, true
	}
	day := time.Now().UTC()
	statsToday := func(store string) (items, bytes float64, ok bool) {
		rows, err := my.QueryContext(ctx, duraStoreSpaceStats, intervalDay, "acme", store, "photos",
			day.Add(-24*time.Hour), day.Add(24*time.Hour), intervalDay)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var modified int64
			var acct, st, sp, bucketDay string
			if err := rows.Scan(&modified, &acct, &st, &sp, &bytes, &items, &bucketDay); err != nil {
				t.Fatal(err)
			}
			if bucketDay == day.Format("2006-01-02") {
				ok = true
			}
		}
		return items, bytes, ok
	}
	until("reports and statistics", 0, func() bool {
		r1, ok1 := latest("1")
		r2, ok2 := latest("2")
		_, _, s1 := statsToday("1")
		_, _, s2 := statsToday("2")
		return ok1 && ok2 && r1.completed.After(old) && r2.completed.After(old) && s1 && s2
	})
	w.Signal(t, syscall.SIGTERM)
	if werr := w.Wait(t, 30*time.Second); werr != nil {
		t.Errorf("workman after SIGTERM: %v", werr)
	}

	// DuraStore's answers.
	for _, store := range []string{"1", "2"} {
		if got := live(store); !current(store) {
			t.Errorf("store %s: DuraStore's manifest = %v, want %d items with their MD5, size and mimetype", store, got, len(items))
		}
		var ghosts int
		if err := my.QueryRowContext(ctx, `select count(*) from manifest_item where content_id = 'ghost.txt'`).Scan(&ghosts); err != nil || ghosts != 0 {
			t.Errorf("the forged AUDIT's item has %d manifest rows (%v), want none", ghosts, err)
		}
		r, _ := latest(store)
		if r.result != duradb.JavaSuccess || r.space != "x-duracloud-admin" || !strings.HasPrefix(r.id, "bit-integrity/photos/"+store+"/") ||
			time.Since(r.completed) > 10*time.Minute {
			t.Errorf("store %s: DuraStore's bit report = %+v, want today's SUCCESS in x-duracloud-admin", store, r)
		} else if _, err := s3c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b1 + ".x-duracloud-admin"), Key: aws.String(r.id)}); err != nil {
			t.Errorf("store %s: the report the row names is not in the primary store's admin space: %v", store, err)
		}
		n, bytes, _ := statsToday(store)
		var want float64
		for _, body := range items {
			want += float64(len(body))
		}
		if n != float64(len(items)) || bytes != want {
			t.Errorf("store %s: DuraStore's statistics of today: %v items, %v bytes; want %d, %v", store, n, bytes, len(items), want)
		}
		rows, err := my.QueryContext(ctx, duraStoreStoreDay, "acme", store, day.Truncate(24*time.Hour), day.Truncate(24*time.Hour).Add(24*time.Hour-time.Second))
		if err != nil {
			t.Fatal(err)
		}
		spaces := 0
		for rows.Next() {
			spaces++
		}
		rows.Close()
		if spaces != 1 {
			t.Errorf("store %s: DuraStore's statistics by day list %d spaces, want 1", store, spaces)
		}
	}
}
