package stats_test

import (
	"context"
	"github.com/millfleet/mill/pkg/lease/memlease"
	"log/slog"
	"strings"
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

// TestOneTaskPerSpace: every listed space of every active account's store
// that the filter selects gets one STORAGE_STATS with the run ID; a space
// the history holds items for that is no longer listed gets one too (it
// will be measured as empty); one the history already has as empty, an
// excluded one and an inactive account's do not.
func TestOneTaskPerSpace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := map[string]*fsstore.Store{}
	mk := func(acct, id string, spaces ...string) stores.Store {
		st, err := fsstore.New(dir + "/" + acct + "-" + id)
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range spaces {
			if err := st.CreateSpace(ctx, sp); err != nil {
				t.Fatal(err)
			}
		}
		open[acct+"/"+id] = st
		return stores.Store{ID: id, Kind: storage.KindFS, Root: st.Root(), Primary: id == "1"}
	}
	reg := &stores.Registry{Accounts: []stores.Account{
		{ID: "acme", Status: stores.StatusActive, Stores: []stores.Store{mk("acme", "1", "photos", "docs", "x-tmp"), mk("acme", "2", "photos")}},
		{ID: "dormant", Status: stores.StatusInactive, Stores: []stores.Store{mk("dormant", "1", "old")}},
	}}
	clk := clock.NewFake(time.Date(2026, 5, 1, 2, 0, 0, 0, time.UTC))
	known := memspacestats.New(clk)
	for _, r := range []spacestats.Stats{
		{RunID: "r0", Account: "acme", StoreID: "1", SpaceID: "deleted", Items: 4, Bytes: 40},
		{RunID: "r0", Account: "acme", StoreID: "1", SpaceID: "emptied", Items: 0, Bytes: 0},
		{RunID: "r0", Account: "acme", StoreID: "1", SpaceID: "x-gone", Items: 1, Bytes: 1},
		{RunID: "r0", Account: "dormant", StoreID: "1", SpaceID: "old", Items: 1, Bytes: 1},
		{RunID: "r0", Account: "acme", StoreID: "9", SpaceID: "unregistered", Items: 1, Bytes: 1},
	} {
		if err := known.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	exc, err := bit.ParseFilter("exclude", strings.NewReader("/*/*/x-*\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := stats.New(stats.Config{Source: bit.Source{Registry: reg, Filter: bit.Filter{Exclude: exc}, Logger: slog.New(slog.DiscardHandler), Opener: openerFunc(func(_ context.Context, a, s string) (storage.Provider, error) { return open[a+"/"+s], nil })}, Known: known})
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
	if err != nil || sum.Stopped != looping.StopDone {
		t.Fatal(sum, err)
	}
	var got []string
	for _, m := range q.Messages() {
		tk, err := task.Decode(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		s, err := task.StorageStatsFrom(tk)
		if err != nil {
			t.Fatal(err)
		}
		if s.RunID != "20260501T020000Z" || s.Marker != "" || s.Items != 0 {
			t.Errorf("task %+v", s)
		}
		got = append(got, s.Account+"/"+s.StoreID+"/"+s.SpaceID)
	}
	want := "acme/1/deleted acme/1/docs acme/1/photos acme/2/photos"
	if strings.Join(got, " ") != want {
		t.Errorf("STORAGE_STATS for %q, want %q", strings.Join(got, " "), want)
	}
	if _, err := stats.New(stats.Config{}); err == nil || !strings.Contains(err.Error(), "Known") {
		t.Errorf("New without dependencies: %v", err)
	}
}

type openerFunc func(ctx context.Context, account, store string) (storage.Provider, error)

func (f openerFunc) Open(ctx context.Context, account, store string) (storage.Provider, error) {
	return f(ctx, account, store)
}
