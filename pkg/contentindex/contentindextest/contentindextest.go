// Package contentindextest is the conformance suite every
// contentindex.Index implementation passes: Run(t, Harness{New: newFn})
// with newFn returning an empty index for each subtest.
package contentindextest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	ci "github.com/millfleet/mill/pkg/contentindex"
)

// Harness is the implementation under test, the one entry shape of Mill's
// conformance suites: New makes what one subtest runs on, the other
// fields (none yet) say where an implementation may differ.
type Harness struct {
	// New returns an empty index for one subtest.
	New func(t *testing.T) ci.Index
}

var t0 = time.Date(2024, 3, 5, 14, 7, 9, 123_456_000, time.UTC)

func size(n int64) *int64 { return &n }

func item(content string) ci.Item {
	return ci.Item{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: content}
}

func entry(content string, at time.Time, checksum string) ci.Entry {
	return ci.Entry{Item: item(content), Checksum: checksum, Size: size(3), MimeType: "text/plain",
		Properties: map[string]string{"creator": "bob", "ünï": "cødé"}, Modified: at}
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("contentindextest: Harness.New is nil")
	}
	newIndex := h.New
	t.Run("UpsertGet", func(t *testing.T) { testUpsertGet(t, newIndex(t)) })
	t.Run("OlderEventIgnored", func(t *testing.T) { testOlder(t, newIndex(t)) })
	t.Run("PartialUpsertKeeps", func(t *testing.T) { testPartial(t, newIndex(t)) })
	t.Run("MarkDeleted", func(t *testing.T) { testMarkDeleted(t, newIndex(t)) })
	t.Run("MarkSpaceDeleted", func(t *testing.T) { testMarkSpaceDeleted(t, newIndex(t)) })
	t.Run("ListKeyset", func(t *testing.T) { testList(t, newIndex(t)) })
	t.Run("SetChecksum", func(t *testing.T) { testSetChecksum(t, newIndex(t)) })
	t.Run("SetMissing", func(t *testing.T) { testSetMissing(t, newIndex(t)) })
	t.Run("PurgeTombstones", func(t *testing.T) { testPurge(t, newIndex(t)) })
	t.Run("Invalid", func(t *testing.T) { testInvalid(t, newIndex(t)) })
	t.Run("Search", func(t *testing.T) { testSearch(t, newIndex(t)) })
}

func upsert(t *testing.T, x ci.Index, e ci.Entry) bool {
	t.Helper()
	ok, err := x.Upsert(context.Background(), e)
	if err != nil {
		t.Fatalf("Upsert(%s): %v", e.Item, err)
	}
	return ok
}

func get(t *testing.T, x ci.Index, i ci.Item) *ci.Entry {
	t.Helper()
	e, err := x.Get(context.Background(), i)
	if err != nil {
		t.Fatalf("Get(%s): %v", i, err)
	}
	return e
}

func describe(e ci.Entry) string {
	s := "nil"
	if e.Size != nil {
		s = fmt.Sprint(*e.Size)
	}
	return fmt.Sprintf("%s checksum=%q size=%s mime=%q props=%v deleted=%v modified=%s",
		e.Item, e.Checksum, s, e.MimeType, e.Properties, e.Deleted, e.Modified.UTC().Format(time.RFC3339Nano))
}

func testUpsertGet(t *testing.T, x ci.Index) {
	e := entry("dir/Ünï 文件.txt", t0, "c1")
	if !upsert(t, x, e) {
		t.Fatal("first Upsert not applied")
	}
	if got, want := describe(*get(t, x, e.Item)), describe(e); got != want {
		t.Fatalf("Get = %s\nwant  %s", got, want)
	}
	if upsert(t, x, e) {
		t.Fatal("redelivered Upsert reported applied; want no change")
	}
	if _, err := x.Get(context.Background(), item("missing")); !errors.Is(err, ci.ErrNotFound) {
		t.Fatalf("Get(missing) = %v, want ErrNotFound", err)
	}
	// Nil properties on a new row read back as an empty map.
	n := entry("noprops", t0, "c")
	n.Properties = nil
	upsert(t, x, n)
	if p := get(t, x, n.Item).Properties; p == nil || len(p) != 0 {
		t.Fatalf("Properties = %#v, want empty non-nil", p)
	}
}

func testOlder(t *testing.T, x ci.Index) {
	newer := entry("a", t0.Add(time.Second), "new")
	upsert(t, x, newer)
	if upsert(t, x, entry("a", t0, "old")) {
		t.Fatal("older Upsert applied")
	}
	if got := get(t, x, newer.Item); got.Checksum != "new" || !got.Modified.Equal(newer.Modified) {
		t.Fatalf("after older event: %s", describe(*got))
	}
	// An older delete is ignored as well, and a newer write wins over a delete.
	if ok, err := x.MarkDeleted(context.Background(), newer.Item, t0); err != nil || ok {
		t.Fatalf("older MarkDeleted = %v, %v; want not applied", ok, err)
	}
	if get(t, x, newer.Item).Deleted {
		t.Fatal("older delete marked the row deleted")
	}
	// Same time, different content: the later arrival wins.
	if !upsert(t, x, entry("a", t0.Add(time.Second), "tie")) {
		t.Fatal("equal-time different Upsert not applied")
	}
}

func testPartial(t *testing.T, x ci.Index) {
	upsert(t, x, entry("a", t0, "c1"))
	p := ci.Entry{Item: item("a"), Properties: map[string]string{"k": "v"}, Modified: t0.Add(time.Second)}
	if !upsert(t, x, p) {
		t.Fatal("properties Upsert not applied")
	}
	got := get(t, x, item("a"))
	if got.Checksum != "c1" || got.Size == nil || *got.Size != 3 || got.MimeType != "text/plain" || !maps.Equal(got.Properties, p.Properties) {
		t.Fatalf("after partial upsert: %s", describe(*got))
	}
	// Nil properties keep them; an empty map clears them.
	upsert(t, x, ci.Entry{Item: item("a"), Checksum: "c2", Modified: t0.Add(2 * time.Second)})
	if got := get(t, x, item("a")); got.Checksum != "c2" || got.Properties["k"] != "v" {
		t.Fatalf("nil properties did not keep them: %s", describe(*got))
	}
	upsert(t, x, ci.Entry{Item: item("a"), Properties: map[string]string{}, Modified: t0.Add(3 * time.Second)})
	if got := get(t, x, item("a")); len(got.Properties) != 0 {
		t.Fatalf("empty properties did not clear them: %s", describe(*got))
	}
}

func testMarkDeleted(t *testing.T, x ci.Index) {
	ctx := context.Background()
	upsert(t, x, entry("a", t0, "c1"))
	ok, err := x.MarkDeleted(ctx, item("a"), t0.Add(time.Second))
	if err != nil || !ok {
		t.Fatalf("MarkDeleted = %v, %v", ok, err)
	}
	got := get(t, x, item("a"))
	if !got.Deleted || got.Checksum != "c1" || !got.Modified.Equal(t0.Add(time.Second)) {
		t.Fatalf("after MarkDeleted: %s", describe(*got))
	}
	if ok, _ := x.MarkDeleted(ctx, item("a"), t0.Add(time.Second)); ok {
		t.Fatal("redelivered MarkDeleted applied")
	}
	// A late, older ADD cannot resurrect it.
	if upsert(t, x, entry("a", t0.Add(500*time.Millisecond), "c0")) || !get(t, x, item("a")).Deleted {
		t.Fatal("older ADD resurrected a deleted item")
	}
	// A newer delete moves the tombstone forward, so an ADD between the two deletes stays ignored.
	if ok, _ := x.MarkDeleted(ctx, item("a"), t0.Add(3*time.Second)); !ok {
		t.Fatal("newer MarkDeleted of a tombstone not applied")
	}
	if upsert(t, x, entry("a", t0.Add(2*time.Second), "c2")) {
		t.Fatal("ADD older than the latest delete applied")
	}
	// A delete of an unknown item leaves a tombstone.
	if ok, err := x.MarkDeleted(ctx, item("never"), t0); err != nil || !ok {
		t.Fatalf("MarkDeleted(unknown) = %v, %v", ok, err)
	}
	if !get(t, x, item("never")).Deleted || upsert(t, x, entry("never", t0.Add(-time.Second), "x")) {
		t.Fatal("tombstone of an unknown item missing or overridden by an older ADD")
	}
	// And a newer ADD brings the item back.
	if !upsert(t, x, entry("a", t0.Add(4*time.Second), "c4")) || get(t, x, item("a")).Deleted {
		t.Fatal("newer ADD after delete did not make the item live")
	}
}

func testMarkSpaceDeleted(t *testing.T, x ci.Index) {
	ctx := context.Background()
	for _, c := range []string{"a", "b", "c"} {
		upsert(t, x, entry(c, t0, "x"))
	}
	upsert(t, x, entry("later", t0.Add(time.Hour), "x"))
	other := entry("a", t0, "x")
	other.SpaceID = "other"
	upsert(t, x, other)
	n, err := x.MarkSpaceDeleted(ctx, "acme", "1", "photos", t0.Add(time.Minute))
	if err != nil || n != 3 {
		t.Fatalf("MarkSpaceDeleted = %d, %v; want 3", n, err)
	}
	for _, c := range []string{"a", "b", "c"} {
		if !get(t, x, item(c)).Deleted {
			t.Errorf("%s not deleted", c)
		}
	}
	if get(t, x, item("later")).Deleted || get(t, x, other.Item).Deleted {
		t.Fatal("a newer row or another space's row was deleted")
	}
	if n, _ := x.MarkSpaceDeleted(ctx, "acme", "1", "photos", t0.Add(time.Minute)); n != 0 {
		t.Fatalf("redelivered MarkSpaceDeleted marked %d rows", n)
	}
}

func testList(t *testing.T, x ci.Index) {
	ctx := context.Background()
	ids := []string{"B", "a", "a/b", "a.c", "a/b/c", "b", "é", "~", "Z 1"}
	for _, id := range ids {
		upsert(t, x, entry(id, t0, "x"))
	}
	if _, err := x.MarkDeleted(ctx, item("b"), t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	want := []string{"B", "Z 1", "a", "a.c", "a/b", "a/b/c", "~", "é"} // byte-wise, live only
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		page, more, err := x.List(ctx, "acme", "1", "photos", after, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 3 || pages > 5 {
			t.Fatalf("page of %d (limit 3), page %d", len(page), pages)
		}
		for _, e := range page {
			got = append(got, e.ContentID)
			if e.Properties == nil {
				t.Fatal("List returned nil Properties")
			}
		}
		if !more {
			break
		}
		after = page[len(page)-1].ContentID
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("List = %q, want %q", got, want)
	}
	if page, more, err := x.List(ctx, "acme", "1", "nospace", "", 0); err != nil || len(page) != 0 || more {
		t.Fatalf("List(empty space) = %v, %v, %v", page, more, err)
	}
}

func testSetChecksum(t *testing.T, x ci.Index) {
	ctx := context.Background()
	upsert(t, x, entry("a", t0, "c1"))
	if err := x.SetChecksum(ctx, item("a"), "fixed"); err != nil {
		t.Fatal(err)
	}
	got := get(t, x, item("a"))
	if got.Checksum != "fixed" || !got.Modified.Equal(t0) {
		t.Fatalf("after SetChecksum: %s", describe(*got))
	}
	if err := x.SetChecksum(ctx, item("missing"), "x"); !errors.Is(err, ci.ErrNotFound) {
		t.Fatalf("SetChecksum(missing) = %v, want ErrNotFound", err)
	}
}

func testInvalid(t *testing.T, x ci.Index) {
	ctx := context.Background()
	e := entry("a", time.Time{}, "x")
	if _, err := x.Upsert(ctx, e); !errors.Is(err, ci.ErrInvalid) {
		t.Errorf("Upsert without time = %v, want ErrInvalid", err)
	}
	e = entry("", t0, "x")
	if _, err := x.Upsert(ctx, e); !errors.Is(err, ci.ErrInvalid) {
		t.Errorf("Upsert without content ID = %v, want ErrInvalid", err)
	}
	if _, err := x.MarkDeleted(ctx, item(""), t0); !errors.Is(err, ci.ErrInvalid) {
		t.Errorf("MarkDeleted without content ID = %v, want ErrInvalid", err)
	}
}

// testSetMissing: the mark is set and cleared in place; a write or a
// delete that changes the row clears it; a redelivered write keeps it.
func testSetMissing(t *testing.T, x ci.Index) {
	ctx := context.Background()
	if err := x.SetMissing(ctx, item("none"), "r1"); !errors.Is(err, ci.ErrNotFound) {
		t.Fatalf("SetMissing on no row: %v, want ErrNotFound", err)
	}
	e := entry("a", t0, "x")
	upsert(t, x, e)
	if err := x.SetMissing(ctx, e.Item, "r1"); err != nil {
		t.Fatal(err)
	}
	if g := get(t, x, e.Item); g.MissingRun != "r1" || g.Checksum != "x" || !g.Modified.Equal(t0) {
		t.Fatalf("after SetMissing: %+v", g)
	}
	if es, _, err := x.List(ctx, "acme", "1", "photos", "", 10); err != nil || len(es) != 1 || es[0].MissingRun != "r1" {
		t.Fatalf("List after SetMissing: %+v %v", es, err)
	}
	upsert(t, x, e) // a redelivery changes nothing
	if g := get(t, x, e.Item); g.MissingRun != "r1" {
		t.Fatalf("a redelivered write cleared the mark: %+v", g)
	}
	if err := x.SetMissing(ctx, e.Item, ""); err != nil || get(t, x, e.Item).MissingRun != "" {
		t.Fatalf("clearing: %v %+v", err, get(t, x, e.Item))
	}
	_ = x.SetMissing(ctx, e.Item, "r2")
	upsert(t, x, entry("a", t0.Add(time.Second), "y"))
	if g := get(t, x, e.Item); g.MissingRun != "" {
		t.Fatalf("a new write kept the mark: %+v", g)
	}
	_ = x.SetMissing(ctx, e.Item, "r3")
	if _, err := x.MarkDeleted(ctx, e.Item, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if g := get(t, x, e.Item); g.MissingRun != "" {
		t.Fatalf("a delete kept the mark: %+v", g)
	}
}

// testPurge: tombstones older than the cutoff go in batches; newer ones
// and live rows stay.
func testPurge(t *testing.T, x ci.Index) {
	p, ok := x.(ci.Pruner)
	if !ok {
		t.Skip("the index does not implement contentindex.Pruner")
	}
	ctx := context.Background()
	for i := range 5 {
		id := fmt.Sprintf("old%d", i)
		upsert(t, x, entry(id, t0, "x"))
		if _, err := x.MarkDeleted(ctx, item(id), t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	upsert(t, x, entry("live", t0, "x"))
	if _, err := x.MarkDeleted(ctx, item("recent"), t0.Add(48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	cutoff := t0.Add(24 * time.Hour)
	if n, err := p.Tombstones(ctx, cutoff); err != nil || n != 5 {
		t.Fatalf("Tombstones = %d, %v; want 5", n, err)
	}
	var total int64
	for range 10 {
		n, err := p.PurgeTombstones(ctx, cutoff, 2)
		if err != nil || n > 2 {
			t.Fatalf("PurgeTombstones = %d, %v (batch 2)", n, err)
		}
		if n == 0 {
			break
		}
		total += n
	}
	if total != 5 {
		t.Fatalf("purged %d tombstones, want 5", total)
	}
	for _, id := range []string{"live", "recent"} {
		get(t, x, item(id))
	}
	if _, err := x.Get(ctx, item("old0")); !errors.Is(err, ci.ErrNotFound) {
		t.Fatalf("purged tombstone still there: %v", err)
	}
}

// testSearch: a prefix search over the stores of one space, tombstones
// included, paged by (content ID, store ID); other accounts and spaces,
// and IDs that only share a prefix byte-wise-after, never show.
func testSearch(t *testing.T, x ci.Index) {
	s, ok := x.(ci.Searcher)
	if !ok {
		t.Fatalf("%T does not implement contentindex.Searcher", x)
	}
	ctx := context.Background()
	put := func(account, store, space, id string) {
		e := entry(id, t0, "0cc175b9c0f1b6a831c399e269772661")
		e.Item = ci.Item{Account: account, StoreID: store, SpaceID: space, ContentID: id}
		upsert(t, x, e)
	}
	for _, st := range []string{"1", "2", "3"} {
		put("acme", st, "photos", "2026/a.jpg")
		put("acme", st, "photos", "2026/b.jpg")
	}
	put("acme", "1", "photos", "2026/é.jpg")
	put("acme", "1", "photos", "2026")       // shorter than the prefix
	put("acme", "1", "photos", "2027/a.jpg") // after the prefix
	put("acme", "1", "photos", "2025/z.jpg") // before it
	put("acme", "1", "docs", "2026/a.jpg")   // another space
	put("globex", "1", "photos", "2026/a.jpg")
	if _, err := x.MarkDeleted(ctx, ci.Item{Account: "acme", StoreID: "2", SpaceID: "photos", ContentID: "2026/b.jpg"}, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	var got []string
	q := ci.Query{Account: "acme", SpaceID: "photos", Prefix: "2026/", Limit: 3}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("Search does not end")
		}
		es, more, err := s.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.Account != "acme" || e.SpaceID != "photos" || e.Checksum == "" {
				t.Errorf("Search row %s", describe(e))
			}
			got = append(got, fmt.Sprintf("%s@%s:%v", e.ContentID, e.StoreID, e.Deleted))
		}
		if !more {
			break
		}
		if len(es) != 3 {
			t.Fatalf("a page of %d rows with more to come, want 3", len(es))
		}
		q.After = ci.CursorOf(es[len(es)-1])
	}
	want := fmt.Sprint([]string{"2026/a.jpg@1:false", "2026/a.jpg@2:false", "2026/a.jpg@3:false", "2026/b.jpg@1:false",
		"2026/b.jpg@2:true", "2026/b.jpg@3:false", "2026/é.jpg@1:false"})
	if fmt.Sprint(got) != want {
		t.Errorf("Search 2026/ paged by 3:\n got %v\nwant %s", got, want)
	}
	// No prefix: the whole space in order; a prefix of the last code point.
	all, _, err := s.Search(ctx, ci.Query{Account: "acme", SpaceID: "photos"})
	if err != nil || len(all) != 10 || all[0].ContentID != "2025/z.jpg" || all[9].ContentID != "2027/a.jpg" {
		t.Errorf("Search without a prefix: %d rows, %v", len(all), err)
	}
	if es, _, err := s.Search(ctx, ci.Query{Account: "acme", SpaceID: "photos", Prefix: "2026/é"}); err != nil || len(es) != 1 {
		t.Errorf("Search 2026/é: %d rows, %v", len(es), err)
	}
	if es, _, err := s.Search(ctx, ci.Query{Account: "acme", SpaceID: "photos", Prefix: "nothing"}); err != nil || len(es) != 0 {
		t.Errorf("Search nothing: %d rows, %v", len(es), err)
	}
	for _, bad := range []ci.Query{{SpaceID: "photos"}, {Account: "acme"}, {Account: "acme", SpaceID: "photos", Prefix: "\xff"}} {
		if _, _, err := s.Search(ctx, bad); !errors.Is(err, ci.ErrInvalid) {
			t.Errorf("Search(%+v): %v, want ErrInvalid", bad, err)
		}
	}
}
