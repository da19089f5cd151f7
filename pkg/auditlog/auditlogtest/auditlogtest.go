// Package auditlogtest is the conformance suite every auditlog.Log
// implementation passes: Run(t, Harness{New: newFn})
// with newFn returning an empty log for each subtest.
package auditlogtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/task"
)

// Harness is the implementation under test, the one entry shape of Mill's
// conformance suites: New makes what one subtest runs on, the other
// fields (none yet) say where an implementation may differ.
type Harness struct {
	// New returns an empty log for one subtest (cleaning up with t.Cleanup).
	New func(t *testing.T) auditlog.Log
}

var t0 = time.Date(2024, 3, 5, 14, 7, 9, 123_000_000, time.UTC)

func size(n int64) *int64 { return &n }

func entry(content string, at time.Time, action task.Action, checksum string) auditlog.Entry {
	return auditlog.Entry{
		Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: content,
		Action: action, UserID: "bob", Time: at, Checksum: checksum, MimeType: "text/plain",
		Size: size(3), Properties: map[string]string{"creator": "bob"}, StoreType: "s3",
	}
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("auditlogtest: Harness.New is nil")
	}
	newLog := h.New
	t.Run("PutLatestRoundTrip", func(t *testing.T) { testRoundTrip(t, newLog(t)) })
	t.Run("RedeliveryStoredOnce", func(t *testing.T) { testRedelivery(t, newLog(t)) })
	t.Run("LatestOrder", func(t *testing.T) { testLatest(t, newLog(t)) })
	t.Run("LatestChecksum", func(t *testing.T) { testLatestChecksum(t, newLog(t)) })
	t.Run("SpaceHistoryPages", func(t *testing.T) { testHistory(t, newLog(t)) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, newLog(t)) })
	t.Run("TooLarge", func(t *testing.T) { testTooLarge(t, newLog(t)) })
	t.Run("Invalid", func(t *testing.T) { testInvalid(t, newLog(t)) })
	t.Run("BetweenAcrossSpaces", func(t *testing.T) { testBetween(t, newLog(t)) })
	t.Run("ItemHistoryNewestFirst", func(t *testing.T) { testItemHistory(t, newLog(t)) })
}

func put(t *testing.T, l auditlog.Log, e auditlog.Entry) bool {
	t.Helper()
	stored, err := l.Put(context.Background(), e)
	if err != nil {
		t.Fatalf("Put(%s %s): %v", e.ContentID, e.Action, err)
	}
	return stored
}

func same(a, b auditlog.Entry) error {
	ga, gb := fmt.Sprintf("%+v %v", a, deref(a.Size)), fmt.Sprintf("%+v %v", b, deref(b.Size))
	if a.Size != nil {
		ga = strings.Replace(ga, fmt.Sprint(a.Size), "", 1)
	}
	if b.Size != nil {
		gb = strings.Replace(gb, fmt.Sprint(b.Size), "", 1)
	}
	if ga != gb || !a.Time.Equal(b.Time) {
		return fmt.Errorf("got  %s\nwant %s", ga, gb)
	}
	return nil
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func testRoundTrip(t *testing.T, l auditlog.Log) {
	ctx := context.Background()
	// IDs with the key separators and unicode must survive.
	e := entry("dir/a#b%2F Ünï.txt", t0, task.ActionCopyContent, "0cc175b9c0f1b6a831c399e269772661")
	e.SpaceACLs = map[string]string{"acl-bob": "WRITE"}
	e.SourceSpaceID, e.SourceContentID, e.SourceStoreID = "other", "x/y", "2"
	if !put(t, l, e) {
		t.Fatal("first Put: stored = false")
	}
	got, err := l.Latest(ctx, "acme", "1", "photos", e.ContentID)
	if err != nil {
		t.Fatal(err)
	}
	if err := same(*got, e); err != nil {
		t.Fatal(err)
	}
	if got.Time.Location() != time.UTC {
		t.Errorf("Time location = %v, want UTC", got.Time.Location())
	}
	// A space-level entry is the item with an empty content ID.
	sp := auditlog.Entry{Account: "acme", StoreID: "1", SpaceID: "photos", Action: task.ActionCreateSpace, Time: t0}
	put(t, l, sp)
	got, err = l.Latest(ctx, "acme", "1", "photos", "")
	if err != nil || got.Action != task.ActionCreateSpace || got.Size != nil || got.Properties != nil {
		t.Fatalf("space-level Latest = %+v, %v", got, err)
	}
	if _, err := l.Latest(ctx, "acme", "1", "photos", "missing"); !errors.Is(err, auditlog.ErrNotFound) {
		t.Fatalf("Latest(missing) err = %v, want ErrNotFound", err)
	}
	// "dir/a" must not see entries of "dir/a#b…" or of another store.
	if _, err := l.Latest(ctx, "acme", "1", "photos", "dir/a"); !errors.Is(err, auditlog.ErrNotFound) {
		t.Fatalf("Latest(prefix) err = %v, want ErrNotFound", err)
	}
	if _, err := l.Latest(ctx, "acme", "2", "photos", e.ContentID); !errors.Is(err, auditlog.ErrNotFound) {
		t.Fatalf("Latest(other store) err = %v, want ErrNotFound", err)
	}
}

func testRedelivery(t *testing.T, l auditlog.Log) {
	e := entry("a", t0, task.ActionAddContent, "c1")
	if !put(t, l, e) {
		t.Fatal("first Put not stored")
	}
	// Sub-millisecond differences are the same event on the wire.
	again := e
	again.Time = e.Time.Add(400 * time.Microsecond)
	if put(t, l, again) {
		t.Fatal("redelivered Put stored again")
	}
	// Same item, time and action but a different event: both kept.
	other := entry("a", t0, task.ActionAddContent, "c2")
	if !put(t, l, other) {
		t.Fatal("different event in the same millisecond not stored")
	}
	ents, _, err := l.SpaceHistory(context.Background(), "acme", "1", "photos", "", 10)
	if err != nil || len(ents) != 2 {
		t.Fatalf("history = %d entries, %v; want 2", len(ents), err)
	}
}

func testLatest(t *testing.T, l auditlog.Log) {
	put(t, l, entry("a", t0.Add(time.Second), task.ActionAddContent, "new"))
	put(t, l, entry("a", t0, task.ActionAddContent, "old"))
	put(t, l, entry("a", t0.Add(-time.Hour), task.ActionDeleteContent, ""))
	got, err := l.Latest(context.Background(), "acme", "1", "photos", "a")
	if err != nil || got.Checksum != "new" {
		t.Fatalf("Latest = %+v, %v; want the newest (checksum new)", got, err)
	}
}

// testLatestChecksum: entries without a checksum (DuraStore's
// SET_CONTENT_PROPERTIES) are skipped, across more than one page of them;
// a DELETE_CONTENT speaks of the bytes; an item with no such entry is
// ErrNotFound.
func testLatestChecksum(t *testing.T, l auditlog.Log) {
	ctx := context.Background()
	put(t, l, entry("a", t0, task.ActionAddContent, "old"))
	put(t, l, entry("a", t0.Add(time.Second), task.ActionAddContent, "new"))
	for i := range 12 {
		put(t, l, entry("a", t0.Add(time.Duration(2+i)*time.Second), task.ActionSetContentProperties, ""))
	}
	got, err := l.LatestChecksum(ctx, "acme", "1", "photos", "a")
	if err != nil || got.Checksum != "new" || got.Action != task.ActionAddContent {
		t.Fatalf("LatestChecksum = %+v, %v; want the newest ADD_CONTENT (checksum new)", got, err)
	}
	if got, err := l.Latest(ctx, "acme", "1", "photos", "a"); err != nil || got.Action != task.ActionSetContentProperties {
		t.Fatalf("Latest = %+v, %v; want the newest entry (SET_CONTENT_PROPERTIES)", got, err)
	}
	put(t, l, entry("a", t0.Add(time.Minute), task.ActionDeleteContent, ""))
	put(t, l, entry("a", t0.Add(2*time.Minute), task.ActionSetContentProperties, ""))
	if got, err := l.LatestChecksum(ctx, "acme", "1", "photos", "a"); err != nil || got.Action != task.ActionDeleteContent {
		t.Fatalf("after a delete, LatestChecksum = %+v, %v; want the DELETE_CONTENT", got, err)
	}
	put(t, l, entry("b", t0, task.ActionSetContentProperties, ""))
	for _, id := range []string{"b", "none"} {
		if _, err := l.LatestChecksum(ctx, "acme", "1", "photos", id); !errors.Is(err, auditlog.ErrNotFound) {
			t.Fatalf("LatestChecksum(%s) err = %v, want ErrNotFound", id, err)
		}
	}
}

func testHistory(t *testing.T, l auditlog.Log) {
	ctx := context.Background()
	var want []string
	for i := range 7 {
		c := fmt.Sprintf("c%d", 6-i) // content order differs from time order
		put(t, l, entry(c, t0.Add(time.Duration(i)*time.Second), task.ActionAddContent, "x"))
		want = append(want, c)
	}
	// Noise in other spaces and stores.
	o := entry("c0", t0, task.ActionAddContent, "x")
	o.SpaceID = "photos2"
	put(t, l, o)
	o = entry("c0", t0, task.ActionAddContent, "x")
	o.StoreID = "2"
	put(t, l, o)

	var got []string
	tok := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("SpaceHistory does not end")
		}
		ents, next, err := l.SpaceHistory(ctx, "acme", "1", "photos", tok, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) > 3 {
			t.Fatalf("page of %d entries, limit 3", len(ents))
		}
		for _, e := range ents {
			got = append(got, e.ContentID)
		}
		if next == "" {
			break
		}
		tok = next
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("history = %v, want %v (time order)", got, want)
	}
	if _, _, err := l.SpaceHistory(ctx, "acme", "1", "photos", "not a token!", 3); !errors.Is(err, auditlog.ErrBadPageToken) {
		t.Fatalf("bad token err = %v, want ErrBadPageToken", err)
	}
}

func testDelete(t *testing.T, l auditlog.Log) {
	ctx := context.Background()
	a := entry("a", t0, task.ActionAddContent, "1")
	b := entry("a", t0.Add(time.Second), task.ActionSetContentProperties, "1")
	put(t, l, a)
	put(t, l, b)
	if err := l.Delete(ctx, b.Key(), entry("gone", t0, task.ActionAddContent, "").Key()); err != nil {
		t.Fatal(err)
	}
	got, err := l.Latest(ctx, "acme", "1", "photos", "a")
	if err != nil || got.Action != task.ActionAddContent {
		t.Fatalf("after Delete, Latest = %+v, %v; want the ADD_CONTENT entry", got, err)
	}
	if err := l.Delete(ctx, a.Key()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Latest(ctx, "acme", "1", "photos", "a"); !errors.Is(err, auditlog.ErrNotFound) {
		t.Fatalf("Latest after deleting all = %v, want ErrNotFound", err)
	}
	// Deleted, the same event can be stored again.
	if !put(t, l, a) {
		t.Fatal("Put after Delete not stored")
	}
}

func testTooLarge(t *testing.T, l auditlog.Log) {
	e := entry("big", t0, task.ActionAddContent, "x")
	e.Properties = map[string]string{"blob": strings.Repeat("x", auditlog.MaxItemSize)}
	stored, err := l.Put(context.Background(), e)
	if !errors.Is(err, auditlog.ErrTooLarge) || stored {
		t.Fatalf("Put(too large) = %v, %v; want ErrTooLarge", stored, err)
	}
	if _, err := l.Latest(context.Background(), "acme", "1", "photos", "big"); !errors.Is(err, auditlog.ErrNotFound) {
		t.Fatalf("too large entry was written: %v", err)
	}
	// Just under the limit is fine.
	e.Properties = map[string]string{"blob": strings.Repeat("x", auditlog.MaxItemSize-2048)}
	if !put(t, l, e) {
		t.Fatal("large entry under the limit not stored")
	}
}

func testInvalid(t *testing.T, l auditlog.Log) {
	for name, mut := range map[string]func(*auditlog.Entry){
		"no account": func(e *auditlog.Entry) { e.Account = "" },
		"no time":    func(e *auditlog.Entry) { e.Time = time.Time{} },
		"no action":  func(e *auditlog.Entry) { e.Action = "" },
	} {
		e := entry("a", t0, task.ActionAddContent, "x")
		mut(&e)
		if _, err := l.Put(context.Background(), e); !errors.Is(err, auditlog.ErrInvalid) {
			t.Errorf("%s: Put err = %v, want ErrInvalid", name, err)
		}
	}
}
