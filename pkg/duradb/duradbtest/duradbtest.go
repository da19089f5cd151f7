// Package duradbtest is the conformance suite of duradb.DB: memduradb and
// mysqlduradb both pass Run.
package duradbtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/duradb"
)

// Open returns an empty database for one test.
type Open func(t *testing.T) duradb.DB

// Run runs the suite.
func Run(t *testing.T, open Open) {
	t.Run("ManifestOrdering", func(t *testing.T) { testManifestOrdering(t, open(t)) })
	t.Run("DeleteSpace", func(t *testing.T) { testDeleteSpace(t, open(t)) })
	t.Run("SetMissing", func(t *testing.T) { testSetMissing(t, open(t)) })
	t.Run("BitReports", func(t *testing.T) { testBitReports(t, open(t)) })
	t.Run("SpaceStats", func(t *testing.T) { testSpaceStats(t, open(t)) })
	t.Run("Invalid", func(t *testing.T) { testInvalid(t, open(t)) })
}

// T0 is the suite's base time (with sub-millisecond digits the columns drop).
var T0 = time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)

func item(id, sum string, at time.Time) duradb.ManifestItem {
	return duradb.ManifestItem{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: id,
		Checksum: sum, Size: "42", MimeType: "image/png", Modified: at}
}

func manifest(t *testing.T, db duradb.DB, space string) map[string]duradb.ManifestItem {
	t.Helper()
	rows, err := db.Manifest(context.Background(), "acme", "1", space)
	if err != nil {
		t.Fatalf("Manifest: %v", err)
	}
	out := map[string]duradb.ManifestItem{}
	prev := ""
	for i, r := range rows {
		if i > 0 && r.ContentID <= prev {
			t.Errorf("Manifest not ordered by content ID: %q after %q", r.ContentID, prev)
		}
		prev = r.ContentID
		out[r.ContentID] = r
	}
	return out
}

func put(t *testing.T, db duradb.DB, m duradb.ManifestItem, want bool) {
	t.Helper()
	got, err := db.PutManifest(context.Background(), m)
	if err != nil {
		t.Fatalf("PutManifest %s: %v", m.ContentID, err)
	}
	if got != want {
		t.Errorf("PutManifest %s at %s: applied %v, want %v", m.ContentID, m.Modified, got, want)
	}
}

func testManifestOrdering(t *testing.T, db duradb.DB) {
	put(t, db, item("a.png", "aaa", T0), true)
	put(t, db, item("a.png", "old", T0.Add(-time.Second)), false) // older: nothing
	got := manifest(t, db, "photos")["a.png"]
	want := item("a.png", "aaa", duradb.Millis(T0))
	if got != want {
		t.Fatalf("row = %+v, want %+v", got, want)
	}
	same := item("a.png", "bbb", T0) // equal time: the later call wins
	same.MissingFromStorageProvider = true
	put(t, db, same, true)
	del := item("a.png", duradb.Unknown, T0.Add(time.Minute))
	del.Deleted, del.Size = true, duradb.UnknownSize
	put(t, db, del, true)
	put(t, db, item("a.png", "late", T0.Add(30*time.Second)), false) // an older ADD does not resurrect it
	got = manifest(t, db, "photos")["a.png"]
	want = del
	want.Modified = duradb.Millis(del.Modified)
	if got != want {
		t.Fatalf("after delete: row = %+v, want %+v", got, want)
	}
	put(t, db, item("b/ü é.txt", "ccc", T0), true)
	if n := len(manifest(t, db, "photos")); n != 2 {
		t.Fatalf("%d rows, want 2", n)
	}
}

func testDeleteSpace(t *testing.T, db duradb.DB) {
	ctx := context.Background()
	put(t, db, item("old", "1", T0), true)
	put(t, db, item("new", "2", T0.Add(time.Hour)), true)
	other := item("x", "3", T0)
	other.SpaceID = "other"
	put(t, db, other, true)
	n, err := db.DeleteSpace(ctx, "acme", "1", "photos", T0.Add(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("DeleteSpace = %d, %v; want 1 (the row not later than the delete)", n, err)
	}
	rows := manifest(t, db, "photos")
	if r := rows["old"]; !r.Deleted || !r.Modified.Equal(duradb.Millis(T0.Add(time.Minute))) {
		t.Errorf("old = %+v, want deleted at the delete's time", r)
	}
	if r := rows["new"]; r.Deleted {
		t.Errorf("a row later than the delete was deleted: %+v", r)
	}
	if r := manifest(t, db, "other")["x"]; r.Deleted {
		t.Errorf("another space's row was deleted: %+v", r)
	}
	if n, err := db.DeleteSpace(ctx, "acme", "1", "photos", T0.Add(time.Minute)); err != nil || n != 0 {
		t.Errorf("repeated DeleteSpace = %d, %v; want 0", n, err)
	}
}

func testSetMissing(t *testing.T, db duradb.DB) {
	ctx := context.Background()
	put(t, db, item("a", "1", T0), true)
	if ok, err := db.SetMissing(ctx, "acme", "1", "photos", "a", true); err != nil || !ok {
		t.Fatalf("SetMissing = %v, %v; want true", ok, err)
	}
	want := item("a", "1", duradb.Millis(T0))
	want.MissingFromStorageProvider = true
	if got := manifest(t, db, "photos")["a"]; got != want {
		t.Fatalf("row = %+v, want %+v (only the flag changed)", got, want)
	}
	if ok, err := db.SetMissing(ctx, "acme", "1", "photos", "none", true); err != nil || ok {
		t.Fatalf("SetMissing of no row = %v, %v; want false", ok, err)
	}
	if rows := manifest(t, db, "photos"); len(rows) != 1 {
		t.Fatalf("SetMissing created a row: %+v", rows)
	}
}

func testBitReports(t *testing.T, db duradb.DB) {
	ctx := context.Background()
	r := duradb.BitReport{Account: "acme", StoreID: "1", SpaceID: "photos", ReportSpaceID: "x-duracloud-admin",
		ReportContentID: "bit-integrity/photos/1/a.tsv", Result: duradb.JavaFailure, Completed: T0}
	for _, x := range []duradb.BitReport{r, func() duradb.BitReport { r.Result = duradb.JavaSuccess; return r }()} {
		if err := db.PutBitReport(ctx, x); err != nil {
			t.Fatalf("PutBitReport: %v", err)
		}
	}
	later := r
	later.ReportContentID, later.Completed, later.Result = "bit-integrity/photos/1/b.tsv", T0.Add(time.Hour), duradb.JavaFailure
	if err := db.PutBitReport(ctx, later); err != nil {
		t.Fatalf("PutBitReport: %v", err)
	}
	got, err := db.BitReports(ctx, "acme", "1", "photos")
	if err != nil {
		t.Fatal(err)
	}
	r.Result, r.Completed = duradb.JavaSuccess, duradb.Seconds(T0)
	later.Completed = duradb.Seconds(later.Completed)
	if len(got) != 2 || got[0] != later || got[1] != r {
		t.Fatalf("BitReports = %+v\nwant %+v, %+v (a repeated report replaces its row; latest first)", got, later, r)
	}
}

func testSpaceStats(t *testing.T, db duradb.DB) {
	ctx := context.Background()
	s := duradb.SpaceStats{Account: "acme", StoreID: "1", SpaceID: "photos", Bytes: 10, Objects: 1, Modified: T0}
	s2 := s
	s2.Bytes, s2.Objects, s2.Modified = 30, 3, T0.Add(24*time.Hour)
	for _, x := range []duradb.SpaceStats{s2, s, func() duradb.SpaceStats { s.Bytes = 20; return s }()} {
		if err := db.PutSpaceStats(ctx, x); err != nil {
			t.Fatalf("PutSpaceStats: %v", err)
		}
	}
	got, err := db.Stats(ctx, "acme", "1", "photos")
	if err != nil {
		t.Fatal(err)
	}
	s.Modified, s2.Modified = duradb.Seconds(s.Modified), duradb.Seconds(s2.Modified)
	if len(got) != 2 || got[0] != s || got[1] != s2 {
		t.Fatalf("Stats = %+v\nwant %+v, %+v (one row per time, oldest first)", got, s, s2)
	}
}

func testInvalid(t *testing.T, db duradb.DB) {
	ctx := context.Background()
	bad := item("", "x", T0)
	noTime := item("a", "x", time.Time{})
	for i, err := range []error{
		func() error { _, err := db.PutManifest(ctx, bad); return err }(),
		func() error { _, err := db.PutManifest(ctx, noTime); return err }(),
		db.PutBitReport(ctx, duradb.BitReport{Account: "acme", StoreID: "1", SpaceID: "photos",
			ReportSpaceID: "s", ReportContentID: "c", Result: "ERROR", Completed: T0}),
		db.PutSpaceStats(ctx, duradb.SpaceStats{Account: "acme", StoreID: "1", SpaceID: "photos", Bytes: -1, Modified: T0}),
	} {
		if !errors.Is(err, duradb.ErrInvalid) {
			t.Errorf("case %d: err = %v, want ErrInvalid", i, err)
		}
	}
	if rows := manifest(t, db, "photos"); len(rows) != 0 {
		t.Errorf("invalid rows written: %v", rows)
	}
	reps, _ := db.BitReports(ctx, "acme", "1", "photos")
	stats, _ := db.Stats(ctx, "acme", "1", "photos")
	if len(reps)+len(stats) != 0 {
		t.Errorf("invalid rows written: %v %v", reps, stats)
	}
	if err := db.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
}
