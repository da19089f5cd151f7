package stats_test

import (
	"context"
	"errors"
	"github.com/millfleet/mill/pkg/lease/memlease"
	"log/slog"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/spacestats/memspacestats"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/bit"
	"github.com/millfleet/mill/producers/looping"
	"github.com/millfleet/mill/producers/stats"
)

// TestBrokenStoreNotMeasuredEmpty: a store that cannot be opened is a
// failed morsel; the other store is measured, and the broken store's
// spaces of the history are not measured as deleted (that would record
// them empty, which Mill did not observe).
func TestBrokenStoreNotMeasuredEmpty(t *testing.T) {
	ctx := context.Background()
	good, err := fsstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := good.CreateSpace(ctx, "docs"); err != nil {
		t.Fatal(err)
	}
	reg := &stores.Registry{Accounts: []stores.Account{{ID: "acme", Status: stores.StatusActive, Stores: []stores.Store{
		{ID: "1", Kind: storage.KindFS, Root: good.Root(), Primary: true}, {ID: "2", Kind: storage.KindS3, Bucket: "gone"}}}}}
	clk := clock.NewFake(time.Date(2026, 5, 1, 2, 0, 0, 0, time.UTC))
	known := memspacestats.New(clk)
	if err := known.Put(ctx, spacestats.Stats{RunID: "r0", Account: "acme", StoreID: "2", SpaceID: "photos", Items: 7, Bytes: 70}); err != nil {
		t.Fatal(err)
	}
	p, err := stats.New(stats.Config{Source: bit.Source{Registry: reg, Logger: slog.New(slog.DiscardHandler), Opener: openerFunc(func(_ context.Context, a, s string) (storage.Provider, error) {
		if s == "2" {
			return nil, errors.New("NoSuchBucket: gone")
		}
		return good, nil
	})}, Known: known})
	if err != nil {
		t.Fatal(err)
	}
	q := memqueue.New("mill-bit", memqueue.Config{Clock: clk})
	l, err := looping.New(looping.Config{Kind: stats.Kind, Producer: p, Queue: q, State: looping.NewMemoryStore(),
		Lease: memlease.New(clk), Clock: clk, Logger: slog.New(slog.DiscardHandler), Progress: looping.ProgressOff})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := l.Run(ctx)
	if err != nil || sum.Stopped != looping.StopDone || len(sum.Failed) != 1 || sum.Failed[0].ID != "acme/2/(store)" {
		t.Fatalf("%v %v (failed %+v)", sum, err, sum.Failed)
	}
	var got []string
	for _, m := range q.Messages() {
		tk, err := task.Decode(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tk.Get(task.KeyStoreID)+"/"+tk.Get(task.KeySpaceID))
	}
	if len(got) != 1 || got[0] != "1/docs" {
		t.Errorf("measured %v, want only store 1's docs", got)
	}
}
