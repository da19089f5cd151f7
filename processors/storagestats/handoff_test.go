package storagestats_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/blob/memblob"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/spacestats/memspacestats"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/storagestats"
)

// newHandOnEnv is newEnv over an fs store with the hand-ons kept in cps.
func newHandOnEnv(t *testing.T, cps blob.Store) *env {
	fs, err := fsstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 5, 1, 2, 0, 0, 0, time.UTC))
	q := memqueue.New("bit", memqueue.Config{Clock: clk})
	stats := memspacestats.New(nil)
	p, err := storagestats.New(storagestats.Config{Stores: newStores(storage.KindFS, fs), Stats: stats, Continue: q,
		Checkpoints: cps, MaxItems: 7, PageSize: 3, Clock: clk, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, prov: fs, stats: stats, q: q, p: p, clk: clk}
}

// TestCountsHandedOn: with the hand-ons kept, every chain of the scenario
// still counts what a direct listing holds.
func TestCountsHandedOn(t *testing.T) {
	cps := memblob.New(nil)
	scenario(t, newHandOnEnv(t, cps))
	if cps.Len() == 0 {
		t.Error("no hand-on was saved")
	}
}

// TestForgedContinuationRefused: a STORAGE_STATS task carrying counts so
// far that no hand-on saved — made up, or a real continuation with its
// counts changed — is refused with a permanent error naming the rule, and
// nothing is recorded or sent on.
func TestForgedContinuationRefused(t *testing.T) {
	e := newHandOnEnv(t, memblob.New(nil))
	ctx := t.Context()
	if err := e.prov.CreateSpace(ctx, "photos"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := e.prov.Put(ctx, "photos", string(rune('a'+i)), strings.NewReader("12345"), storage.PutOptions{Size: 5}); err != nil {
			t.Fatal(err)
		}
	}
	// A real first part, whose continuation is taken and altered.
	if err := e.p.Handle(ctx, task.StorageStats{Account: "acme", StoreID: "1", SpaceID: "photos", RunID: "r1"}.Task()); err != nil {
		t.Fatal(err)
	}
	msgs, err := e.q.Receive(ctx, queue.MaxBatch, 0)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("continuations: %d, %v", len(msgs), err)
	}
	real, err := task.Decode(msgs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	cont, err := task.StorageStatsFrom(real)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.q.Delete(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	inflated := cont
	inflated.Items, inflated.Bytes = 1_000_000_000_000, 1<<60
	skipped := cont
	skipped.Marker = "z"
	for name, s := range map[string]task.StorageStats{
		"made-up counts past the end": {Account: "acme", StoreID: "1", SpaceID: "photos", RunID: "r1", Marker: "~", Items: 1_000_000_000_000, Bytes: 1 << 60},
		"counts without a marker":     {Account: "acme", StoreID: "1", SpaceID: "photos", RunID: "r2", Items: 5, Bytes: 5},
		"a start only":                {Account: "acme", StoreID: "1", SpaceID: "photos", RunID: "r3", Started: time.Unix(1, 0)},
		"the continuation inflated":   inflated,
		"the continuation skipping":   skipped,
	} {
		err := e.p.Handle(ctx, s.Task())
		if !processors.IsPermanent(err) || !errors.Is(err, storagestats.ErrNotHandedOn) {
			t.Errorf("%s: err = %v, want a permanent ErrNotHandedOn", name, err)
		}
	}
	if rows, _ := e.stats.Latest(ctx, spacestats.Filter{}); len(rows) != 0 {
		t.Errorf("rows recorded: %+v", rows)
	}
	if n := len(e.q.Messages()); n != 0 {
		t.Errorf("%d continuations sent on", n)
	}
	// The real continuation counts on.
	if err := e.p.Handle(ctx, real); err != nil {
		t.Fatal(err)
	}
	if got := e.latest("photos"); got.Items != 10 || got.Bytes != 50 {
		t.Errorf("recorded %+v, want 10 items of 50 bytes", got)
	}
}
