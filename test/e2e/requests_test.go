package e2e

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/reqcount"
	"github.com/millfleet/mill/internal/testkit/slogtest"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
)

// signalOutcomes passes every task outcome to the record of runs, then
// signals it: by then the task's every request, its outcome's included,
// has been made.
type signalOutcomes struct {
	next workman.OutcomeObserver
	done chan string
}

func (s signalOutcomes) TaskOutcome(ctx context.Context, o workman.TaskOutcome) error {
	var err error
	if s.next != nil {
		err = s.next.TaskOutcome(ctx, o)
	}
	s.done <- string(o.Task.Type) + "/" + string(o.Outcome)
	return err
}

// workmanOps are Workman's own SQS requests (receive, delete, visibility):
// batched across tasks and counted per task by the benchmarks, not here.
var workmanOps = []string{"sqs ReceiveMessage", "sqs DeleteMessageBatch", "sqs DeleteMessage",
	"sqs ChangeMessageVisibility", "sqs ChangeMessageVisibilityBatch", "sqs GetQueueAttributes"}

// TestRequestsPerTaskType runs one task of each case of pricing.TaskRequests
// through the real Workman (wiring.Workman: every processor, the record of
// runs) on the AWS emulator and PostgreSQL, behind a request-counting HTTP
// proxy (AWS) and a statement-counting TCP proxy (PostgreSQL), and checks
// that each task made exactly the requests its documented list says
// (docs/CAPACITY.md's table is rendered from the same list).
func TestRequestsPerTaskType(t *testing.T) {
	base := testenv.AWS(t)
	dbURL := testenv.Schema(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	logger := slogtest.New(t, slog.LevelWarn)

	// Migrate directly, then let Mill reach PostgreSQL through the counter.
	direct, err := milldb.Open(ctx, dbURL, milldb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := milldb.Up(ctx, direct.Pool); err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	pu, _ := url.Parse(dbURL)
	pgc := startPGCounter(t, net.JoinHostPort(pu.Hostname(), pu.Port()))
	pu.Host = pgc.addr
	aws := reqcount.Start(t, testenv.Endpoint())
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{Getenv: func(k string) string {
		if k == "AWS_ENDPOINT_URL" {
			return aws.URL()
		}
		return os.Getenv(k)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if ep := aws.URL(); cfg.AWS.BaseEndpoint == nil || *cfg.AWS.BaseEndpoint != ep {
		cfg.AWS.BaseEndpoint = &ep
	}

	// Resources, made on the emulator directly.
	prefix := testenv.Prefix(t)
	s3c := base.S3()
	src, dst, far, reports, state := prefix+"src", prefix+"dst", prefix+"far", prefix+"reports", prefix+"state"
	for _, b := range []string{src, dst, far, reports, state} {
		if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
			t.Fatal(err)
		}
		testenv.CleanupBucket(t, s3c, b)
	}
	sqsc := base.SQS()
	testenv.CleanupQueues(t, sqsc, prefix)
	for _, k := range queue.AllKeys {
		if _, err := (setup.Queue{Client: sqsc, QueueName: queue.Name(prefix, k), VisibilityTimeout: time.Minute}).Ensure(ctx); err != nil {
			t.Fatal(err)
		}
	}
	table := prefix + "audit"
	testenv.CreateTable(t, base.DynamoDB(), dynamoauditlog.CreateTableInput(table), nil)
	dir := t.TempDir()
	// Stores: src and dst share one client (copies between them are
	// server-side); far names the same emulator as its own endpoint, so
	// it has a client of its own and copies to it are streamed.
	reg := fmt.Sprintf(`{"accounts":[{"id":"acme","status":"active","stores":[
	 {"id":"1","primary":true,"kind":"s3","bucket":%q},
	 {"id":"2","kind":"s3","bucket":%q},
	 {"id":"3","kind":"s3","bucket":%q,"endpoint":%q,"allowInsecureEndpoint":true,"ambientCredentials":true}]}]}`,
		src, dst, far, aws.URL())
	for name, body := range map[string]string{"accounts.json": reg, "duplication-accounts.json": `["acme"]`,
		"acme-duplication-policy.json": `{"spaceDuplicationStorePolicies":{"docs":[{"srcStoreId":"1","destStoreId":"2"},{"srcStoreId":"1","destStoreId":"3"}]}}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	d, closeDeps, err := wiring.AWS(ctx, wiring.AWSConfig{AWS: cfg, QueuePrefix: prefix, Config: wiring.ConfigSource{Dir: dir},
		AuditTable: table, DatabaseURL: pu.String(), Database: milldb.Config{MaxConns: 2},
		ReportsBucket: reports, CheckpointBucket: state, CheckpointPrefix: "transfers/", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeDeps() }()
	outcomes := signalOutcomes{next: wiring.RunOutcomes(d), done: make(chan string, 8)}
	// Workman takes work from the bit queue alone: the DUP tasks the
	// AUDIT queues wait on dup-high, and every task here is sent to bit.
	bitQ, err := d.Queues.Get(queue.KeyBit)
	if err != nil {
		t.Fatal(err)
	}
	m, err := wiring.Workman(d, wiring.WorkmanConfig{Manager: workman.Config{Queues: []queue.Queue{bitQ}, Workers: 1, ReceiveWait: 100 * time.Millisecond,
		IdlePollWait: time.Second, MaxAttempts: 1, WorkerID: "requests", Logger: logger, Outcomes: outcomes}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- m.Run(runCtx) }()
	defer func() { stop(); <-ran }()

	// The item, written as Mill writes it, and the producer's records of
	// a bit run over its space.
	const space, item = "docs", "small.txt"
	body := bytes.Repeat([]byte("mill "), 200)
	store1, err := d.Stores.Open(ctx, "acme", "1")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"1", "2", "3"} {
		st, err := d.Stores.Open(ctx, "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreateSpace(ctx, space); err != nil {
			t.Fatal(err)
		}
	}
	info, err := store1.Put(ctx, space, item, bytes.NewReader(body), storage.PutOptions{Size: int64(len(body)), MimeType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	// A first write to each store asks its bucket's versioning, which a
	// store then knows for five minutes: not a per-task request.
	for _, id := range []string{"2", "3"} {
		st, err := d.Stores.Open(ctx, "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Put(ctx, space, "warm.txt", bytes.NewReader(body), storage.PutOptions{Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
	}
	runID := "20260101T000000Z"
	if err := d.Runs.Start(ctx, runs.Run{Producer: runs.ProducerBit, ID: runID}); err != nil {
		t.Fatal(err)
	}
	if err := d.BitLog.FinishSpace(ctx, bitlog.RunSpace{RunID: runID, Account: "acme", StoreID: "1", SpaceID: space, Expected: 1}); err != nil {
		t.Fatal(err)
	}

	now := time.Now()
	size := int64(len(body))
	dup := func(dest string) *task.Task {
		return task.Dup{Account: "acme", StoreID: "1", DestStoreID: dest, SpaceID: space, ContentID: item}.Task()
	}
	// Each task in turn, with the case of pricing.TaskRequests it is
	// ("": a warm-up, not counted).
	steps := []struct {
		typ, cas string
		t        *task.Task
	}{
		// A run's first bit-log row makes its month's partitions (once).
		{"", "", task.Bit{Account: "acme", StoreID: "2", SpaceID: space, ContentID: "warm.txt", RunID: runID}.Task()},
		{"AUDIT", "ADD_CONTENT in a duplicated space", task.Audit{Account: "acme", StoreID: "1", SpaceID: space, ContentID: item,
			Action: task.ActionAddContent, DateTime: now, ContentChecksum: info.Checksum, ContentMimetype: "text/plain", ContentSize: &size}.Task()},
		{"BIT", "a healthy item below the part size (16 MiB)", task.Bit{Account: "acme", StoreID: "1", SpaceID: space, ContentID: item, RunID: runID}.Task()},
		{"BIT_REPORT", "a complete space of up to 1,000 items", task.BitReport{Account: "acme", StoreID: "1", SpaceID: space, RunID: runID}.Task()},
		{"DUP", "server-side, the copies differ", dup("2")},
		{"DUP", "server-side, the copies are equal", dup("2")},
		{"DUP", "streamed, the copies differ (an item below the part size)", dup("3")},
		{"DUP", "streamed, the copies are equal", dup("3")},
		{"STORAGE_STATS", "a space of up to 1,000 items", task.StorageStats{Account: "acme", StoreID: "1", SpaceID: space}.Task()},
	}
	checked := map[[2]string]bool{}
	// The test sends on a client of its own, not through the counter.
	sendQ, err := sqsqueue.Open(ctx, sqsc, queue.Name(prefix, queue.KeyBit), sqsqueue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	aws.Take()
	pgc.take()
	for _, st := range steps {
		tk, name := st.t, st.typ+"/"+st.cas
		b, err := task.Encode(tk, task.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		if err := sendQ.Send(ctx, queue.SendEntry{Body: b}); err != nil {
			t.Fatal(err)
		}
		select {
		case o := <-outcomes.done:
			if o != string(tk.Type)+"/"+string(workman.OutcomeDone) {
				t.Fatalf("%s: outcome %s", name, o)
			}
		case <-ctx.Done():
			t.Fatalf("%s: no outcome", name)
		}
		got := aws.Take()
		for _, op := range workmanOps {
			delete(got, op)
		}
		if n := pgc.take(); n > 0 {
			got[pricing.Postgres+" "+pricing.Statements] = n
		}
		if st.typ == "" {
			continue
		}
		i := slices.IndexFunc(pricing.TaskRequests, func(c pricing.TaskCase) bool { return c.Type == st.typ && c.Case == st.cas })
		if i < 0 {
			t.Fatalf("%s: no such case in pricing.TaskRequests", name)
		}
		checked[[2]string{st.typ, st.cas}] = true
		want := map[string]int{}
		reqs := pricing.TaskRequests[i].Requests
		if tk.RunID() != "" {
			reqs = append(slices.Clone(reqs), pricing.RunOutcome...)
		}
		for _, r := range reqs {
			want[r.String()] += r.N
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: requests %v, documented %v", name, got, want)
		}
	}
	for _, c := range pricing.TaskRequests {
		if !checked[[2]string{c.Type, c.Case}] {
			t.Errorf("case %s/%s of pricing.TaskRequests is not counted here", c.Type, c.Case)
		}
	}
	// The acceptance: a BIT of a small item makes exactly one S3 request,
	// its GET, and no checkpoint request (the state bucket is set).
	for _, c := range pricing.TaskRequests {
		if c.Type == "BIT" {
			for _, r := range c.Requests {
				if r.Service == pricing.S3 && (r.Op != "GetObject" || r.N != 1) {
					t.Errorf("BIT %s: %d %s, want only 1 s3 GetObject", c.Case, r.N, r)
				}
			}
		}
	}
}
