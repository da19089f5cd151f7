package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/lease/memlease"
	"github.com/millfleet/mill/pkg/reportstore/s3reportstore"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/memauditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/milldb"
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
	"github.com/millfleet/mill/processors/audit"
	"github.com/millfleet/mill/processors/bit"
	"github.com/millfleet/mill/processors/biterror"
	"github.com/millfleet/mill/processors/bitreport"
	bitproducer "github.com/millfleet/mill/producers/bit"
	"github.com/millfleet/mill/producers/looping"

	"github.com/millfleet/mill/internal/testkit/slogtest"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
)

const (
	account = "acme"
	// defaultItems keeps the test near a minute under -race on a 2-core
	// machine, inside make test's budget. The acceptance's 3 × 500
	// (MILL_E2E_ITEMS=500) passes on a freshly started moto in about
	// 10 min (3,000 rows, 0 false positives): moto's SQS slows with every
	// message a queue holds, so it is too slow for every make test run;
	// 3 × 150 took 3 min, 3 × 50 about 40–66 s.
	defaultItems = 50
)

// itemsPerSpace is defaultItems, or MILL_E2E_ITEMS (at least 50).
var itemsPerSpace = func() int {
	if n, err := strconv.Atoi(os.Getenv("MILL_E2E_ITEMS")); err == nil && n >= 50 {
		return n
	}
	return defaultItems
}()

var spaces = []string{"alpha", "beta", "gamma"}

func itemID(i int) string { return fmt.Sprintf("item-%03d", i) }

// content is the original bytes of an item.
func content(space string, i int) []byte {
	return []byte(fmt.Sprintf("%s/%s: %s\n", space, itemID(i), strings.Repeat(fmt.Sprintf("%x", i*7919), 12)))
}

func md5hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

// noPolicies: no account is duplicated, so AUDIT tasks emit no DUPs (the
// stores are seeded in sync; this test is about the bit check).
type noPolicies struct{}

func (noPolicies) Accounts(context.Context) ([]string, error) { return nil, nil }

func (noPolicies) Policy(ctx context.Context, account string) (*policy.Policy, error) {
	return nil, fmt.Errorf("%w: %s", policy.ErrNotFound, account)
}

// parallel runs f(0..n-1) on 12 goroutines and returns the first error.
func parallel(n int, f func(i int) error) error {
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	next := make(chan int)
	for range 12 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
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
	return first
}

type fault struct {
	store, space string
	i            int
}

func (f fault) key() string { return f.store + "/" + f.space + "/" + itemID(f.i) }

// TestBitIntegrityEndToEnd: 3 spaces of items on a filesystem store (1)
// and their copies on an S3 store (2); faults injected behind Mill's back;
// then the bit producer and an in-process Workman (BIT, BIT_ERROR,
// BIT_REPORT and AUDIT processors on SQS) run until idle, and every finding,
// repair and report is checked.
func TestBitIntegrityEndToEnd(t *testing.T) {
	cfg := testenv.AWS(t)
	pool := testenv.Pool(t)
	// 8 minutes for the default size; larger runs get time in proportion
	// (moto's SQS slows with every queued message).
	ctx, cancel := context.WithTimeout(context.Background(), max(8*time.Minute, time.Duration(itemsPerSpace)*4*time.Second))
	defer cancel()
	start := time.Now()
	logger := slogtest.New(t, slog.LevelWarn)
	if _, err := milldb.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	prefix := testenv.Prefix(t)

	// Services: audit table, queues, buckets.
	sqsc := cfg.SQS()
	testenv.CleanupQueues(t, sqsc, prefix)
	openQueue := func(key string) *sqsqueue.Queue {
		name := queue.Name(prefix, key)
		if _, err := (setup.Queue{Client: sqsc, QueueName: name, VisibilityTimeout: 60 * time.Second}).Ensure(ctx); err != nil {
			t.Fatal(err)
		}
		q, err := sqsqueue.Open(ctx, sqsc, name, sqsqueue.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	auditQ, reportQ, errorQ, bitQ, deadQ := openQueue(queue.KeyAudit), openQueue(queue.KeyBitReport),
		openQueue(queue.KeyBitError), openQueue(queue.KeyBit), openQueue(queue.KeyDeadLetter)
	s3c := cfg.S3()
	store2Bucket, reportsBucket := prefix+"acme-2", prefix+"reports"
	for _, b := range []string{store2Bucket, reportsBucket} {
		if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
		testenv.CleanupBucket(t, s3c, b)
	}
	root1 := filepath.Join(t.TempDir(), "store1")
	reg, err := stores.Parse("accounts.json", []byte(`{"accounts":[{"id":"acme","status":"active","stores":[
	 {"id":"1","primary":true,"kind":"fs","root":"`+root1+`"},
	 {"id":"2","kind":"s3","bucket":"`+store2Bucket+`","prefix":"mill/","region":"us-east-1"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	opener := stores.NewOpener(reg, stores.OpenerConfig{AWS: cfg.AWS, PathStyle: true,
		FS: func(_ context.Context, s stores.Store) (storage.Provider, error) { return fsstore.New(s.Root) },
		S3: func(_ context.Context, c *s3.Client, s stores.Store) (storage.Provider, error) {
			return s3store.New(c, s3store.Config{Bucket: s.Bucket, Prefix: s.Prefix})
		}})
	store1, err := opener.Open(ctx, account, "1")
	if err != nil {
		t.Fatal(err)
	}
	store2, err := opener.Open(ctx, account, "2")
	if err != nil {
		t.Fatal(err)
	}
	index := pgcontentindex.New(pool)
	bitLog := pgbitlog.New(pool)
	// The audit log is the memory implementation: on the DynamoDB emulator
	// its 3000 seeding writes and 3000 reads would take minutes on a loaded
	// machine (the DynamoDB log has its own contract and acceptance tests).
	alog := memauditlog.New()

	// Seed: store 1 written, store 2 made by streaming copies, and the
	// index rows and audit entries Mill would have written for both.
	seeded := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for _, sp := range spaces {
		for _, p := range []storage.Provider{store1, store2} {
			if err := p.CreateSpace(ctx, sp); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = parallel(len(spaces)*itemsPerSpace, func(n int) error {
		sp, i := spaces[n/itemsPerSpace], n%itemsPerSpace
		b := content(sp, i)
		sum := md5hex(b)
		if _, err := store1.Put(ctx, sp, itemID(i), strings.NewReader(string(b)), storage.PutOptions{Size: int64(len(b)), Checksum: sum, MimeType: "text/plain"}); err != nil {
			return err
		}
		// Store 2's copy, written as s3store writes a single-part item (one
		// request instead of Put's two: the emulator is the bottleneck).
		md5raw := md5.Sum(b)
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(store2Bucket), Key: aws.String("mill/" + sp + "/" + itemID(i)),
			Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b))), ContentType: aws.String("text/plain"),
			ContentMD5: aws.String(base64.StdEncoding.EncodeToString(md5raw[:])), Metadata: map[string]string{s3store.MetaMD5: sum}}); err != nil {
			return err
		}
		size := int64(len(b))
		for _, st := range []string{"1", "2"} {
			if _, err := index.Upsert(ctx, contentindex.Entry{Item: contentindex.Item{Account: account, StoreID: st, SpaceID: sp, ContentID: itemID(i)},
				Checksum: sum, Size: &size, MimeType: "text/plain", Properties: map[string]string{}, Modified: seeded}); err != nil {
				return err
			}
			if _, err := alog.Put(ctx, auditlog.Entry{Account: account, StoreID: st, SpaceID: sp, ContentID: itemID(i),
				Action: task.ActionAddContent, UserID: "seed", Time: seeded, Checksum: sum, MimeType: "text/plain", Size: &size}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	t.Logf("seeded %d items × 2 stores in %v", len(spaces)*itemsPerSpace, time.Since(start).Round(time.Millisecond))

	// Faults, behind Mill's back.
	sour := []fault{{"1", "alpha", 1}, {"1", "alpha", 2}, {"1", "beta", 3}, {"1", "beta", 4}, {"1", "gamma", 5}} // case 2
	updated := []fault{{"2", "alpha", 10}, {"2", "beta", 11}, {"2", "gamma", 12}}                                // case 10
	badIndex := []fault{{"1", "alpha", 20}, {"1", "beta", 21}, {"1", "gamma", 22}}                               // case 5
	removed := []fault{{"1", "alpha", 30}, {"1", "beta", 31}}                                                    // case 8
	noAudit := []fault{{"1", "gamma", 40}, {"1", "alpha", 41}}                                                   // case 7
	for _, f := range sour {                                                                                     // flip the bytes of the blob, leave the sidecar alone
		meta, err := os.ReadFile(filepath.Join(root1, f.space, itemID(f.i)+".m"))
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Blob string `json:"blob"`
		}
		if err := json.Unmarshal(meta, &m); err != nil || m.Blob == "" {
			t.Fatalf("sidecar %s: %v", meta, err)
		}
		blob := filepath.Join(root1, f.space, m.Blob)
		b, err := os.ReadFile(blob)
		if err != nil {
			t.Fatal(err)
		}
		for j := range 4 {
			b[j] ^= 0xff
		}
		if err := os.WriteFile(blob, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range updated {
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(store2Bucket), Key: aws.String("mill/" + f.space + "/" + itemID(f.i)),
			Body: strings.NewReader("updated outside Mill\n")}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range badIndex {
		if err := index.SetChecksum(ctx, contentindex.Item{Account: account, StoreID: f.store, SpaceID: f.space, ContentID: itemID(f.i)}, md5hex([]byte("wrong"))); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range removed {
		if err := store1.Delete(ctx, f.space, itemID(f.i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range noAudit {
		e, err := alog.Latest(ctx, account, f.store, f.space, itemID(f.i))
		if err != nil || e == nil {
			t.Fatalf("latest %s: %v %v", f.key(), e, err)
		}
		if err := alog.Delete(ctx, e.Key()); err != nil {
			t.Fatal(err)
		}
	}

	// Workman with the four processors.
	const recheck = time.Second
	bitP, err := bit.New(bit.Config{Stores: opener, Index: index, AuditLog: alog, BitLog: bitLog, AuditQueue: auditQ, BitErrorQueue: errorQ,
		Common: bit.Common{RecheckDelay: recheck, Logger: logger}})
	if err != nil {
		t.Fatal(err)
	}
	observer := &bit.Observer{Stores: opener, Index: index, AuditLog: alog}
	errP, err := biterror.New(biterror.Config{Stores: opener, Observer: observer,
		BitLog: bitLog, AuditQueue: auditQ, BitQueue: bitQ, Common: bit.Common{RecheckDelay: recheck, Logger: logger}})
	if err != nil {
		t.Fatal(err)
	}
	repP, err := bitreport.New(bitreport.Config{Stores: opener, Index: index, BitLog: bitLog,
		Reports: s3reportstore.Store{Client: s3c, Bucket: reportsBucket}, Requeue: reportQ,
		Observer: observer, BitErrorQueue: errorQ,
		// A report waiting for its space's results asks again every 10 s:
		// each re-send makes the bit-report queue, above the busy bit
		// queue, answer with a message and then cost an empty 1 s receive.
		RecheckDelay: 10 * time.Second, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	audP, err := audit.New(audit.Config{Log: alog, Index: index, DupHigh: memqueue.New("dup-high", memqueue.Config{}), Policies: noPolicies{}, Logger: logger, Stores: opener})
	if err != nil {
		t.Fatal(err)
	}
	mux := processors.NewMux()
	mux.Register(task.TypeBit, bitP)
	mux.Register(task.TypeBitError, errP)
	mux.Register(task.TypeBitReport, repP)
	mux.Register(task.TypeAudit, audP)
	// The four queues in the production priority order (audit,
	// bit-report, bit-error, bit).
	// The first checks of the case-5 and case-7 items are redelivered
	// once their repair is done, as SQS may redeliver any message.
	redeliver := newRedeliverer(bitQ, badIndex, noAudit)
	opened := map[string]queue.Queue{queue.KeyAudit: deleteHook{auditQ, redeliver.deleted}, queue.KeyBitReport: reportQ,
		queue.KeyBitError: errorQ, queue.KeyBit: deleteHook{bitQ, redeliver.deleted}}
	var queues []queue.Queue
	for _, k := range queue.DefaultPriority {
		if q, ok := opened[k]; ok {
			queues = append(queues, q)
		}
	}

	// runMill runs the bit producer once (a new run over the spaces filter
	// selects) and an in-process Workman until the run's reports are
	// written and every queue is idle; it returns the run's ID.
	runMill := func(filter bitproducer.Filter, wantBits int64, wantReports int) string {
		t.Helper()
		prod, err := bitproducer.New(bitproducer.Config{Source: bitproducer.Source{Registry: reg, Opener: opener, Filter: filter, Logger: logger}, BitLog: bitLog})
		if err != nil {
			t.Fatal(err)
		}
		loop, err := looping.New(looping.Config{Kind: bitproducer.Kind, Producer: prod, Queue: &bitproducer.Router{Bit: bitQ, Report: reportQ},
			State: looping.NewMemoryStore(), Lease: memlease.New(nil), MaxQueueSize: 100000, Logger: logger, Progress: looping.ProgressOff})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := loop.Run(ctx)
		if err != nil || sum.Stopped != looping.StopDone {
			t.Fatalf("producer: %v %v", sum, err)
		}
		if got := sum.Queued["BIT"][account]; got != wantBits || sum.Queued["BIT_REPORT"][account] != int64(wantReports) {
			t.Fatalf("producer queued %v, want %d BIT and %d BIT_REPORT", sum.Queued, wantBits, wantReports)
		}
		t.Logf("producer: %v (at %v)", sum, time.Since(start).Round(time.Millisecond))

		// Several managers over that list, as a small fleet runs: each has one
		// receive at a time, and an empty 1 s receive on a higher queue holds
		// up only its own intake.
		const managers = 4
		wctx, stopWorkman := context.WithCancel(ctx)
		done := make(chan error, managers)
		var running sync.WaitGroup
		for n := range managers {
			mgr, err := workman.New(workman.Config{
				Queues: queues, DeadLetter: deadQ,
				Handler: processors.Chain(mux, processors.Recover()), ProcessorName: mux.ProcessorName,
				// The production receive wait and first backoff; the backoff
				// cap shorter than production's 30 s so repairs and re-sent
				// reports on the higher queues are picked up within seconds,
				// yet long enough that the busy bit queue does not pay a 1 s
				// empty receive on each of them for every batch of 10; a short
				// idle period so the run ends soon after the last task.
				Workers: 8, ReceiveWait: time.Second, QueueBackoffMin: time.Second, QueueBackoffMax: 8 * time.Second,
				IdlePollWait: time.Second,
				RetryBase:    time.Second, GracePeriod: 5 * time.Second, WorkerID: fmt.Sprintf("e2e-%d", n), Logger: logger,
			})
			if err != nil {
				t.Fatal(err)
			}
			running.Go(func() {
				if err := mgr.Run(wctx); err != nil && !errors.Is(err, context.Canceled) {
					done <- err
				}
			})
		}
		defer func() {
			stopWorkman()
			running.Wait()
		}()

		// Until idle: the run's reports written and every queue empty, twice in a row.
		idle := 0
		for idle < 2 {
			select {
			case <-ctx.Done():
				t.Fatalf("not idle in time: %v", ctx.Err())
			case err := <-done:
				t.Fatalf("workman stopped: %v", err)
			case <-time.After(2 * time.Second):
			}
			reps, err := bitLog.Reports(ctx, bitlog.ReportFilter{RunID: sum.RunID})
			if err != nil {
				t.Fatal(err)
			}
			busy := len(reps) < wantReports
			for _, q := range []*sqsqueue.Queue{auditQ, reportQ, errorQ, bitQ} {
				if busy {
					break
				}
				d, err := q.Depth(ctx)
				if err != nil {
					t.Fatal(err)
				}
				busy = d.Total() > 0
			}
			if busy {
				idle = 0
			} else {
				idle++
			}
		}
		t.Logf("run %s idle at %v", sum.RunID, time.Since(start).Round(time.Millisecond))
		return sum.RunID
	}

	// Run 1: every space of both stores.
	runID := runMill(bitproducer.Filter{}, int64(2*len(spaces)*itemsPerSpace-len(removed)), 6)

	if d, err := deadQ.Depth(ctx); err != nil || d.Total() != 0 {
		t.Errorf("dead-letter queue: %+v %v", d, err)
	}

	// Every item's bit log row carries its expected case.
	type want struct {
		result bitlog.Result
		c      int
	}
	expect := map[string]want{}
	for _, f := range updated {
		expect[f.key()] = want{bitlog.ResultError, 10}
	}
	for _, f := range badIndex {
		expect[f.key()] = want{bitlog.ResultFailure, 5}
	}
	for _, f := range noAudit {
		expect[f.key()] = want{bitlog.ResultFailure, 7}
	}
	rows := map[string]bitlog.Row{}
	flt := bitlog.Filter{RunID: runID, Limit: bitlog.MaxPageSize}
	for {
		page, next, err := bitLog.Results(ctx, flt)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page {
			rows[r.StoreID+"/"+r.SpaceID+"/"+r.ContentID] = r
		}
		if next == "" {
			break
		}
		flt.After = next
	}
	// A removed item is not listed, so not checked; the report's first
	// sighting marks it, without a row (run 2 reports it).
	if len(rows) != 2*len(spaces)*itemsPerSpace-len(removed) {
		t.Errorf("%d bit log rows, want %d", len(rows), 2*len(spaces)*itemsPerSpace-len(removed))
	}
	for _, f := range removed {
		if r, ok := rows[f.key()]; ok {
			t.Errorf("removed %s: row %+v in run 1, want none (first sighting)", f.key(), r)
		}
		e, err := index.Get(ctx, contentindex.Item{Account: account, StoreID: f.store, SpaceID: f.space, ContentID: itemID(f.i)})
		if err != nil || e.MissingRun != runID {
			t.Errorf("removed %s: index row %+v %v, want marked missing in run %s", f.key(), e, err, runID)
		}
	}
	for _, f := range sour { // repaired from store 2, re-checked SUCCESS
		r := rows[f.key()]
		if r.Result != bitlog.ResultSuccess || r.Case != 1 || !strings.Contains(r.Details, "re-check after case 2") {
			t.Errorf("sour %s: %s case %d %q", f.key(), r.Result, r.Case, r.Details)
		}
		rc, _, err := store1.Get(ctx, f.space, itemID(f.i))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if md5hex(b) != md5hex(content(f.space, f.i)) {
			t.Errorf("sour %s not repaired", f.key())
		}
		expect[f.key()] = want{bitlog.ResultSuccess, 1}
	}
	falsePositives := 0
	for k, r := range rows {
		w, ok := expect[k]
		if !ok {
			w = want{bitlog.ResultSuccess, 1}
		}
		if r.Result != w.result || r.Case != w.c {
			if !ok {
				falsePositives++
			}
			t.Errorf("%s: %s case %d (%q), want %s case %d", k, r.Result, r.Case, r.Details, w.result, w.c)
		}
	}
	t.Logf("bit log: %d rows, %d false positives", len(rows), falsePositives)
	// A redelivered check of a repaired item saw it healthy: the copy's
	// verdict is that SUCCESS, the run's row keeps what the run found.
	for _, f := range slices.Concat(badIndex, noAudit) {
		var v *bitlog.Verdict
		vs, _, err := bitLog.Verdicts(ctx, account, f.store, f.space, "", bitlog.MaxPageSize)
		if err != nil {
			t.Fatal(err)
		}
		for i := range vs {
			if vs[i].ContentID == itemID(f.i) {
				v = &vs[i]
			}
		}
		if n := redeliver.Sent(f.key()); n != 1 || v == nil || v.Result != bitlog.ResultSuccess || !v.CheckedAt.After(rows[f.key()].CheckedAt) {
			t.Errorf("%s: redelivered %d times, verdict %+v, want once and its SUCCESS after the run's row (%v)", f.key(), n, v, rows[f.key()].CheckedAt)
		}
	}
	for _, f := range badIndex { // corrected in place
		e, err := index.Get(ctx, contentindex.Item{Account: account, StoreID: f.store, SpaceID: f.space, ContentID: itemID(f.i)})
		if err != nil || e.Checksum != md5hex(content(f.space, f.i)) {
			t.Errorf("index of %s: %+v %v", f.key(), e, err)
		}
	}
	for _, f := range noAudit { // restored by the AUDIT task
		e, err := alog.Latest(ctx, account, f.store, f.space, itemID(f.i))
		if err != nil || e == nil || e.Checksum != md5hex(content(f.space, f.i)) {
			t.Errorf("audit entry of %s: %+v %v", f.key(), e, err)
		}
	}
	for _, f := range updated { // the update Mill missed is now known to the index
		e, err := index.Get(ctx, contentindex.Item{Account: account, StoreID: f.store, SpaceID: f.space, ContentID: itemID(f.i)})
		if err != nil || e.Checksum != md5hex([]byte("updated outside Mill\n")) {
			t.Errorf("index of updated %s: %+v %v", f.key(), e, err)
		}
	}

	// The reports in S3 list exactly those findings (a sour item shows
	// as found — FAILURE case 2 — or, when its report was written after
	// the repair's re-check, as SUCCESS with the re-check note).
	reps, err := bitLog.Reports(ctx, bitlog.ReportFilter{RunID: runID})
	if err != nil || len(reps) != 6 {
		t.Fatalf("reports: %d %v", len(reps), err)
	}
	findings := map[string]string{}
	sourFound := 0
	for _, rep := range reps {
		key := strings.TrimPrefix(rep.Location, "s3://"+reportsBucket+"/")
		if key != fmt.Sprintf("bit-integrity/%s/%s/%s/%s.tsv", account, rep.StoreID, rep.SpaceID, runID) {
			t.Errorf("report location %s", rep.Location)
		}
		obj, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(reportsBucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(obj.Body)
		lines := 0
		for sc.Scan() {
			lines++
			if lines == 1 {
				continue
			}
			f := bitreport.ParseLine(sc.Text())
			k := f[2] + "/" + f[4] + "/" + f[5]
			isSour := slices.ContainsFunc(sour, func(s fault) bool { return s.key() == k })
			switch {
			case isSour && f[6] == "FAILURE" && f[7] == "2":
				sourFound++
			case isSour && f[6] == "SUCCESS" && strings.Contains(f[12], "re-check after case 2"):
			case f[6] != "SUCCESS":
				findings[k] = f[6] + "/" + f[7]
			}
		}
		obj.Body.Close()
		wantLines := itemsPerSpace
		for _, f := range removed {
			if f.store == rep.StoreID && f.space == rep.SpaceID {
				wantLines--
			}
		}
		if lines-1 != int(rep.Counts.Total) || rep.Counts.Total != int64(wantLines) {
			t.Errorf("report %s: %d lines, counts %+v, want %d", key, lines-1, rep.Counts, wantLines)
		}
		wantResult := bitlog.ResultFailure
		if rep.StoreID == "2" {
			wantResult = bitlog.ResultError
		}
		if rep.Result != wantResult {
			t.Errorf("report %s: result %s, want %s", key, rep.Result, wantResult)
		}
	}
	wantFindings := map[string]string{}
	for k, w := range expect {
		if w.result != bitlog.ResultSuccess {
			wantFindings[k] = fmt.Sprintf("%s/%d", w.result, w.c)
		}
	}
	if fmt.Sprint(findings) != fmt.Sprint(wantFindings) {
		t.Errorf("report findings:\n got %v\nwant %v", findings, wantFindings)
	}
	t.Logf("reports: %d findings besides the sour items; %d of 5 sour items listed as FAILURE case 2 (the rest after their repair); total %v",
		len(findings), sourFound, time.Since(start).Round(time.Millisecond))

	// Run 2, over the spaces of store 1 that lost an item: the removed
	// items, missing in two consecutive runs, are reported (ERROR case 8)
	// and repaired from store 2, then re-checked SUCCESS.
	var only bitproducer.Patterns
	spacesOf := map[string]bool{}
	for _, f := range removed {
		if !spacesOf[f.space] {
			spacesOf[f.space] = true
			p, err := bitproducer.ParseFilter("run2", strings.NewReader("/"+account+"/1/"+f.space+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			only = append(only, p...)
		}
	}
	run2 := runMill(bitproducer.Filter{Include: only}, int64(len(spacesOf)*itemsPerSpace-len(removed)), len(spacesOf))
	if run2 == runID {
		t.Fatalf("run 2 has run 1's ID %s", runID)
	}
	if d, err := deadQ.Depth(ctx); err != nil || d.Total() != 0 {
		t.Errorf("dead-letter queue after run 2: %+v %v", d, err)
	}
	for _, f := range removed {
		item := contentindex.Item{Account: account, StoreID: f.store, SpaceID: f.space, ContentID: itemID(f.i)}
		var r *bitlog.Row
		page, _, err := bitLog.Results(ctx, bitlog.Filter{RunID: run2, Account: account, StoreID: f.store, SpaceID: f.space, Limit: bitlog.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		for i := range page {
			if page[i].ContentID == item.ContentID {
				r = &page[i]
			}
		}
		if r == nil || r.Result != bitlog.ResultSuccess || r.Case != 1 || !strings.Contains(r.Details, "re-check after case 8: repaired from store 2") {
			t.Errorf("removed %s in run 2: row %+v, want SUCCESS after the case-8 repair", f.key(), r)
		}
		rc, _, err := store1.Get(ctx, f.space, itemID(f.i))
		if err != nil {
			t.Fatalf("removed %s not restored: %v", f.key(), err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if md5hex(b) != md5hex(content(f.space, f.i)) {
			t.Errorf("removed %s restored with other bytes", f.key())
		}
		if e, err := index.Get(ctx, item); err != nil || e.MissingRun != "" || e.Deleted {
			t.Errorf("removed %s: index row after the repair %+v %v, want live and unmarked", f.key(), e, err)
		}
	}
	reps, err = bitLog.Reports(ctx, bitlog.ReportFilter{RunID: run2})
	if err != nil || len(reps) != len(spacesOf) {
		t.Fatalf("run 2 reports: %+v %v", reps, err)
	}
	for _, rep := range reps {
		if rep.Result != bitlog.ResultError || rep.Counts.Error != 1 || rep.Counts.Total != int64(itemsPerSpace) {
			t.Errorf("run 2 report %s/%s: %s %+v, want ERROR with the missing item", rep.StoreID, rep.SpaceID, rep.Result, rep.Counts)
		}
	}
	t.Logf("run 2: %d missing items reported and repaired; total %v", len(removed), time.Since(start).Round(time.Millisecond))
}
