package storagestats_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/spacestats/memspacestats"
	"github.com/millfleet/mill/pkg/spacestats/pgspacestats"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/storagestats"
)

// fixedStores serves one store, "acme"/"1", whatever its kind.
type fixedStores struct {
	reg  *stores.Registry
	prov storage.Provider
}

func newStores(kind storage.Kind, prov storage.Provider) *fixedStores {
	st := stores.Store{ID: "1", Primary: true, Kind: kind, Root: "/unused", Bucket: "unused"}
	return &fixedStores{prov: prov, reg: &stores.Registry{Accounts: []stores.Account{
		{ID: "acme", Status: stores.StatusActive, Stores: []stores.Store{st}}}}}
}

func (f *fixedStores) Open(_ context.Context, account, storeID string) (storage.Provider, error) {
	if _, err := f.reg.Store(account, storeID); err != nil {
		return nil, err
	}
	return f.prov, nil
}

func (f *fixedStores) Registry() *stores.Registry { return f.reg }

// env is a processor over one store, a statistics store and a memory
// continuation queue.
type env struct {
	t     *testing.T
	prov  storage.Provider
	stats spacestats.Store
	q     *memqueue.Queue
	p     *storagestats.Processor
	clk   *clock.Fake
}

func newEnv(t *testing.T, kind storage.Kind, prov storage.Provider, stats spacestats.Store) *env {
	clk := clock.NewFake(time.Date(2026, 5, 1, 2, 0, 0, 0, time.UTC))
	q := memqueue.New("bit", memqueue.Config{Clock: clk})
	p, err := storagestats.New(storagestats.Config{Stores: newStores(kind, prov), Stats: stats, Continue: q,
		MaxItems: 7, PageSize: 3, Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, prov: prov, stats: stats, q: q, p: p, clk: clk}
}

// count handles a STORAGE_STATS task and every continuation it leads to;
// it returns how many tasks it took.
func (e *env) count(tk task.StorageStats) int {
	e.t.Helper()
	ctx := e.t.Context()
	if err := e.p.Handle(ctx, tk.Task()); err != nil {
		e.t.Fatalf("Handle %v: %v", tk, err)
	}
	n := 1
	for {
		msgs, err := e.q.Receive(ctx, queue.MaxBatch, 0)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(msgs) == 0 {
			return n
		}
		for _, m := range msgs {
			next, err := task.Decode(m.Body)
			if err != nil {
				e.t.Fatal(err)
			}
			e.clk.Advance(time.Second)
			if err := e.p.Handle(ctx, next); err != nil {
				e.t.Fatalf("Handle continuation %v: %v", next, err)
			}
			n++
		}
		if err := e.q.Delete(ctx, msgs...); err != nil {
			e.t.Fatal(err)
		}
	}
}

// direct counts the space as an operator would: a listing and a Head per
// item.
func (e *env) direct(space string) (items, bytes int64) {
	e.t.Helper()
	ctx := e.t.Context()
	for id, err := range storage.Walk(ctx, e.prov, space, "", 0) {
		if err != nil {
			e.t.Fatal(err)
		}
		info, err := e.prov.Head(ctx, space, id)
		if err != nil {
			e.t.Fatal(err)
		}
		items++
		bytes += info.Size
	}
	return items, bytes
}

func (e *env) latest(space string) spacestats.Stats {
	e.t.Helper()
	rows, err := e.stats.Latest(e.t.Context(), spacestats.Filter{Account: "acme", StoreID: "1", SpaceID: space})
	if err != nil || len(rows) != 1 {
		e.t.Fatalf("Latest of %s: %+v %v", space, rows, err)
	}
	return rows[0]
}

// scenario: 25 items of varied sizes (IDs with slashes, spaces and
// non-ASCII), counted in chains of tasks of 7; then deletes, a second run,
// and the space deleted — each count equal to a direct listing.
func scenario(t *testing.T, e *env) {
	ctx := t.Context()
	if err := e.prov.CreateSpace(ctx, "photos"); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 25 {
		id := fmt.Sprintf("dir %d/ïtem-%02d", i%3, i)
		data := bytes.Repeat([]byte{byte(i)}, i*37+1)
		if _, err := e.prov.Put(ctx, "photos", id, bytes.NewReader(data), storage.PutOptions{Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	check := func(run string, wantTasks int) {
		t.Helper()
		if n := e.count(task.StorageStats{Account: "acme", StoreID: "1", SpaceID: "photos", RunID: run}); n != wantTasks {
			t.Errorf("run %s: %d tasks, want %d (chains of 7 items)", run, n, wantTasks)
		}
		items, bytes := e.direct("photos")
		got := e.latest("photos")
		if got.RunID != run || got.Items != items || got.Bytes != bytes {
			t.Errorf("run %s: recorded %d items %d bytes (run %s); a direct listing has %d items %d bytes", run, got.Items, got.Bytes, got.RunID, items, bytes)
		}
	}
	check("r1", 4) // 25 items: 7 + 7 + 7 + 4
	for _, id := range ids[3:12] {
		if err := e.prov.Delete(ctx, "photos", id); err != nil {
			t.Fatal(err)
		}
	}
	check("r2", 3) // 16 items: 7 + 7 + 2
	if got := e.latest("photos"); got.Items != 16 {
		t.Errorf("after 9 deletes: %d items, want 16", got.Items)
	}
	// Exactly a multiple of MaxItems: the last part finds nothing more.
	for _, id := range ids[12:14] {
		if err := e.prov.Delete(ctx, "photos", id); err != nil {
			t.Fatal(err)
		}
	}
	check("r3", 2)
	// The space goes: recorded as empty.
	for id, err := range storage.Walk(ctx, e.prov, "photos", "", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if err := e.prov.Delete(ctx, "photos", id); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.prov.DeleteSpace(ctx, "photos"); err != nil {
		t.Fatal(err)
	}
	e.count(task.StorageStats{Account: "acme", StoreID: "1", SpaceID: "photos", RunID: "r4"})
	if got := e.latest("photos"); got.RunID != "r4" || got.Items != 0 || got.Bytes != 0 {
		t.Errorf("deleted space: %+v, want run r4 with 0 items and 0 bytes", got)
	}
	hist, err := e.stats.History(ctx, spacestats.Filter{Account: "acme"}, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, h := range hist {
		runs = append(runs, fmt.Sprintf("%s:%d", h.RunID, h.Items))
	}
	if strings.Join(runs, " ") != "r4:0 r3:14 r2:16 r1:25" {
		t.Errorf("history %q", runs)
	}
	// A count outside any run is named by when it began.
	if err := e.prov.CreateSpace(ctx, "photos"); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Hour)
	e.count(task.StorageStats{Account: "acme", StoreID: "1", SpaceID: "photos"})
	if got := e.latest("photos"); got.RunID != e.clk.Now().UTC().Format(storagestats.RunIDFormat) || got.Items != 0 {
		t.Errorf("ad-hoc count: %+v", got)
	}
}

func TestCountsFS(t *testing.T) {
	fs, err := fsstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	scenario(t, newEnv(t, storage.KindFS, fs, memspacestats.New(nil)))
}

// TestCountsS3 runs the scenario on the emulator's S3 and PostgreSQL.
func TestCountsS3(t *testing.T) {
	cfg := testenv.AWS(t)
	pool := testenv.Pool(t)
	if _, err := milldb.Up(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	client := cfg.S3(func(o *s3.Options) { o.UsePathStyle = true })
	bucket := testenv.Prefix(t) + "stats"
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, client, bucket)
	st, err := s3store.New(client, s3store.Config{Bucket: bucket, Prefix: "acme/"})
	if err != nil {
		t.Fatal(err)
	}
	scenario(t, newEnv(t, storage.KindS3, st, pgspacestats.New(pool)))
}

func TestBadTasksArePermanent(t *testing.T) {
	fs, err := fsstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, storage.KindFS, fs, memspacestats.New(nil))
	for name, tk := range map[string]*task.Task{
		"no space":      task.New(task.TypeStorageStats, map[string]string{"account": "acme", "storeId": "1"}),
		"bad count":     task.New(task.TypeStorageStats, map[string]string{"account": "acme", "storeId": "1", "spaceId": "s", "itemCount": "x"}),
		"unknown store": task.StorageStats{Account: "acme", StoreID: "9", SpaceID: "s"}.Task(),
		"unknown acct":  task.StorageStats{Account: "nobody", StoreID: "1", SpaceID: "s"}.Task(),
		"bad space":     task.StorageStats{Account: "acme", StoreID: "1", SpaceID: "../etc"}.Task(),
	} {
		if err := e.p.Handle(t.Context(), tk); !processors.IsPermanent(err) {
			t.Errorf("%s: %v, want a permanent error", name, err)
		}
	}
	if rows, _ := e.stats.Latest(t.Context(), spacestats.Filter{}); len(rows) != 0 {
		t.Errorf("rows recorded for bad tasks: %+v", rows)
	}
}
