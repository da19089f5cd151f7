package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/lease/dynamolease"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
	"github.com/millfleet/mill/processors"
	dupproc "github.com/millfleet/mill/processors/dup"
	"github.com/millfleet/mill/processors/noop"
	"github.com/millfleet/mill/producers/looping"

	"github.com/millfleet/mill/internal/testkit/slogtest"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
)

// pair is one (account, space, source → destination) the test checks.
type pair struct{ account, space, src, dst string }

func TestMain(m *testing.M) { testbin.Main(m) }

// TestAcceptance runs the dupproducer binary against the emulator while an
// in-process workman with the dup processor drains the low-priority queue:
// two accounts, three spaces (one duplicated to two S3 destinations), 250
// items in one space and 20 items only on its destination, in bites of 50
// items and at most 100 queued tasks, so the run takes several bites of one
// space and stops at a full queue as a full-size one does. The first
// invocation is frozen mid-run so a second one meets the lease, then killed
// with SIGKILL; later invocations resume the run and complete it. (At 2,500
// items and the default bite, most of its 6.5 minutes were the emulator's
// SQS carrying 2,700 tasks, at about 10 a second.)
func TestAcceptance(t *testing.T) {
	cfg := testenv.AWS(t)
	// The deadlines below are about progress, not total time: a loaded
	// emulator answers slowly.
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	prefix := testenv.Prefix(t)
	tmp := t.TempDir()

	bin := testbin.Build(t, "dupproducer")["dupproducer"]

	// Queues and the lease table.
	sqsc := cfg.SQS()
	testenv.CleanupQueues(t, sqsc, prefix)
	dupLowName := queue.Name(prefix, queue.KeyDupLow)
	if _, err := (setup.Queue{Client: sqsc, QueueName: dupLowName, VisibilityTimeout: time.Minute}).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	dupLow, err := sqsqueue.Open(ctx, sqsc, dupLowName, sqsqueue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ddb := cfg.DynamoDB()
	leaseTable := prefix + "leases"
	testenv.CleanupTable(t, ddb, leaseTable)
	if _, err := ddb.CreateTable(ctx, dynamolease.CreateTableInput(leaseTable)); err != nil {
		t.Fatal(err)
	}

	// Stores: acme's "photos" lives on S3 and goes to two S3 stores; its
	// "big" space (250 items) goes between two directories; beta's
	// "docs" goes from a directory to S3.
	s3c := cfg.S3(func(o *s3.Options) { o.UsePathStyle = true })
	bucket := func(name string) string {
		b := prefix + name
		testenv.CleanupBucket(t, s3c, b)
		if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
		return b
	}
	confDir := filepath.Join(tmp, "config")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(confDir, stores.FileName), fmt.Sprintf(`{"accounts": [
  {"id": "acme", "status": "active", "stores": [
    {"id": "1", "primary": true, "kind": "s3", "bucket": %q},
    {"id": "2", "kind": "s3", "bucket": %q},
    {"id": "3", "kind": "s3", "bucket": %q, "prefix": "replica/"},
    {"id": "4", "kind": "fs", "root": %q},
    {"id": "5", "kind": "fs", "root": %q}]},
  {"id": "beta", "status": "active", "stores": [
    {"id": "1", "primary": true, "kind": "fs", "root": %q},
    {"id": "2", "kind": "s3", "bucket": %q}]}
]}`, bucket("acme-1"), bucket("acme-2"), bucket("acme-3"), filepath.Join(tmp, "acme-4"), filepath.Join(tmp, "acme-5"),
		filepath.Join(tmp, "beta-1"), bucket("beta-2")))
	writeFile(t, filepath.Join(confDir, "duplication-accounts.json"), `["acme", "beta"]`)
	writeFile(t, filepath.Join(confDir, "acme-duplication-policy.json"), `{"spaceDuplicationStorePolicies": {
  "photos": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "1", "destStoreId": "3"}],
  "big": [{"srcStoreId": "4", "destStoreId": "5"}]}}`)
	writeFile(t, filepath.Join(confDir, "beta-duplication-policy.json"), `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`)
	reg, err := stores.LoadFile(filepath.Join(confDir, stores.FileName))
	if err != nil {
		t.Fatal(err)
	}
	opener := stores.NewOpener(reg, stores.OpenerConfig{
		AWS: cfg.AWS, PathStyle: true,
		S3: stores.ShareS3Clients(func(_ context.Context, c *s3.Client, s stores.Store) (storage.Provider, error) {
			return s3store.New(c, s3store.Config{Bucket: s.Bucket, Prefix: s.Prefix})
		}),
		FS: func(_ context.Context, s stores.Store) (storage.Provider, error) { return fsstore.New(s.Root) },
	})
	open := func(account, id string) storage.Provider {
		p, err := opener.Open(ctx, account, id)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	start := time.Now()
	fill(t, open("acme", "1"), "photos", 20, "photo", map[string]string{"group-curators": "READ"})
	fill(t, open("acme", "4"), "big", 250, "item", nil)
	fill(t, open("acme", "5"), "big", 20, "zz-orphan", nil)
	fill(t, open("beta", "1"), "docs", 15, "doc", nil)
	// Stale copies at one photos destination: other bytes, other properties.
	d2 := open("acme", "2")
	for i := range 3 {
		id := fmt.Sprintf("photo-%04d", i)
		putItem(t, d2, "photos", id, "content of "+id, map[string]string{"n": "stale"})
	}
	for i := 3; i < 5; i++ {
		id := fmt.Sprintf("photo-%04d", i)
		putItem(t, d2, "photos", id, "old bytes", map[string]string{"n": strconv.Itoa(i)})
	}
	t.Logf("fixtures written in %v", time.Since(start).Round(time.Millisecond))
	pairs := []pair{{"acme", "photos", "1", "2"}, {"acme", "photos", "1", "3"}, {"acme", "big", "4", "5"}, {"beta", "docs", "1", "2"}}

	state := filepath.Join(tmp, "state", "dupproducer.json")
	if err := os.MkdirAll(filepath.Dir(state), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"MILL_CONFIG_DIR="+confDir, "MILL_QUEUE_PREFIX="+prefix, "MILL_STATE="+state,
		"MILL_LEASE_TABLE="+leaseTable, "MILL_LEASE_TTL=6s", "MILL_PROGRESS=log")
	producer := func(args ...string) testbin.Spec {
		return testbin.Spec{Path: bin, Args: append([]string{"--bite-size", "50", "--max-queue-size", "100"}, args...), Env: env}
	}
	runProducer := func() (string, error) {
		c := testbin.Run(t, 20*time.Minute, producer())
		if err := c.Err(); err != nil {
			t.Logf("dupproducer stderr:\n%s", c.Stderr())
		}
		return c.Stdout(), c.Err()
	}

	// 1. A first invocation, frozen (SIGSTOP) once it has saved a step of
	// the run, meets a second invocation, then dies with SIGKILL. No queue
	// limit stops it before it is frozen.
	a := testbin.Start(t, producer("--max-queue-size", "100000"))
	if !testbin.Poll(2*time.Minute, 5*time.Millisecond, func() bool {
		st := readState(t, state)
		return st != nil && st.InRun() && st.Bites >= 1
	}) {
		t.Fatal("the first invocation saved no step within 2 minutes")
	}
	if err := a.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP: %v (the first invocation ended before it could be frozen mid-run)", err)
	}
	mid := readState(t, state)
	if !mid.InRun() {
		t.Fatalf("froze the first invocation after its run ended: %+v", mid)
	}
	out, err := runProducer()
	if err != nil {
		t.Fatalf("second invocation: %v", err)
	}
	if !strings.Contains(out, "lease held by") || !strings.Contains(out, fmt.Sprintf("pid %d", a.Cmd.Process.Pid)) {
		t.Fatalf("second invocation did not name the holder (pid %d):\n%s", a.Cmd.Process.Pid, out)
	}
	t.Logf("second invocation: %s", strings.TrimSpace(out))
	a.Kill()
	mid = readState(t, state)
	time.Sleep(6 * time.Second) // the killed holder's lease (MILL_LEASE_TTL) runs out
	t.Logf("killed mid-run: run %s, %d bites, %d/%d morsels done, %d tasks queued",
		mid.RunID, mid.Bites, mid.MorselsDone(), len(mid.Morsels), mid.Queued.Total())

	// 2. Workman drains dup-low (and the audit queue the dup processor's
	// audited writes fill) while the producer is invoked again and again.
	audit := memqueue.New(prefix+"audit", memqueue.Config{})
	dlq := memqueue.New(prefix+"dead-letter", memqueue.Config{})
	logger := slogtest.New(t, slog.LevelWarn)
	proc, err := dupproc.New(dupproc.Config{
		Opener: opener, Audit: dupproc.AuditTo(audit, task.FormatJSON, nil),
		Live: dupproc.FromIndex(memcontentindex.New()), Policies: policy.NewDir(confDir), Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := processors.NewMux()
	mux.Register(task.TypeDup, proc)
	mux.Register(task.TypeAudit, noop.New(noop.Config{}))
	m, err := workman.New(workman.Config{
		Queues: []queue.Queue{audit, dupLow}, DeadLetter: dlq, Handler: mux, ProcessorName: mux.ProcessorName,
		Workers: 8, QueueBackoffMin: 100 * time.Millisecond, QueueBackoffMax: time.Second,
		IdlePollWait: time.Second,
		RetryBase:    time.Second, RetryMax: 2 * time.Second, Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	mctx, stopManager := context.WithCancel(ctx)
	managerDone := make(chan error, 1)
	go func() { managerDone <- m.Run(mctx) }()
	defer func() { stopManager(); <-managerDone }()

	var invocations int
	for done := false; !done; {
		if invocations++; invocations > 40 {
			t.Fatal("the run did not complete in 40 invocations")
		}
		out, err := runProducer()
		if err != nil {
			t.Fatalf("invocation %d: %v\n%s", invocations, err, out)
		}
		first, _, _ := strings.Cut(out, "\n")
		t.Logf("invocation %d: %s", invocations, first)
		switch {
		case strings.HasPrefix(first, "dupproducer: done"):
			done = true
		case strings.HasPrefix(first, "dupproducer: lease held"):
			time.Sleep(time.Second) // the killed holder's lease runs out
		case strings.HasPrefix(first, "dupproducer: queue full"):
			waitDepth(t, ctx, dupLow, 30)
		default:
			t.Fatalf("unexpected summary %q", first)
		}
	}
	final := readState(t, state)
	if final.RunID != mid.RunID || final.InRun() {
		t.Errorf("the run was not resumed: run %s before the kill, %s after (in run: %v)", mid.RunID, final.RunID, final.InRun())
	}
	if want := final.LastRunStart.AddDate(0, 0, 7); !final.NextRunStart.Equal(want) {
		t.Errorf("next run due %v, want last start + 7d = %v", final.NextRunStart, want)
	}

	// 3. Everything drains.
	waitDepth(t, ctx, dupLow, 1)
	drained := 0
	for deadline := time.Now().Add(3 * time.Minute); drained < 2; time.Sleep(time.Second) {
		d, err := dupLow.Depth(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("queues not drained: dup-low %+v, audit %d", d, audit.Len())
		}
		if d.Total() == 0 && audit.Len() == 0 {
			drained++
		} else {
			drained = 0
		}
	}
	stopManager()
	if err := <-managerDone; err != nil {
		t.Fatalf("workman: %v", err)
	}
	managerDone <- nil // for the deferred stop
	if n := dlq.Len(); n != 0 {
		for _, msg := range dlq.Messages() {
			t.Logf("dead letter: %s", msg.Body)
		}
		t.Fatalf("%d dead letters", n)
	}

	// 4. Every destination equals its source.
	for _, p := range pairs {
		n := sameSpace(t, ctx, open(p.account, p.src), open(p.account, p.dst), p.space)
		t.Logf("%s/%s %s→%s: %d items equal", p.account, p.space, p.src, p.dst, n)
	}
	if acls, err := open("acme", "3").SpaceACLs(ctx, "photos"); err != nil || acls["group-curators"] != "READ" {
		t.Errorf("photos ACLs at store 3: %v, %v", acls, err)
	}
	if ids, _, _ := open("acme", "5").ListContent(ctx, "big", "zz", 10); len(ids) != 0 {
		t.Errorf("destination-only items left: %v", ids)
	}

	// 5. The next run is not due.
	out, err = runProducer()
	if err != nil || !strings.HasPrefix(out, "dupproducer: not due until "+final.NextRunStart.UTC().Format(time.RFC3339)) {
		t.Errorf("after the run: %v\n%s", err, out)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func putItem(t *testing.T, p storage.Provider, space, id, body string, props map[string]string) {
	t.Helper()
	ctx := context.Background()
	if err := p.CreateSpace(ctx, space); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Put(ctx, space, id, strings.NewReader(body), storage.PutOptions{Size: int64(len(body)), MimeType: "text/plain", Properties: props}); err != nil {
		t.Fatalf("put %s/%s: %v", space, id, err)
	}
}

// fill writes n items name-0000… to space, with ACLs when given.
func fill(t *testing.T, p storage.Provider, space string, n int, name string, acls map[string]string) {
	t.Helper()
	ctx := context.Background()
	if err := p.CreateSpace(ctx, space); err != nil {
		t.Fatal(err)
	}
	if acls != nil {
		if err := p.SetSpaceACLs(ctx, space, acls); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		id := fmt.Sprintf("%s-%04d", name, i)
		body := "content of " + id
		if _, err := p.Put(ctx, space, id, strings.NewReader(body), storage.PutOptions{
			Size: int64(len(body)), MimeType: "text/plain", Properties: map[string]string{"n": strconv.Itoa(i)},
		}); err != nil {
			t.Fatalf("put %s/%s: %v", space, id, err)
		}
	}
}

func readState(t *testing.T, path string) *looping.State {
	t.Helper()
	st, err := looping.NewFileStore(path).Load(context.Background())
	if errors.Is(err, looping.ErrNoState) {
		return nil
	}
	if err != nil {
		t.Fatalf("state: %v", err)
	}
	return st
}

// waitDepth waits until q has fewer than n visible messages, failing when
// the depth stops falling for two minutes.
func waitDepth(t *testing.T, ctx context.Context, q queue.Queue, n int64) {
	t.Helper()
	last := int64(-1)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		d, err := q.Depth(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Visible < n {
			return
		}
		if last < 0 || d.Visible < last {
			last, deadline = d.Visible, time.Now().Add(2*time.Minute)
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s stuck at %d visible messages", q.Name(), d.Visible)
		}
	}
}

// sameSpace checks that dst's space holds exactly src's items with the same
// checksums and user properties, and returns how many.
func sameSpace(t *testing.T, ctx context.Context, src, dst storage.Provider, space string) int {
	t.Helper()
	n := 0
	for m, err := range storage.MergeSorted(storage.Walk(ctx, src, space, "", 0), storage.Walk(ctx, dst, space, "", 0)) {
		if err != nil {
			t.Fatalf("%s: %v", space, err)
		}
		if !m.Both {
			t.Errorf("%s/%s only in the %s", space, m.ID, map[bool]string{true: "source", false: "destination"}[m.InA])
			continue
		}
		si, err := src.Head(ctx, space, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		di, err := dst.Head(ctx, space, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if si.Checksum != di.Checksum || si.Size != di.Size || !storage.PropertiesEqual(si.Properties, di.Properties) {
			t.Errorf("%s/%s: source %s %v, destination %s %v", space, m.ID, si.Checksum, si.Properties, di.Checksum, di.Properties)
		}
		n++
	}
	return n
}
