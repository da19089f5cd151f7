//go:build faults

package faults

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/fleet/dynamofleet"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
)

// tableIs matches the DynamoDB requests that name table (in their JSON
// body, which it puts back for the proxy to forward).
func tableIs(table string) func(*http.Request) bool {
	want := []byte(`"TableName":"` + table + `"`)
	return func(r *http.Request) bool {
		if r.Body == nil {
			return false
		}
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(b))
		return err == nil && bytes.Contains(b, want)
	}
}

// TestDynamoDBOutageDuringAudits: AUDIT tasks (the workman binary; a
// filesystem store, the content index in PostgreSQL, the audit log and
// the fleet registry on the emulator) while every request to the audit
// table is answered 500 InternalServerError for outageFor (a proxy in
// front of the emulator's DynamoDB endpoint; the fleet registry's table
// answers, so the worker can say what it sees). Nothing may be
// dead-lettered; the heartbeat shows the outage (state degraded, a
// dynamodb dependency holding back AUDIT) while it lasts and not after;
// every audit is in the audit log once the table answers again, without a
// redrive.
func TestDynamoDBOutageDuringAudits(t *testing.T) {
	cfg := testenv.AWS(t)
	outage := outageFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute+2*outage)
	defer cancel()
	workmanBin := binary(t, "workman")
	items := scaled(200, 100)
	const (
		account = "acme"
		space   = "photos"
	)
	proxy := emulatorProxy(t)
	prefix := testenv.Prefix(t)
	sqsc, ddb := cfg.SQS(), cfg.DynamoDB()
	testenv.CleanupQueues(t, sqsc, prefix)
	ensureAllQueues(t, ctx, sqsc, prefix)
	dead := ensureQueue(t, ctx, sqsc, queue.Name(prefix, queue.KeyDeadLetter), 30*time.Second)
	auditQ := ensureQueue(t, ctx, sqsc, queue.Name(prefix, queue.KeyAudit), 30*time.Second)
	auditTable, fleetTable := prefix+"audit", prefix+"fleet"
	testenv.CreateTable(t, ddb, dynamoauditlog.CreateTableInput(auditTable), nil)
	testenv.CreateTable(t, ddb, dynamofleet.CreateTableInput(fleetTable), dynamofleet.TimeToLiveInput(fleetTable))
	dbURL := testenv.Schema(t)
	migratedPool(t, ctx, dbURL)

	// The items in the store, and an ADD_CONTENT audit task for each.
	dir := t.TempDir()
	root := filepath.Join(dir, "store")
	fs := newSpace(t, ctx, root, space)
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	var entries []queue.SendEntry
	for i := range items {
		b := []byte(fmt.Sprintf("content of item %d", i))
		sum, _, _ := storage.MD5Hex(bytes.NewReader(b))
		size := int64(len(b))
		if _, err := fs.Put(ctx, space, itemID(i), bytes.NewReader(b), storage.PutOptions{Size: size, Checksum: sum, MimeType: "text/plain"}); err != nil {
			t.Fatal(err)
		}
		body, err := task.Encode(task.Audit{Account: account, StoreID: "1", SpaceID: space, ContentID: itemID(i), Action: task.ActionAddContent,
			UserID: "tester", DateTime: at, ContentChecksum: sum, ContentSize: &size, ContentMimetype: "text/plain"}.Task(), task.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, queue.SendEntry{Body: body})
	}
	conf := filepath.Join(dir, "config")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(conf, "accounts.json"), fmt.Sprintf(`{"accounts": [{"id": %q, "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": %q}]}]}`, account, root))
	for lo := 0; lo < len(entries); lo += queue.MaxBatch {
		if err := auditQ.Send(ctx, entries[lo:min(lo+queue.MaxBatch, len(entries))]...); err != nil {
			t.Fatal(err)
		}
	}

	logPath := filepath.Join(dir, "workman.log")
	env := []string{"AWS_ENDPOINT_URL_DYNAMODB=" + proxy.URL()}
	args := []string{
		"--queue-prefix", prefix, "--queues", "audit", "--task-types", "AUDIT", "--workers", "4",
		"--config-dir", conf, "--database-url", dbURL, "--audit-table", auditTable,
		"--fleet-table", fleetTable, "--heartbeat-interval", "1s", "--worker-id", prefix + "w",
		"--http-addr", "", "--cloudwatch=false", "--instance-metadata=false", "--grace-period", "10s",
	}
	alog := dynamoauditlog.New(ddb, auditTable) // straight to the emulator
	recorded := func() int {
		n := 0
		for i := range items {
			if e, err := alog.Latest(ctx, account, "1", space, itemID(i)); err == nil && e != nil {
				n++
			}
		}
		return n
	}
	wm := start(t, workmanBin, logPath, env, args...)
	defer func() {
		_ = wm.Cmd.Process.Signal(syscall.SIGTERM)
		_ = wm.Wait(t, time.Minute)
	}()
	if !testbin.Poll(3*time.Minute, 100*time.Millisecond, func() bool {
		d, err := auditQ.Depth(ctx)
		return (err == nil && d.Visible <= int64(items*3/4)) || wm.Exited()
	}) || wm.Exited() {
		t.Fatalf("the audits did not start; log:\n%s", tail(logPath, 4000))
	}
	proxy.Fail(tableIs(auditTable), http.StatusInternalServerError, "application/x-amz-json-1.0",
		`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"injected outage"}`)
	down := time.Now()
	before := recorded()
	reg := dynamofleet.New(ddb, fleetTable, nil)
	self := func() fleet.Worker { return registryWorker(ctx, reg, prefix+"w") }
	seen, shown, _ := degradedWithin(ctx, reg, prefix+"w", outage)
	seenAfter := time.Since(down)
	if !shown {
		t.Errorf("during the outage the fleet registry shows %+v, want state degraded with an outage of dynamodb", seen)
	} else if o := seen.Outages[0]; !strings.HasPrefix(o.Dependency, "dynamodb") || !slices.Contains(o.Types, "AUDIT") {
		t.Errorf("outage in the registry: %+v, want dynamodb holding back AUDIT", o)
	}
	time.Sleep(time.Until(down.Add(outage)))
	_, failed := proxy.Answered()
	proxy.Fail(nil, 0, "", "")
	up := time.Now()
	if !testbin.Poll(5*time.Minute, 500*time.Millisecond, func() bool { return recorded() == items || wm.Exited() }) {
		t.Fatalf("after the outage %d of %d audits recorded; log:\n%s", recorded(), items, tail(logPath, 6000))
	}
	healed := time.Since(up)
	if !testbin.Poll(time.Minute, 200*time.Millisecond, func() bool {
		d, err := auditQ.Depth(ctx)
		return err == nil && d.Total() == 0
	}) {
		t.Errorf("the audit queue is not empty after every audit was recorded")
	}
	if d, err := dead.Depth(ctx); err != nil || d.Total() != 0 {
		t.Errorf("dead-letter queue: %+v, %v; want empty", d, err)
	}
	if !testbin.Poll(30*time.Second, 200*time.Millisecond, func() bool { w := self(); return w.State == fleet.StateRunning && len(w.Outages) == 0 }) {
		t.Errorf("after the outage the fleet registry still shows %+v", self())
	}
	lines := readLog(t, logPath)
	t.Logf("RESULT dynamodb-outage: %d audits, the audit table answered only errors for %v from %d recorded (%d requests failed); "+
		"registry showed it degraded after %v; all recorded %v after it healed; 0 dead letters",
		items, outage, before, failed, seenAfter.Round(time.Millisecond), healed.Round(time.Millisecond))
	t.Logf("log by message:%s", countMsgs(lines))
}
