//go:build faults

package faults

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/pgcluster"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/memauditlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/bit"
)

// TestPostgresRestartDuringBitRun runs BIT tasks (the bit processor in a
// workman.Manager on an SQS queue of the emulator, over a filesystem store,
// the PostgreSQL content index and bit log of a throwaway cluster, and an
// in-memory audit log) while the cluster is restarted (`pg_ctl
// restart -m fast`) and later stopped and started again. No result may be lost or duplicated: every item
// has exactly one bit_log row for the run, a SUCCESS of case 1.
func TestPostgresRestartDuringBitRun(t *testing.T) {
	cfg := testenv.AWS(t)
	cluster := pgcluster.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	items := scaled(400, 200)
	const (
		workers = 8
		runID   = "20260101T000000Z"
		account = "acme"
		space   = "photos"
	)
	db, err := milldb.Open(ctx, cluster.URL(pgcluster.Database), milldb.Config{MaxConns: workers + 2, ConnectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := milldb.Up(ctx, db.Pool); err != nil {
		t.Fatal(err)
	}
	index := pgcontentindex.New(db.Pool)
	bitLog := pgbitlog.New(db.Pool)
	audit := memauditlog.New()

	// The items: in the store, the index and the audit log, all agreeing.
	dir := t.TempDir()
	root := filepath.Join(dir, "store")
	fs := newSpace(t, ctx, root, space)
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	for i := range items {
		body := fmt.Sprintf("content of item %d", i)
		sum, _, _ := storage.MD5Hex(strings.NewReader(body))
		if _, err := fs.Put(ctx, space, itemID(i), strings.NewReader(body), storage.PutOptions{Size: int64(len(body)), Checksum: sum, MimeType: "text/plain"}); err != nil {
			t.Fatal(err)
		}
		size := int64(len(body))
		if _, err := index.Upsert(ctx, contentindex.Entry{Item: contentindex.Item{Account: account, StoreID: "1", SpaceID: space, ContentID: itemID(i)},
			Checksum: sum, Size: &size, MimeType: "text/plain", Modified: at}); err != nil {
			t.Fatal(err)
		}
		if _, err := audit.Put(ctx, auditlog.Entry{Account: account, StoreID: "1", SpaceID: space, ContentID: itemID(i),
			Action: task.ActionAddContent, Time: at, Checksum: sum, Size: &size, MimeType: "text/plain"}); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "accounts.json"), fmt.Sprintf(`{"accounts": [{"id": %q, "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": %q}]}]}`, account, root))
	reg, err := stores.LoadFile(filepath.Join(dir, "accounts.json"))
	if err != nil {
		t.Fatal(err)
	}
	opener := stores.NewOpener(reg, stores.OpenerConfig{FS: func(_ context.Context, s stores.Store) (storage.Provider, error) { return fsstore.New(s.Root) }})

	// Queues: the bit queue and the dead-letter queue on the emulator; the
	// audit and bit-error queues in memory (case 1 sends nothing there).
	prefix := testenv.Prefix(t)
	sqsc := cfg.SQS()
	testenv.CleanupQueues(t, sqsc, prefix)
	bitQ := ensureQueue(t, ctx, sqsc, queue.Name(prefix, queue.KeyBit), 30*time.Second)
	dead := ensureQueue(t, ctx, sqsc, queue.Name(prefix, queue.KeyDeadLetter), 30*time.Second)
	auditQ := memqueue.New("audit", memqueue.Config{})
	errQ := memqueue.New("bit-error", memqueue.Config{})
	entries := make([]queue.SendEntry, 0, items)
	for i := range items {
		body, err := task.Encode(task.Bit{Account: account, StoreID: "1", SpaceID: space, ContentID: itemID(i), RunID: runID}.Task(), task.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, queue.SendEntry{Body: body})
	}
	sendStart := time.Now()
	if err := bitQ.Send(ctx, entries...); err != nil {
		t.Fatal(err)
	}
	t.Logf("queued %d BIT tasks in %v", items, time.Since(sendStart).Round(time.Millisecond))

	logf, err := os.Create(filepath.Join(dir, "workman.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	logger := slog.New(slog.NewJSONHandler(io.MultiWriter(logf), &slog.HandlerOptions{Level: slog.LevelInfo}))
	proc, err := bit.New(bit.Config{Stores: opener, Index: index, AuditLog: audit, BitLog: bitLog,
		AuditQueue: auditQ, BitErrorQueue: errQ, Common: bit.Common{Logger: logger}})
	if err != nil {
		t.Fatal(err)
	}
	mux := processors.NewMux()
	mux.Register(task.TypeBit, proc)
	var handled, failed atomic.Int64
	count := func(next processors.Handler) processors.Handler {
		return processors.HandlerFunc(func(ctx context.Context, tk *task.Task) error {
			err := next.Handle(ctx, tk)
			handled.Add(1)
			if err != nil {
				failed.Add(1)
			}
			return err
		})
	}
	m, err := workman.New(workman.Config{
		Queues: []queue.Queue{bitQ}, DeadLetter: dead, Handler: processors.Chain(mux, count, processors.Logging(logger)),
		ProcessorName: mux.ProcessorName, Workers: workers,
		// A failed check is re-sent after 2 s, 4 s (production: 10 s,
		// 20 s); the third failure would dead-letter it.
		RetryBase: 2 * time.Second, Logger: logger, WorkerID: "faults",
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	runStart := time.Now()
	go func() { runErr <- m.Run(runCtx) }()

	rows := func() int {
		c, err := bitLog.Count(ctx, runID, account, "1", space)
		if err != nil {
			return -1 // the server is restarting
		}
		return int(c.Total)
	}
	// At a quarter of the run: pg_ctl restart -m fast (the server is away
	// for a fraction of a second; checks may or may not be caught in it).
	// At half: stop -m fast, stay down until a check has failed on it (at
	// most 10 s), start again — so the failure path is surely taken. A
	// check that failed is re-sent 2 s later, when the server is back.
	var restarts []string
	waitRows := func(n int) {
		t.Helper()
		if !testbin.Poll(5*time.Minute, 20*time.Millisecond, func() bool { return rows() >= n }) {
			t.Fatalf("the run did not reach %d rows (at %d)", n, rows())
		}
	}
	waitRows(items / 4)
	before := rows()
	d, err := cluster.Restart(ctx, "fast")
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	restarts = append(restarts, fmt.Sprintf("restart -m fast at %d/%d rows, took %v", before, items, d.Round(time.Millisecond)))
	waitRows(items / 2)
	before = rows()
	failedBefore := failed.Load()
	down := time.Now()
	if err := cluster.Stop(ctx, "fast"); err != nil {
		t.Fatal(err)
	}
	testbin.Poll(10*time.Second, 10*time.Millisecond, func() bool { return failed.Load() > failedBefore })
	if err := cluster.Start(ctx); err != nil {
		t.Fatal(err)
	}
	restarts = append(restarts, fmt.Sprintf("stop -m fast at %d/%d rows, down %v", before, items, time.Since(down).Round(time.Millisecond)))
	if before >= items {
		t.Fatal("the run was over before the outage")
	}
	if failed.Load() == failedBefore {
		t.Error("no check failed while the server was down")
	}
	if !testbin.Poll(5*time.Minute, 100*time.Millisecond, func() bool {
		d, err := bitQ.Depth(ctx)
		return rows() == items && err == nil && d.Total() == 0
	}) {
		t.Fatalf("run incomplete: %d of %d rows; log:\n%s", rows(), items, tail(logf.Name(), 4000))
	}
	took := time.Since(runStart)
	stopRun()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}

	// Exactly one row per item, every one a case-1 SUCCESS.
	r, err := db.Pool.Query(ctx, `select content_id, count(*), min(result), max(result), min(case_number), max(case_number)
		from bit_log where run_id = $1 group by content_id`, runID)
	if err != nil {
		t.Fatal(err)
	}
	perItem := map[string]int{}
	for r.Next() {
		var id, minR, maxR string
		var n, minC, maxC int
		if err := r.Scan(&id, &n, &minR, &maxR, &minC, &maxC); err != nil {
			t.Fatal(err)
		}
		perItem[id] = n
		if minR != "SUCCESS" || maxR != "SUCCESS" || minC != 1 || maxC != 1 {
			t.Errorf("%s: results %s..%s cases %d..%d, want SUCCESS of case 1", id, minR, maxR, minC, maxC)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	for i := range items {
		if n := perItem[itemID(i)]; n != 1 {
			t.Errorf("%s has %d bit_log rows, want 1", itemID(i), n)
		}
	}
	if len(perItem) != items {
		t.Errorf("%d items have rows, want %d", len(perItem), items)
	}
	if d, err := dead.Depth(ctx); err != nil || d.Total() != 0 {
		t.Errorf("dead-letter queue: %+v, %v", d, err)
	}
	if auditQ.Len() != 0 || errQ.Len() != 0 {
		t.Errorf("audit queue %d, bit-error queue %d: want empty", auditQ.Len(), errQ.Len())
	}
	lines := readLog(t, logf.Name())
	retries := 0
	for _, l := range lines {
		if l.Msg == "task failed; retry scheduled" {
			retries++
		}
	}
	t.Logf("RESULT pg-restart: %d items, %d workers, %s; %d checks run, %d failed on the restarts and were retried (%d retries scheduled), "+
		"0 dead-lettered; %d bit_log rows, one per item; run took %v",
		items, workers, strings.Join(restarts, "; "), handled.Load(), failed.Load(), retries, len(perItem), took.Round(time.Millisecond))
	t.Logf("log by message:%s", countMsgs(lines))
}
