//go:build faults

package faults

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/lease/dynamolease"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage/s3store"
)

// TestBrokenBodies: every S3 GET of the producers and of workman goes
// through a proxy that breaks 30 % of the response bodies halfway (the
// connection drops: the client reads an unexpected EOF) — listings,
// accounts.json and the policies in the config bucket, the producers'
// state in the state bucket, the bit checks' content reads. The
// bitproducer and the dupproducer finish their runs (exit 0, every item
// queued once), and the bit run completes with one SUCCESS per item, its
// report, and nothing dead-lettered.
func TestBrokenBodies(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	workmanBin, bitBin, dupBin := binary(t, "workman"), binary(t, "bitproducer"), binary(t, "dupproducer")
	items := scaled(100, 50)
	const account, space = "acme", "photos"
	proxy := emulatorProxy(t)

	prefix := testenv.Prefix(t)
	sqsc, ddb, s3c := cfg.SQS(), cfg.DynamoDB(), cfg.S3()
	testenv.CleanupQueues(t, sqsc, prefix)
	ensureAllQueues(t, ctx, sqsc, prefix)
	dead := ensureQueue(t, ctx, sqsc, queue.Name(prefix, queue.KeyDeadLetter), 30*time.Second)
	dupQ := ensureQueue(t, ctx, sqsc, queue.Name(prefix, queue.KeyDupLow), 30*time.Second)
	auditTable, leaseTable := prefix+"audit", prefix+"leases"
	testenv.CreateTable(t, ddb, dynamoauditlog.CreateTableInput(auditTable), nil)
	testenv.CreateTable(t, ddb, dynamolease.CreateTableInput(leaseTable), nil)
	bucket := func(name string) string { return newBucket(t, ctx, s3c, prefix, name) }
	src, dst, conf, state, reports := bucket("src"), bucket("dst"), bucket("config"), bucket("state"), bucket("reports")
	dbURL := testenv.Schema(t)
	pool := migratedPool(t, ctx, dbURL)

	// The items (4 KB each: one ranged GET, broken as often as any part
	// of a big read) in the source store, its index and the audit log,
	// all agreeing.
	store, err := s3store.New(s3c, s3store.Config{Bucket: src, Prefix: "mill/"})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CreateSpace(ctx, space); err != nil {
		t.Fatal(err)
	}
	seedItems(t, ctx, store, pgcontentindex.New(pool), dynamoauditlog.New(ddb, auditTable), account, "1", space, items,
		func(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("item %d ", i)), 500) })
	for key, body := range map[string]string{
		"accounts.json": fmt.Sprintf(`{"accounts": [{"id": %q, "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": %q, "prefix": "mill/", "region": "us-east-1"},
  {"id": "2", "kind": "s3", "bucket": %q, "prefix": "mill/", "region": "us-east-1"}]}]}`, account, src, dst),
		"duplication-accounts.json":    `["acme"]`,
		"acme-duplication-policy.json": `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`,
	} {
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(conf), Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}

	proxy.BreakBodies(0.3, func(r *http.Request) bool { return r.Method == http.MethodGet })
	dir := t.TempDir()
	env := []string{"AWS_ENDPOINT_URL=" + proxy.URL(), "MILL_CONFIG_BUCKET=" + conf, "MILL_STATE_BUCKET=" + state,
		"MILL_QUEUE_PREFIX=" + prefix, "MILL_DATABASE_URL=" + dbURL, "MILL_LEASE_TABLE=" + leaseTable, "MILL_PROGRESS=log"}
	begin := time.Now()
	for _, bin := range []string{bitBin, dupBin} {
		name := filepath.Base(bin)
		p := start(t, bin, filepath.Join(dir, name+".log"), env)
		if err := p.Wait(t, 4*time.Minute); err != nil {
			t.Fatalf("%s with 30 %% of GET bodies broken: %v; log:\n%s", name, err, tail(p.log, 3000))
		}
		out, _ := os.ReadFile(p.log + ".out")
		if !strings.Contains(string(out), "done") {
			t.Errorf("%s did not finish its run:\n%s", name, out)
		}
	}
	producersTook := time.Since(begin)
	breaksByProducers := proxy.Breaks()
	// One DUP per item and the space-level one (the destination space).
	if d, err := dupQ.Depth(ctx); err != nil || d.Total() != int64(items)+1 {
		t.Errorf("dup queue holds %+v (%v), want the %d items and the space once each", d, err, items)
	}
	var runID string
	if err := pool.QueryRow(ctx, `select run_id from bit_run_space where space_id = $1`, space).Scan(&runID); err != nil {
		t.Fatalf("the bit producer recorded no run: %v", err)
	}

	logPath := filepath.Join(dir, "workman.log")
	wm := start(t, workmanBin, logPath, env, "--queues", "bit-report,bit", "--task-types", "BIT,BIT_REPORT", "--workers", "4",
		"--audit-table", auditTable, "--reports-bucket", reports, "--recheck-delay", "3s", "--fleet-table", "",
		"--http-addr", "", "--cloudwatch=false", "--instance-metadata=false", "--grace-period", "10s")
	defer func() {
		_ = wm.Cmd.Process.Signal(syscall.SIGTERM)
		_ = wm.Wait(t, time.Minute)
	}()
	blog := pgbitlog.New(pool)
	var reps []bitlog.Report
	if !testbin.Poll(5*time.Minute, 250*time.Millisecond, func() bool {
		reps, err = blog.Reports(ctx, bitlog.ReportFilter{RunID: runID, Account: account, StoreID: "1", SpaceID: space})
		return (err == nil && len(reps) > 0) || wm.Exited()
	}) || len(reps) == 0 {
		t.Fatalf("no report; log:\n%s", tail(logPath, 6000))
	}
	if r := reps[0]; r.Result != bitlog.ResultSuccess || r.Counts.Total != int64(items) || r.Counts.Success != int64(items) {
		t.Errorf("report %+v, want a SUCCESS of %d items", r, items)
	}
	if d, err := dead.Depth(ctx); err != nil || d.Total() != 0 {
		t.Errorf("dead-letter queue: %+v, %v; want empty", d, err)
	}
	lines := readLog(t, logPath)
	failed := 0
	for _, l := range lines {
		if l.Msg == "task failed; retry scheduled" {
			failed++
		}
	}
	t.Logf("RESULT broken-bodies: %d items; 30 %% of GET bodies broken: producers done in %v (%d bodies broken), "+
		"bit run SUCCESS with %d bodies broken in all, %d check attempts failed, 0 dead-lettered",
		items, producersTook.Round(time.Millisecond), breaksByProducers, proxy.Breaks(), failed)
	t.Logf("log by message:%s", countMsgs(lines))
}
