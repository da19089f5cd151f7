//go:build faults

package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/pgcluster"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/fleet/dynamofleet"
	"github.com/millfleet/mill/pkg/lease/dynamolease"
	"github.com/millfleet/mill/pkg/queue"
)

// outageFor is how long the outage tests keep a dependency down:
// MILL_FAULTS_OUTAGE (a Go duration), default 40 s — past the 30 s in
// which Workman's three attempts at 10 s and 20 s used to run out.
func outageFor(t *testing.T) time.Duration {
	d := 40 * time.Second
	if v := os.Getenv("MILL_FAULTS_OUTAGE"); v != "" {
		x, err := time.ParseDuration(v)
		if err != nil || x <= 0 {
			t.Fatalf("MILL_FAULTS_OUTAGE=%q: want a positive Go duration", v)
		}
		d = x
	}
	return d
}

// TestPostgresOutageDuringBitRun: a bit run (the bitproducer and workman
// binaries; a filesystem store, the bit log and content index in a
// throwaway PostgreSQL cluster, the audit log, fleet registry, queues and
// reports bucket on the emulator) during which the cluster is stopped for
// outageFor — longer than Workman's attempts last at production delays.
// Nothing may be dead-lettered; the worker's heartbeat shows the outage
// (state degraded, dependency postgres) while it lasts and not after; the
// run completes without a redrive: one SUCCESS row per item and the
// space's report.
func TestPostgresOutageDuringBitRun(t *testing.T) {
	cfg := testenv.AWS(t)
	cluster := pgcluster.Start(t)
	outage := outageFor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute+2*outage)
	defer cancel()
	workmanBin, producerBin := binary(t, "workman"), binary(t, "bitproducer")
	items := scaled(200, 100)
	const (
		account = "acme"
		space   = "photos"
	)
	dbURL := cluster.URL(pgcluster.Database)
	pool := migratedPool(t, ctx, dbURL)
	prefix := testenv.Prefix(t)
	sqsc, ddb, s3c := cfg.SQS(), cfg.DynamoDB(), cfg.S3()
	testenv.CleanupQueues(t, sqsc, prefix)
	ensureAllQueues(t, ctx, sqsc, prefix)
	dead := ensureQueue(t, ctx, sqsc, queue.Name(prefix, queue.KeyDeadLetter), 30*time.Second)
	auditTable, fleetTable, leaseTable := prefix+"audit", prefix+"fleet", prefix+"leases"
	testenv.CreateTable(t, ddb, dynamoauditlog.CreateTableInput(auditTable), nil)
	testenv.CreateTable(t, ddb, dynamofleet.CreateTableInput(fleetTable), dynamofleet.TimeToLiveInput(fleetTable))
	testenv.CreateTable(t, ddb, dynamolease.CreateTableInput(leaseTable), nil)
	reports := strings.TrimSuffix(prefix, "-") + "-reports"
	testenv.CleanupBucket(t, s3c, reports)
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(reports)}); err != nil {
		t.Fatal(err)
	}

	// The items: in the store, the index and the audit log, all agreeing.
	dir := t.TempDir()
	root := filepath.Join(dir, "store")
	fs := newSpace(t, ctx, root, space)
	seedItems(t, ctx, fs, pgcontentindex.New(pool), dynamoauditlog.New(ddb, auditTable), account, "1", space, items,
		func(i int) []byte { return []byte(fmt.Sprintf("content of item %d", i)) })
	conf := filepath.Join(dir, "config")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(conf, "accounts.json"), fmt.Sprintf(`{"accounts": [{"id": %q, "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": %q}]}]}`, account, root))

	// The run: the producer lists the space, records the run and queues
	// a BIT task per item and the space's BIT_REPORT.
	penv := []string{"MILL_CONFIG_DIR=" + conf, "MILL_QUEUE_PREFIX=" + prefix, "MILL_DATABASE_URL=" + dbURL,
		"MILL_STATE=" + filepath.Join(dir, "state.json"), "MILL_LEASE_TABLE=" + leaseTable, "MILL_PROGRESS=log"}
	prod := start(t, producerBin, filepath.Join(dir, "bitproducer.log"), penv)
	if err := prod.Wait(t, 3*time.Minute); err != nil {
		t.Fatalf("bitproducer: %v; log:\n%s", err, tail(prod.log, 3000))
	}
	blog := pgbitlog.New(pool)
	var runID string
	if err := pool.QueryRow(ctx, `select run_id from bit_run_space where space_id = $1`, space).Scan(&runID); err != nil {
		t.Fatalf("the producer recorded no run: %v", err)
	}

	logPath := filepath.Join(dir, "workman.log")
	args := []string{
		"--queue-prefix", prefix, "--queues", "bit-report,bit", "--task-types", "BIT,BIT_REPORT", "--workers", "4",
		"--config-dir", conf, "--database-url", dbURL, "--audit-table", auditTable, "--reports-bucket", reports,
		"--fleet-table", fleetTable, "--heartbeat-interval", "1s", "--recheck-delay", "3s", "--worker-id", prefix + "w",
		"--http-addr", "", "--cloudwatch=false", "--instance-metadata=false", "--grace-period", "10s",
	}
	wm := start(t, workmanBin, logPath, nil, args...)
	defer func() {
		_ = wm.Cmd.Process.Signal(syscall.SIGTERM)
		_ = wm.Wait(t, time.Minute)
	}()
	rows := func() int {
		c, err := blog.Count(ctx, runID, account, "1", space)
		if err != nil {
			return -1
		}
		return int(c.Total)
	}
	if !testbin.Poll(3*time.Minute, 20*time.Millisecond, func() bool { return rows() >= items/4 || wm.Exited() }) || wm.Exited() {
		t.Fatalf("the run did not reach %d rows (at %d); log:\n%s", items/4, rows(), tail(logPath, 4000))
	}
	before := rows()
	if err := cluster.Stop(ctx, "fast"); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	reg := dynamofleet.New(ddb, fleetTable, nil)
	self := func() fleet.Worker { return registryWorker(ctx, reg, prefix+"w") }
	seen, shown, _ := degradedWithin(ctx, reg, prefix+"w", outage)
	seenAfter := time.Since(down)
	if !shown {
		t.Errorf("during the outage the fleet registry shows %+v, want state degraded with an outage of postgres", seen)
	} else if o := seen.Outages[0]; o.Dependency != "postgres" || !slices.Contains(o.Types, "BIT") {
		t.Errorf("outage in the registry: %+v, want postgres holding back BIT", o)
	}
	time.Sleep(time.Until(down.Add(outage)))
	if err := cluster.Start(ctx); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	var reps []bitlog.Report
	var err error
	if !testbin.Poll(5*time.Minute, 200*time.Millisecond, func() bool {
		reps, err = blog.Reports(ctx, bitlog.ReportFilter{RunID: runID, Account: account, StoreID: "1", SpaceID: space})
		return err == nil && len(reps) > 0
	}) {
		t.Fatalf("no report after the outage (%d of %d rows); log:\n%s", rows(), items, tail(logPath, 6000))
	}
	reported := time.Since(up)
	if r := reps[0]; r.Result != bitlog.ResultSuccess || r.Counts.Total != int64(items) || r.Counts.Success != int64(items) {
		t.Errorf("report %+v, want a SUCCESS of %d items", r, items)
	}
	var perItem, notSuccess int
	if err := pool.QueryRow(ctx, `select count(distinct content_id), count(*) filter (where result <> 'SUCCESS') from bit_log where run_id = $1`, runID).
		Scan(&perItem, &notSuccess); err != nil {
		t.Fatal(err)
	}
	if perItem != items || notSuccess != 0 || rows() != items {
		t.Errorf("bit log: %d items with rows (%d rows), %d not SUCCESS; want %d, one SUCCESS each", perItem, rows(), notSuccess, items)
	}
	if d, err := dead.Depth(ctx); err != nil || d.Total() != 0 {
		t.Errorf("dead-letter queue: %+v, %v; want empty", d, err)
	}
	if !testbin.Poll(30*time.Second, 200*time.Millisecond, func() bool { w := self(); return w.State == fleet.StateRunning && len(w.Outages) == 0 }) {
		t.Errorf("after the outage the fleet registry still shows %+v", self())
	}
	lines := readLog(t, logPath)
	t.Logf("RESULT pg-outage: %d items, postgres stopped at %d rows for %v; registry showed it degraded after %v; "+
		"report SUCCESS %v after the restart; 0 dead letters", items, before, outage, seenAfter.Round(time.Millisecond), reported.Round(time.Millisecond))
	t.Logf("log by message:%s", countMsgs(lines))
}
