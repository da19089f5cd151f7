package adversarial

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/blob/s3blob"
	"github.com/millfleet/mill/pkg/evidence"
	"github.com/millfleet/mill/pkg/evidence/derive"
	"github.com/millfleet/mill/pkg/lease/dynamolease"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// evemit is a Mill whose evidence log the real `millctl evidence append`
// writes to an emulator bucket, and `millctl evidence verify` checks.
type evemit struct {
	*mill
	millctl, bucket, logURL, vkeyFile, skey, leases string
	store                                           *s3blob.Store
}

// appendEvents runs one `millctl evidence append` pass to completion.
func (e *evemit) appendEvents(t *testing.T, extra ...string) string {
	t.Helper()
	p := testbin.Run(t, 2*time.Minute, e.appendSpec(extra...))
	if p.Err() != nil {
		t.Fatalf("millctl evidence append: %v\n%s", p.Err(), p.Output())
	}
	return p.Stdout()
}

func (e *evemit) appendSpec(extra ...string) testbin.Spec {
	return testbin.Spec{Path: e.millctl, Env: append(e.env(), derive.EnvSignerKey+"="+e.skey),
		Args: append([]string{"evidence", "append", "--log", e.logURL, "--settle", "0s", "--start", "2020-01-01T00:00:00Z",
			"--lease-table", e.leases, "--lease-ttl", "3s"}, extra...)}
}

// verify runs `millctl evidence verify --cross-check` and returns its
// exit code and output.
func (e *evemit) verify(t *testing.T, extra ...string) (int, string) {
	t.Helper()
	p := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: e.millctl, Env: e.env(),
		Args: append([]string{"evidence", "verify", "--log", e.logURL, "--key", e.vkeyFile, "--cross-check"}, extra...)})
	return p.ExitCode(), p.Output()
}

// mustVerify fails unless verify passes.
func (e *evemit) mustVerify(t *testing.T, when string) string {
	t.Helper()
	code, out := e.verify(t)
	if code != 0 || !strings.Contains(out, "\nok\n") || strings.Contains(out, "MISMATCH") {
		t.Fatalf("%s: verify --cross-check exit %d, want 0:\n%s", when, code, out)
	}
	return out
}

// mustMismatch fails unless verify exits 1 with a MISMATCH line holding
// every one of want.
func (e *evemit) mustMismatch(t *testing.T, attack string, extra []string, want ...string) {
	t.Helper()
	code, out := e.verify(t, extra...)
	if code != 1 {
		t.Fatalf("%s: verify exit %d, want 1:\n%s", attack, code, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "MISMATCH ") {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(line, w)
		}
		if ok {
			t.Logf("%s: %s", attack, line)
			return
		}
	}
	t.Fatalf("%s: no MISMATCH naming %q:\n%s", attack, want, out)
}

// TestEvidenceFromMillsRecords: a fleet duplicates items, runs two bit
// runs (a replica replaced behind Mill's back is found and repaired), and
// a user deletes an item; the real `millctl evidence append` derives the
// events from the bit log and the audit log and `millctl evidence verify
// --cross-check` passes. Then each tampering is detected and named: a
// bit-log row's result changed in PostgreSQL, an audit-log entry altered in
// DynamoDB, a content-index row's checksum changed, an event deleted from the log, a tile rewritten, the latest
// checkpoint replaced by an older one, the log rolled back whole
// (--trusted). Last, the appender is killed with SIGKILL in the middle of
// a burst of records: after a restart verify passes and every record has
// exactly one event. `millctl evidence events --item` filters the derived
// events.
func TestEvidenceFromMillsRecords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	bins := testbin.Build(t, "workman", "bitproducer", "millctl")
	m := newMill(t, ctx)
	m.writeConfig(nil, nil)
	e := &evemit{mill: m, millctl: bins["millctl"], bucket: m.prefix + "evidence", leases: m.prefix + "leases"}
	_, err := m.s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(e.bucket)})
	must(t, err)
	testenv.CleanupBucket(t, m.s3c, e.bucket)
	ddb := m.cfg.DynamoDB()
	testenv.CleanupTable(t, ddb, e.leases)
	_, err = ddb.CreateTable(ctx, dynamolease.CreateTableInput(e.leases))
	must(t, err)
	e.store = s3blob.New(m.s3c, e.bucket, "evidence/", nil)
	e.logURL = "s3://" + e.bucket + "/evidence"
	skey, vkey, err := evidence.GenerateKey("mill.adversarial/evemit")
	must(t, err)
	e.skey, e.vkeyFile = skey, filepath.Join(t.TempDir(), "evidence.vkey")
	must(t, os.WriteFile(e.vkeyFile, []byte(vkey+"\n"), 0o644))

	// Items written to store 1, audited as a user's writes: the audit
	// processor queues their duplication to stores 2 and 3.
	items := map[string]string{"a": "alpha content", "b": "bravo content", "c": "charlie content", "d": "delta content"}
	// Three attempts: a BIT_ERROR can arrive before its check's row is
	// written (the row comes after the check's actions), and its run rule
	// then retries it; with the suite's one attempt that is a dead letter.
	w := m.startWorkman("--recheck-delay", "2s", "--max-attempts", "3")
	for id, body := range items {
		info := m.put("1", space, id, body)
		size := info.Size
		m.send(queue.KeyAudit, encode(t, task.Audit{Account: "acme", StoreID: "1", SpaceID: space, ContentID: id,
			Action: task.ActionAddContent, UserID: "seed", DateTime: time.Now().Add(time.Second), ContentChecksum: info.Checksum,
			ContentMimetype: info.MimeType, ContentSize: &size}.Task()), nil)
	}
	testbin.WaitFor(t, 90*time.Second, "the duplication of every item", func() bool {
		for id, body := range items {
			for _, s := range []string{"2", "3"} {
				if got, err := m.read(s, space, id); err != nil || string(got) != body {
					return false
				}
			}
		}
		return true
	})
	if !m.drained(time.Minute, w) {
		t.Fatal("the duplication did not drain")
	}
	// d deleted by its user: the deletion is duplicated.
	must(t, m.stores["1"].Delete(ctx, space, "d"))
	m.send(queue.KeyAudit, encode(t, task.Audit{Account: "acme", StoreID: "1", SpaceID: space, ContentID: "d",
		Action: task.ActionDeleteContent, UserID: "seed", DateTime: time.Now()}.Task()), nil)
	testbin.WaitFor(t, 60*time.Second, "the duplicated deletion", func() bool {
		_, err2 := m.read("2", space, "d")
		_, err3 := m.read("3", space, "d")
		return err2 != nil && err3 != nil
	})
	if !m.drained(time.Minute, w) {
		t.Fatal("the deletion did not drain")
	}

	// Two bit runs; before the first, b's replica in store 2 is replaced.
	replaceObject(t, m, m.bucket2, "mill/"+space+"/b", "REPLACED bravo bytes")
	for run := range 2 {
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
		if p := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: bins["bitproducer"], Args: []string{"--config-dir", m.conf, "--queue-prefix", m.prefix,
			"--state", filepath.Join(t.TempDir(), "bit-state.json"), "--lease-table", "none"}, Env: m.env()}); p.Err() != nil {
			t.Fatalf("bitproducer run %d: %v\n%s", run+1, p.Err(), p.Output())
		}
		testbin.WaitFor(t, 2*time.Minute, "the repair of b", func() bool {
			got, err := m.read("2", space, "b")
			return err == nil && string(got) == items["b"]
		})
		if !m.drained(time.Minute, w) {
			t.Fatalf("bit run %d did not drain", run+1)
		}
		if run == 0 {
			out := e.appendEvents(t)
			t.Logf("append after run 1: %s", strings.TrimSpace(out))
		}
	}
	w.alive(t)
	before := e.readCheckpoint(t)
	out := e.appendEvents(t)
	t.Logf("append after run 2: %s", strings.TrimSpace(out))
	if again := e.appendEvents(t); !strings.Contains(again, " 0 events appended") {
		t.Fatalf("a pass with nothing new appended: %s", again)
	}

	// What the log holds: the events of every kind, each once.
	counts := map[evidence.EventType]int{}
	events := e.events(t)
	for _, ev := range events {
		counts[ev.Type]++
	}
	rows, _, err := m.bitLog().Results(ctx, bitlog.Filter{Account: "acme", Limit: 1000})
	must(t, err)
	fresh := 0
	for _, r := range rows {
		if r.Method.Fresh() {
			fresh++
		}
	}
	if counts[evidence.FixityCheck] < fresh || counts[evidence.Replication] != 8 || counts[evidence.Repair] != 1 || counts[evidence.Deletion] != 3 {
		t.Fatalf("events by type %v; want a fixity check per fresh bit-log row (%d), 8 replications, 1 repair, 3 deletions", counts, fresh)
	}
	checkAgentsAndSources(t, events, "adversarial")
	vout := e.mustVerify(t, "after the runs")
	t.Logf("verify: %s", vout)
	// The derived events of one item, as `millctl evidence events` filters
	// them: its fixity checks, replications and its repair, nothing else.
	ep := testbin.Run(t, time.Minute, testbin.Spec{Path: e.millctl, Env: e.env(),
		Args: []string{"evidence", "events", "--log", e.logURL, "--key", e.vkeyFile, "--space", space, "--item", "b"}})
	if ep.Err() != nil {
		t.Fatalf("millctl evidence events: %v\n%s", ep.Err(), ep.Output())
	}
	itemTypes := map[evidence.EventType]int{}
	for _, line := range strings.Split(strings.TrimSpace(ep.Stdout()), "\n") {
		ev, err := evidence.ParseCanonical([]byte(line))
		must(t, err)
		if ev.Object.ContentID != "b" || ev.Object.Space != space {
			t.Fatalf("events --item b printed %s", line)
		}
		itemTypes[ev.Type]++
	}
	if itemTypes[evidence.Repair] != 1 || itemTypes[evidence.Replication] != 2 || itemTypes[evidence.FixityCheck] < 6 || itemTypes[evidence.Deletion] != 0 {
		t.Fatalf("events of b by type %v: want its repair, 2 replications, 2 runs of fixity checks", itemTypes)
	}

	trusted := filepath.Join(t.TempDir(), "trusted.checkpoint")
	latest := e.get(t, "checkpoint")
	must(t, os.WriteFile(trusted, latest, 0o644))

	// 1. A bit-log row's result changed in PostgreSQL.
	var run2 string
	must(t, m.db().QueryRow(ctx, `SELECT max(run_id) FROM bit_log WHERE store_id = '1' AND content_id = 'a'`).Scan(&run2))
	set := func(res string) {
		_, err := m.db().Exec(ctx, `UPDATE bit_log SET result = $1 WHERE run_id = $2 AND store_id = '1' AND content_id = 'a'`, res, run2)
		must(t, err)
	}
	set("FAILURE")
	e.mustMismatch(t, "a bit-log row's result changed", nil, "bit-log row "+run2+":acme/1/"+space+"/a", `outcome: log "success", record "failure"`)
	set("SUCCESS")
	e.mustVerify(t, "the row restored")

	// 2. An audit-log entry altered in DynamoDB: the checksum of a
	// replication.
	en := e.entry(t, ctx, derive.DefaultUsers.Duplication, "2", "c")
	sk, err := en.Key().SK()
	must(t, err)
	alter := func(sum string) {
		_, err := ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(m.table),
			Key: map[string]ddbtypes.AttributeValue{auditlog.AttrPK: &ddbtypes.AttributeValueMemberS{Value: en.Key().PK()},
				auditlog.AttrSK: &ddbtypes.AttributeValueMemberS{Value: sk}},
			UpdateExpression:          aws.String("SET #c = :c"),
			ExpressionAttributeNames:  map[string]string{"#c": auditlog.AttrChecksum},
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":c": &ddbtypes.AttributeValueMemberS{Value: sum}}})
		must(t, err)
	}
	alter(md5hex("something else"))
	e.mustMismatch(t, "an audit-log entry altered", nil, "audit-log entry "+en.Key().PK(), "differs from its event", "detail")
	alter(en.Checksum)
	e.mustVerify(t, "the entry restored")

	// 2b. A content-index row's checksum changed in PostgreSQL.
	setIndex := func(sum string) {
		_, err := m.db().Exec(ctx, `UPDATE content_index SET checksum = $1 WHERE store_id = '2' AND content_id = 'c'`, sum)
		must(t, err)
	}
	setIndex(md5hex("something else"))
	e.mustMismatch(t, "a content-index row's checksum changed", nil, "content-index row acme/2/"+space+"/c", "while the replication")
	setIndex(en.Checksum)
	e.mustVerify(t, "the index row restored")

	// 3. An event deleted from the log: a leaf cut out of a data tile.
	size := e.readCheckpoint(t)
	dataKey, tileKey := firstTile(size, -1), firstTile(size, 0)
	data := e.get(t, dataKey)
	_, rest, _ := bytes.Cut(data, []byte("\n"))
	e.put(t, dataKey, rest)
	e.mustMismatch(t, "an event deleted", nil, dataKey, fmt.Sprintf("holds %d leaves, want %d", size-1, size))
	e.put(t, dataKey, data)

	// 4. A hash tile rewritten.
	tile := e.get(t, tileKey)
	bad := bytes.Clone(tile)
	bad[0] ^= 0xff
	e.put(t, tileKey, bad)
	e.mustMismatch(t, "a tile rewritten", nil, tileKey, "rewritten")
	e.put(t, tileKey, tile)
	e.mustVerify(t, "the tiles restored")

	// 5. The latest checkpoint replaced by an older one.
	older := e.get(t, "checkpoints/"+fmt.Sprintf("%020d", before))
	e.put(t, "checkpoint", older)
	e.mustMismatch(t, "the latest checkpoint replaced by an older one", nil, "checkpoint: size", "older than the newest signed checkpoint")
	// 6. The log rolled back whole: the newer history gone too; only a
	// verifier that kept the checkpoint it trusted sees it.
	newer := map[string][]byte{}
	keys, err := e.store.List(ctx, "checkpoints/")
	must(t, err)
	for _, k := range keys {
		if k > "checkpoints/"+fmt.Sprintf("%020d", before) {
			newer[k] = e.get(t, k)
			_, err := m.s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(e.bucket), Key: aws.String("evidence/" + k)})
			must(t, err)
		}
	}
	e.mustMismatch(t, "the log rolled back whole", []string{"--trusted", trusted}, "trusted checkpoint", "rolled back")
	for k, b := range newer {
		e.put(t, k, b)
	}
	e.put(t, "checkpoint", latest)
	e.mustVerify(t, "the checkpoints restored")

	e.killDuringBurst(t, ctx)
}

// killDuringBurst: a burst of 3000 bit-log rows; the appender is killed
// with SIGKILL while it appends them, then run again (once its lease has
// expired): every row has exactly one event and verify passes.
func (e *evemit) killDuringBurst(t *testing.T, ctx context.Context) {
	const burst = 3000
	bl := e.bitLog()
	at := time.Now().Add(-time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < burst; i += 8 {
				if err := bl.Record(ctx, bitlog.Row{RunID: "20260101T000000Z", Account: "acme", StoreID: "1", SpaceID: "burst",
					ContentID: fmt.Sprintf("item-%04d", i), Result: bitlog.ResultSuccess, Method: bitlog.MethodRead,
					ContentChecksum: md5hex(fmt.Sprint(i)), IndexChecksum: md5hex(fmt.Sprint(i)), CheckedAt: at.Add(time.Duration(i) * time.Microsecond)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	base := e.readCheckpoint(t)
	p := testbin.Start(t, e.appendSpec("--page", "20"))
	testbin.WaitFor(t, time.Minute, "the appender half-way through the burst", func() bool {
		return e.readCheckpoint(t) >= base+burst/3
	})
	p.Signal(t, syscall.SIGKILL)
	<-p.Done()
	killedAt := e.readCheckpoint(t)
	if killedAt >= base+burst {
		t.Fatalf("the appender finished the burst (log size %d) before it was killed", killedAt)
	}
	t.Logf("killed at log size %d of %d", killedAt, base+burst)
	var out string
	testbin.WaitFor(t, 30*time.Second, "a restart once the killed appender's lease expired", func() bool {
		r := testbin.Run(t, 2*time.Minute, e.appendSpec())
		out = r.Output()
		if r.Err() != nil && !strings.Contains(out, "holds the lease") {
			t.Fatalf("restart: %v\n%s", r.Err(), out)
		}
		return r.Err() == nil
	})
	t.Logf("restart: %s", strings.TrimSpace(out))
	seen := map[string]int{}
	for _, ev := range e.events(t) {
		if ev.Object.Space == "burst" {
			seen[ev.Object.ContentID]++
		}
	}
	if len(seen) != burst {
		t.Fatalf("%d of the %d burst rows have an event", len(seen), burst)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("burst row %s has %d events", id, n)
		}
	}
	e.mustVerify(t, "after the kill and the restart")
}

// events reads the log's events (checked against the signed checkpoint),
// failing on an ID seen twice.
func (e *evemit) events(t *testing.T) []*evidence.Event {
	t.Helper()
	v, err := evidence.LoadVerifier(e.vkeyFile)
	must(t, err)
	var out []*evidence.Event
	ids := map[string]bool{}
	_, err = evidence.Events(context.Background(), e.store, v, func(_ int64, ev *evidence.Event) error {
		if ids[ev.ID] {
			t.Errorf("event %s is in the log twice", ev.ID)
		}
		ids[ev.ID] = true
		out = append(out, ev)
		return nil
	})
	must(t, err)
	return out
}

// readCheckpoint returns the size of the log's latest checkpoint (0 when
// there is none yet).
func (e *evemit) readCheckpoint(t *testing.T) int64 {
	t.Helper()
	b, err := e.store.Get(context.Background(), "checkpoint")
	if err != nil {
		return 0
	}
	v, err := evidence.LoadVerifier(e.vkeyFile)
	must(t, err)
	cp, err := evidence.OpenCheckpoint(b, v)
	must(t, err)
	return cp.Size
}

// entry returns the audit-log entry a user wrote of an item in a store.
func (e *evemit) entry(t *testing.T, ctx context.Context, user, store, id string) auditlog.Entry {
	t.Helper()
	es, _, err := dynamoauditlog.New(e.cfg.DynamoDB(), e.table).SpaceHistory(ctx, "acme", store, space, "", 1000)
	must(t, err)
	for _, en := range es {
		if en.UserID == user && en.ContentID == id {
			return en
		}
	}
	t.Fatalf("no audit-log entry of %s by %s in store %s", id, user, store)
	return auditlog.Entry{}
}

func (e *evemit) get(t *testing.T, key string) []byte {
	t.Helper()
	b, err := e.store.Get(context.Background(), key)
	must(t, err)
	return b
}

func (e *evemit) put(t *testing.T, key string, b []byte) {
	t.Helper()
	must(t, e.store.Put(context.Background(), key, b))
}

// firstTile is the key of the first tile of level (-1: the data tile) of
// a log of size n.
func firstTile(n int64, level int) string {
	return tlog.Tile{H: evidence.TileHeight, L: level, N: 0, W: int(min(n, 1<<evidence.TileHeight))}.Path()
}
