package duradb_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
	"github.com/millfleet/mill/pkg/duradb"
	"github.com/millfleet/mill/pkg/duradb/memduradb"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/spacestats/memspacestats"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/processors"
)

var (
	t0    = time.Date(2026, 5, 1, 12, 0, 0, 987654000, time.UTC)
	quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
	it    = contentindex.Item{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "a.png"}
)

// oneStore is an fs store holding a.png, opened for every account and store.
type oneStore struct{ *fsstore.Store }

func (o oneStore) Open(context.Context, string, string) (storage.Provider, error) {
	return o.Store, nil
}

const png = "png bytes"

func newStore(t *testing.T) oneStore {
	t.Helper()
	st, err := fsstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSpace(t.Context(), "photos"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(t.Context(), "photos", "a.png", strings.NewReader(png), storage.PutOptions{Size: int64(len(png)), MimeType: "image/png"}); err != nil {
		t.Fatal(err)
	}
	return oneStore{st}
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func rows(t *testing.T, db duradb.DB) []duradb.ManifestItem {
	t.Helper()
	r, err := db.Manifest(context.Background(), "acme", "1", "photos")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestManifestMirrorsTheIndex: each change of the content index becomes
// its manifest row: a live row with the values of the item in its store
// (never the values a call or a message gave), a tombstone as the index
// has it; an indexed item absent from its store gets no row.
func TestManifestMirrorsTheIndex(t *testing.T) {
	ctx := context.Background()
	db := memduradb.New()
	m := duradb.NewManifest(memcontentindex.New(), newStore(t), db, quiet)
	n := int64(42)
	if _, err := m.Upsert(ctx, contentindex.Entry{Item: it, Checksum: md5hex(png), Size: &n, MimeType: "text/forged", Modified: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Upsert(ctx, contentindex.Entry{Item: it, Properties: map[string]string{"k": "v"}, Modified: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	want := duradb.ManifestItem{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "a.png", Checksum: md5hex(png),
		Size: fmt.Sprint(len(png)), MimeType: "image/png", Modified: duradb.Millis(t0.Add(time.Second))}
	if got := rows(t, db); len(got) != 1 || got[0] != want {
		t.Fatalf("manifest = %+v, want %+v", got, want)
	}
	if err := m.SetMissing(ctx, it, "20260501T000000Z"); err != nil {
		t.Fatal(err)
	}
	if err := m.SetChecksum(ctx, it, "bbb"); err != nil {
		t.Fatal(err)
	}
	want.MissingFromStorageProvider = true
	if got := rows(t, db); got[0] != want {
		t.Fatalf("after SetMissing, SetChecksum: %+v, want %+v (the store's checksum)", got[0], want)
	}
	if _, err := m.MarkDeleted(ctx, it, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, db); !got[0].Deleted || got[0].MissingFromStorageProvider {
		t.Fatalf("after MarkDeleted: %+v", got[0])
	}
	ghost := it
	ghost.ContentID = "ghost"
	if _, err := m.Upsert(ctx, contentindex.Entry{Item: ghost, Checksum: "0123456789abcdef0123456789abcdef", Modified: t0}); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, db); len(got) != 1 {
		t.Fatalf("an item not in its store has a manifest row: %+v", got)
	}
	if _, err := m.Upsert(ctx, contentindex.Entry{Item: it, Modified: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.MarkSpaceDeleted(ctx, "acme", "1", "photos", t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, db)[0]; !got.Deleted || !got.Modified.Equal(duradb.Millis(t0.Add(2*time.Hour))) {
		t.Fatalf("after MarkSpaceDeleted: %+v", got)
	}
}

// TestManifestOutage: the database's outage fails the call as an outage of
// "mysql", after the index has the change; the repeated call (applied
// false: the index has it) still writes the row.
func TestManifestOutage(t *testing.T) {
	ctx := context.Background()
	db := memduradb.New()
	m := duradb.NewManifest(memcontentindex.New(), newStore(t), db, quiet)
	db.SetDown(errors.New("connection refused"))
	e := contentindex.Entry{Item: it, Checksum: "aaa", Modified: t0}
	_, err := m.Upsert(ctx, e)
	if dep, ok := processors.IsUnavailable(err); !ok || dep != duradb.DependencyMySQL {
		t.Fatalf("Upsert during the outage: %v; want an outage of %s", err, duradb.DependencyMySQL)
	}
	db.SetDown(nil)
	applied, err := m.Upsert(ctx, e)
	if err != nil || applied {
		t.Fatalf("repeated Upsert = %v, %v; want not applied (the index has it), no error", applied, err)
	}
	if got := rows(t, db); len(got) != 1 || got[0].Checksum != md5hex(png) {
		t.Fatalf("manifest after the repeat: %+v", got)
	}
}

// refusing refuses every manifest row as DuraCloud's schema would one it
// cannot hold.
type refusing struct{ *memduradb.DB }

func (refusing) PutManifest(context.Context, duradb.ManifestItem) (bool, error) {
	return false, duradb.ErrUnrepresentable
}

// TestManifestUnrepresentableSkipped: a row the schema cannot hold does
// not fail the index's write (duplication goes on).
func TestManifestUnrepresentableSkipped(t *testing.T) {
	m := duradb.NewManifest(memcontentindex.New(), newStore(t), refusing{memduradb.New()}, quiet)
	if _, err := m.Upsert(context.Background(), contentindex.Entry{Item: it, Modified: t0}); err != nil {
		t.Fatalf("Upsert: %v", err)
	}
}

// TestStatsMirror: a row Mill's store accepted becomes a space_stats row
// at its measurement time (now, when unset); one it refuses does not.
func TestStatsMirror(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	db := memduradb.New()
	s := duradb.NewStats(memspacestats.New(clk), db, clk, quiet)
	if err := s.Put(ctx, spacestats.Stats{RunID: "r1", Account: "acme", StoreID: "1", SpaceID: "photos", Items: 3, Bytes: 300}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, spacestats.Stats{RunID: "r1", Account: "acme", StoreID: "1", SpaceID: "photos", Items: -1}); !errors.Is(err, spacestats.ErrInvalid) {
		t.Fatalf("invalid row: %v", err)
	}
	got, err := db.Stats(ctx, "acme", "1", "photos")
	want := duradb.SpaceStats{Account: "acme", StoreID: "1", SpaceID: "photos", Bytes: 300, Objects: 3, Modified: duradb.Seconds(t0)}
	if err != nil || len(got) != 1 || got[0] != want {
		t.Fatalf("space_stats = %+v, %v; want %+v", got, err, want)
	}
	latest, _ := s.Latest(ctx, spacestats.Filter{})
	if len(latest) != 1 || !latest[0].Measured.Equal(spacestats.Truncate(t0)) {
		t.Fatalf("Mill's row: %+v (its Measured must be the mirrored time)", latest)
	}
}

// TestReportsPublished: results map to DuraCloud's two; EMPTY writes
// nothing; the row names the admin copy, else the reports store.
func TestReportsPublished(t *testing.T) {
	ctx := context.Background()
	db := memduradb.New()
	r := duradb.NewReports(db, quiet)
	rep := bitlog.Report{RunID: "20260501T000000Z", Account: "acme", StoreID: "1", SpaceID: "photos",
		Result: bitlog.ResultError, Location: "s3://reports/bit-integrity/acme/1/photos/x.tsv", CreatedAt: t0}
	if err := r.ReportPublished(ctx, rep, "", ""); err != nil {
		t.Fatal(err)
	}
	rep.Result, rep.CreatedAt = bitlog.ResultSuccess, t0.Add(time.Hour)
	if err := r.ReportPublished(ctx, rep, "x-duracloud-admin", "bit-integrity/photos/1/r.tsv"); err != nil {
		t.Fatal(err)
	}
	rep.Result, rep.CreatedAt = bitlog.ResultEmpty, t0.Add(2*time.Hour)
	if err := r.ReportPublished(ctx, rep, "x-duracloud-admin", "bit-integrity/photos/1/e.tsv"); err != nil {
		t.Fatal(err)
	}
	got, err := db.BitReports(ctx, "acme", "1", "photos")
	if err != nil {
		t.Fatal(err)
	}
	want := []duradb.BitReport{
		{Account: "acme", StoreID: "1", SpaceID: "photos", ReportSpaceID: "x-duracloud-admin",
			ReportContentID: "bit-integrity/photos/1/r.tsv", Result: duradb.JavaSuccess, Completed: duradb.Seconds(t0.Add(time.Hour))},
		{Account: "acme", StoreID: "1", SpaceID: "photos", ReportSpaceID: "reports",
			ReportContentID: "bit-integrity/acme/1/photos/x.tsv", Result: duradb.JavaFailure, Completed: duradb.Seconds(t0)},
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("bit_report = %+v\nwant %+v", got, want)
	}
}

// TestManifestMissing: an item the bit report found missing from its store
// flags DuraCloud's row of it, and nothing else; an indexed item never in
// its store, flagged the same, gets no row.
func TestManifestMissing(t *testing.T) {
	ctx := context.Background()
	db := memduradb.New()
	st := newStore(t)
	m := duradb.NewManifest(memcontentindex.New(), st, db, quiet)
	if _, err := m.Upsert(ctx, contentindex.Entry{Item: it, Modified: t0}); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "photos", "a.png"); err != nil {
		t.Fatal(err)
	}
	if err := m.SetMissing(ctx, it, "20260501T000000Z"); err != nil {
		t.Fatal(err)
	}
	ghost := it
	ghost.ContentID = "ghost"
	if _, err := m.Upsert(ctx, contentindex.Entry{Item: ghost, Checksum: "0123456789abcdef0123456789abcdef", Modified: t0}); err != nil {
		t.Fatal(err)
	}
	if err := m.SetMissing(ctx, ghost, "20260501T000000Z"); err != nil {
		t.Fatal(err)
	}
	got := rows(t, db)
	if len(got) != 1 || !got[0].MissingFromStorageProvider || got[0].Checksum != md5hex(png) || got[0].Deleted {
		t.Fatalf("manifest = %+v, want a.png's row flagged missing, nothing for ghost", got)
	}
}
