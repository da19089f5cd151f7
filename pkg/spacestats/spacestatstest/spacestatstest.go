// Package spacestatstest is the conformance suite every spacestats.Store
// passes: Run(t, Harness{New: newFn})
// with newFn returning an empty store for each subtest.
package spacestatstest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/spacestats"
)

// Harness is the implementation under test, the one entry shape of Mill's
// conformance suites: New makes what one subtest runs on, the other
// fields (none yet) say where an implementation may differ.
type Harness struct {
	// New returns an empty store for one subtest.
	New func(t *testing.T) spacestats.Store
}

var t0 = time.Date(2024, 3, 5, 14, 7, 9, 123_456_000, time.UTC)

func row(run, account, store, space string, items, bytes int64, at time.Time) spacestats.Stats {
	return spacestats.Stats{RunID: run, Account: account, StoreID: store, SpaceID: space, Items: items, Bytes: bytes,
		Started: at.Add(-time.Minute), Measured: at}
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("spacestatstest: Harness.New is nil")
	}
	newStore := h.New
	t.Run("PutUpsert", func(t *testing.T) { testUpsert(t, newStore(t)) })
	t.Run("Latest", func(t *testing.T) { testLatest(t, newStore(t)) })
	t.Run("History", func(t *testing.T) { testHistory(t, newStore(t)) })
	t.Run("Invalid", func(t *testing.T) { testInvalid(t, newStore(t)) })
	t.Run("ZeroTimes", func(t *testing.T) { testZeroTimes(t, newStore(t)) })
}

func put(t *testing.T, s spacestats.Store, rows ...spacestats.Stats) {
	t.Helper()
	for _, r := range rows {
		if err := s.Put(context.Background(), r); err != nil {
			t.Fatalf("Put %+v: %v", r, err)
		}
	}
}

func latest(t *testing.T, s spacestats.Store, f spacestats.Filter) []string {
	t.Helper()
	rows, err := s.Latest(context.Background(), f)
	if err != nil {
		t.Fatalf("Latest %+v: %v", f, err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%s %s/%s/%s %d %d", r.RunID, r.Account, r.StoreID, r.SpaceID, r.Items, r.Bytes)
	}
	return out
}

func same(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// testUpsert: a row put again with the same key replaces the first; times
// keep microseconds, in UTC.
func testUpsert(t *testing.T, s spacestats.Store) {
	r := row("run1", "acme", "1", "photos", 10, 1000, t0)
	put(t, s, r)
	r.Items, r.Bytes, r.Measured = 9, 900, t0.Add(time.Second)
	put(t, s, r)
	rows, err := s.Latest(context.Background(), spacestats.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Items != 9 || rows[0].Bytes != 900 {
		t.Fatalf("after a second Put of the same key: %+v", rows)
	}
	got := rows[0]
	if !got.Measured.Equal(t0.Add(time.Second)) || !got.Started.Equal(t0.Add(-time.Minute)) || got.Measured.Location() != time.UTC {
		t.Errorf("times: started %v measured %v", got.Started, got.Measured)
	}
	hist, err := s.History(context.Background(), spacestats.Filter{}, time.Time{}, 0)
	if err != nil || len(hist) != 1 || hist[0].Spaces != 1 || hist[0].Items != 9 {
		t.Fatalf("History after an upsert: %+v %v", hist, err)
	}
}

// testLatest: each space's latest measurement, in byte-wise order, filtered
// by account, store and space; a space measured empty stays listed with 0.
func testLatest(t *testing.T, s spacestats.Store) {
	put(t, s,
		row("r1", "acme", "1", "photos", 10, 100, t0),
		row("r2", "acme", "1", "photos", 12, 120, t0.Add(24*time.Hour)),
		row("r1", "acme", "1", "Docs", 3, 30, t0),
		row("r2", "acme", "1", "Docs", 0, 0, t0.Add(24*time.Hour)),
		row("r1", "acme", "2", "photos", 10, 100, t0),
		row("r1", "globex", "1", "media", 5, 50, t0),
		row("adhoc", "globex", "1", "media", 6, 60, t0.Add(time.Hour)),
	)
	same(t, "Latest all", latest(t, s, spacestats.Filter{}), []string{
		"r2 acme/1/Docs 0 0", "r2 acme/1/photos 12 120", "r1 acme/2/photos 10 100", "adhoc globex/1/media 6 60",
	})
	same(t, "Latest of acme", latest(t, s, spacestats.Filter{Account: "acme"}), []string{
		"r2 acme/1/Docs 0 0", "r2 acme/1/photos 12 120", "r1 acme/2/photos 10 100",
	})
	same(t, "Latest of acme/1", latest(t, s, spacestats.Filter{Account: "acme", StoreID: "1"}), []string{
		"r2 acme/1/Docs 0 0", "r2 acme/1/photos 12 120",
	})
	same(t, "Latest of photos", latest(t, s, spacestats.Filter{SpaceID: "photos"}), []string{
		"r2 acme/1/photos 12 120", "r1 acme/2/photos 10 100",
	})
	same(t, "Latest of nothing", latest(t, s, spacestats.Filter{Account: "nobody"}), []string{})
	// Same time: the greater run wins.
	put(t, s, row("r0", "acme", "2", "photos", 1, 1, t0))
	same(t, "Latest on a tie", latest(t, s, spacestats.Filter{Account: "acme", StoreID: "2"}), []string{"r1 acme/2/photos 10 100"})
	rows, err := s.Latest(context.Background(), spacestats.Filter{Account: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if items, bytes := spacestats.Sum(rows); items != 22 || bytes != 220 {
		t.Errorf("Sum of acme's latest: %d items %d bytes, want 22 and 220", items, bytes)
	}
}

// testHistory: totals per run of the filter's spaces, latest first; since
// and limit bound them.
func testHistory(t *testing.T, s spacestats.Store) {
	day := 24 * time.Hour
	put(t, s,
		row("d1", "acme", "1", "photos", 10, 100, t0),
		row("d1", "acme", "1", "docs", 3, 30, t0.Add(time.Minute)),
		row("d1", "acme", "2", "photos", 10, 100, t0.Add(2*time.Minute)),
		row("d2", "acme", "1", "photos", 12, 120, t0.Add(day)),
		row("d2", "acme", "1", "docs", 2, 20, t0.Add(day)),
		row("d3", "acme", "1", "photos", 15, 150, t0.Add(2*day)),
		row("d1", "globex", "1", "media", 5, 50, t0),
	)
	hist := func(f spacestats.Filter, since time.Time, limit int) []string {
		t.Helper()
		ts, err := s.History(context.Background(), f, since, limit)
		if err != nil {
			t.Fatalf("History: %v", err)
		}
		out := make([]string, len(ts))
		for i, x := range ts {
			out[i] = fmt.Sprintf("%s %d %d %d", x.RunID, x.Spaces, x.Items, x.Bytes)
		}
		return out
	}
	same(t, "History of acme", hist(spacestats.Filter{Account: "acme"}, time.Time{}, 0),
		[]string{"d3 1 15 150", "d2 2 14 140", "d1 3 23 230"})
	same(t, "History of acme/1", hist(spacestats.Filter{Account: "acme", StoreID: "1"}, time.Time{}, 0),
		[]string{"d3 1 15 150", "d2 2 14 140", "d1 2 13 130"})
	same(t, "History of acme/1/docs", hist(spacestats.Filter{Account: "acme", StoreID: "1", SpaceID: "docs"}, time.Time{}, 0),
		[]string{"d2 1 2 20", "d1 1 3 30"})
	same(t, "History of everything", hist(spacestats.Filter{}, time.Time{}, 0),
		[]string{"d3 1 15 150", "d2 2 14 140", "d1 4 28 280"})
	same(t, "History since day 2", hist(spacestats.Filter{Account: "acme"}, t0.Add(day), 0),
		[]string{"d3 1 15 150", "d2 2 14 140"})
	same(t, "History, limit 1", hist(spacestats.Filter{Account: "acme"}, time.Time{}, 1), []string{"d3 1 15 150"})
	ts, err := s.History(context.Background(), spacestats.Filter{Account: "acme"}, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := ts[len(ts)-1]
	if !last.Started.Equal(t0.Add(-time.Minute)) || !last.Measured.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("run d1 of acme: started %v measured %v, want the earliest start and the latest end", last.Started, last.Measured)
	}
}

func testInvalid(t *testing.T, s spacestats.Store) {
	for _, bad := range []spacestats.Stats{
		{Account: "a", StoreID: "1", SpaceID: "s"},
		{RunID: "r", StoreID: "1", SpaceID: "s"},
		{RunID: "r", Account: "a", SpaceID: "s"},
		{RunID: "r", Account: "a", StoreID: "1"},
		{RunID: "r", Account: "a", StoreID: "1", SpaceID: "s", Items: -1},
		{RunID: "r", Account: "a", StoreID: "1", SpaceID: "s", Bytes: -1},
	} {
		if err := s.Put(context.Background(), bad); !errors.Is(err, spacestats.ErrInvalid) {
			t.Errorf("Put %+v: %v, want ErrInvalid", bad, err)
		}
	}
	if rows := latest(t, s, spacestats.Filter{}); len(rows) != 0 {
		t.Errorf("invalid rows were written: %q", rows)
	}
}

// testZeroTimes: a zero Measured is now, a zero Started is Measured.
func testZeroTimes(t *testing.T, s spacestats.Store) {
	before := time.Now().Add(-time.Minute)
	put(t, s, spacestats.Stats{RunID: "r", Account: "a", StoreID: "1", SpaceID: "s", Items: 1, Bytes: 2})
	rows, err := s.Latest(context.Background(), spacestats.Filter{})
	if err != nil || len(rows) != 1 {
		t.Fatalf("Latest: %+v %v", rows, err)
	}
	if rows[0].Measured.Before(before) || rows[0].Measured.After(time.Now().Add(time.Minute)) || !rows[0].Started.Equal(rows[0].Measured) {
		t.Errorf("zero times stored as started %v measured %v", rows[0].Started, rows[0].Measured)
	}
}
