package adversarial

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/millfleet/mill/internal/testkit/faultproxy"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/duradb"
	"github.com/millfleet/mill/pkg/duradb/mysqlduradb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// TestDuraCloudDatabaseHostile: with --duracloud-db, what a message says
// never becomes a row of DuraCloud's mill database. Forged AUDIT tasks
// (an item that is not in the store; an item's wrong checksum; a true
// checksum with a false size and mimetype) and a STORAGE_STATS
// continuation claiming counts Mill never saved leave no row but the
// item's own values as its store reports them; the forged checksum and
// the forged counts are dead-lettered as permanent. A content ID
// DuraCloud's utf8mb3 columns cannot hold gets no manifest row, and its
// duplication goes on.
func TestDuraCloudDatabaseHostile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	m := newMill(t, ctx)
	dsn := testenv.MySQL(t)
	mdb, err := mysqlduradb.Open(ctx, dsn)
	must(t, err)
	defer mdb.Close()
	m.extraEnv = append(m.extraEnv, "MILL_DURACLOUD_DB="+dsn)
	m.writeConfig(nil, nil)

	body := "the real content"
	real := md5hex(body)
	m.put("1", space, "real.txt", body)
	m.put("1", space, "emoji-\U0001F600.txt", "four bytes")
	at := time.Now().Add(2 * time.Second) // after the writes, S3 keeping whole seconds
	w := m.startWorkman("--task-types", "NOOP,AUDIT,DUP,BIT,BIT_ERROR,BIT_REPORT,STORAGE_STATS",
		"--checkpoint-bucket", m.claimsBucket)
	audit := func(id, checksum, size, mime string) {
		tk := task.New(task.TypeAudit, map[string]string{"account": "acme", "storeId": "1", "spaceId": space, "contentId": id,
			"action": "ADD_CONTENT", "content-checksum": checksum, "content-size": size, "content-mimetype": mime,
			"date-time": fmt.Sprint(at.UnixMilli()), "user-id": "mallory"})
		m.send(queue.KeyAudit, encode(t, tk), nil)
	}
	for time.Now().Before(at) {
		time.Sleep(100 * time.Millisecond) // the event must follow the writes
	}
	audit("ghost.txt", "0123456789abcdef0123456789abcdef", "5", "text/plain") // not in the store
	audit("real.txt", "fedcba9876543210fedcba9876543210", "16", "text/plain") // the wrong checksum
	audit("real.txt", real, "999999", "application/x-forged")                 // a true checksum, lies beside it
	audit("emoji-\U0001F600.txt", md5hex("four bytes"), "10", "text/plain")   // outside utf8mb3
	stats := task.New(task.TypeStorageStats, map[string]string{"account": "acme", "storeId": "1", "spaceId": space,
		"runId": "20260101T000000Z", task.KeyStatsMarker: "real.txt", task.KeyStatsItems: "1000000",
		task.KeyStatsBytes: "1000000000000", task.KeyStatsStarted: fmt.Sprint(at.UnixMilli())})
	m.send(queue.KeyBit, encode(t, stats), nil)

	letters := m.deadLetters(2, 90*time.Second, w)
	var reasons []string
	for _, d := range letters {
		reasons = append(reasons, fmt.Sprintf("%s %s: %s", d.TaskType, d.Reason, d.Error))
	}
	if len(letters) != 2 || !strings.Contains(strings.Join(reasons, "\n"), "checksum") ||
		!strings.Contains(strings.Join(reasons, "\n"), "hand-on") {
		t.Errorf("dead letters:\n%s\nwant the forged checksum and the forged counts", strings.Join(reasons, "\n"))
	}
	if !m.drained(90*time.Second, w) {
		t.Fatalf("queues not drained\n%s", w.Output())
	}
	rows, err := mdb.Manifest(ctx, "acme", "1", space)
	must(t, err)
	want := duradb.ManifestItem{Account: "acme", StoreID: "1", SpaceID: space, ContentID: "real.txt", Checksum: real,
		Size: fmt.Sprint(len(body)), MimeType: "text/plain"}
	if len(rows) != 1 || func() duradb.ManifestItem { r := rows[0]; r.Modified = time.Time{}; return r }() != want {
		t.Errorf("manifest of store 1 = %+v\nwant only %+v (the store's values)", rows, want)
	}
	st, err := mdb.Stats(ctx, "acme", "1", space)
	must(t, err)
	if len(st) != 0 {
		t.Errorf("space_stats rows from a forged continuation: %+v", st)
	}
	if got, err := m.read("2", space, "emoji-\U0001F600.txt"); err != nil || string(got) != "four bytes" {
		t.Errorf("the item DuraCloud's schema cannot hold was not duplicated: %q, %v", got, err)
	}
	w.alive(t)
}

// TestDuraCloudDatabaseOutage: DuraCloud's mill database going away is an
// outage of the dependency "mysql", not a failure of the tasks that write
// to it: with --max-attempts 1, an AUDIT task handled while the database
// does not answer is not dead-lettered; Workman's circuit holds it, and
// once the database answers again the task completes and its manifest
// row is written.
func TestDuraCloudDatabaseOutage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	m := newMill(t, ctx)
	dsn := testenv.MySQL(t)
	mdb, err := mysqlduradb.Open(ctx, dsn)
	must(t, err)
	defer mdb.Close()
	cfg, err := mysql.ParseDSN(dsn)
	must(t, err)
	proxy, err := faultproxy.New(cfg.Addr)
	must(t, err)
	defer proxy.Close()
	cfg.Addr = proxy.Addr()
	m.extraEnv = append(m.extraEnv, "MILL_DURACLOUD_DB="+cfg.FormatDSN())
	m.writeConfig(nil, nil)
	m.put("1", space, "real.txt", "the real content")
	at := time.Now().Add(2 * time.Second)
	w := m.startWorkman()
	w.WaitLine(t, 30*time.Second, "workman started")
	for time.Now().Before(at) {
		time.Sleep(100 * time.Millisecond) // the event must follow the write
	}

	proxy.Cut()
	m.send(queue.KeyAudit, encode(t, task.New(task.TypeAudit, map[string]string{"account": "acme", "storeId": "1",
		"spaceId": space, "contentId": "real.txt", "action": "ADD_CONTENT", "content-checksum": md5hex("the real content"),
		"date-time": fmt.Sprint(at.UnixMilli()), "user-id": "alice"})), nil)
	circuit := func(msg string) {
		t.Helper()
		w.WaitLineFunc(t, 60*time.Second, msg+" (mysql)", func(l string) bool {
			return strings.Contains(l, msg) && strings.Contains(l, `"dependency":"`+duradb.DependencyMySQL+`"`)
		})
	}
	circuit("dependency unavailable: circuit open")
	if letters := m.deadLetters(1, 10*time.Second, w); len(letters) != 0 {
		t.Fatalf("dead-lettered during the outage: %s %s", letters[0].Reason, letters[0].Error)
	}
	proxy.Restore()
	circuit("dependency answers again: circuit closed")
	if !m.drained(90*time.Second, w) {
		t.Fatalf("queues not drained after the outage\n%s", w.Output())
	}
	rows, err := mdb.Manifest(ctx, "acme", "1", space)
	must(t, err)
	if len(rows) != 1 || rows[0].ContentID != "real.txt" || rows[0].Checksum != md5hex("the real content") {
		t.Fatalf("manifest after the outage = %+v, want real.txt's row\n%s", rows, w.Output())
	}
	if letters := m.deadLetters(1, 3*time.Second, w); len(letters) != 0 {
		t.Errorf("dead-lettered: %s %s", letters[0].Reason, letters[0].Error)
	}
	w.alive(t)
}
