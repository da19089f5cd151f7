package bitlogtest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
)

// verdicts reads every verdict of a space in pages of limit, checking that
// more is true exactly when a page is followed by another that is not
// empty.
func verdicts(t *testing.T, l bitlog.Log, account, store, space string, limit int) []bitlog.Verdict {
	t.Helper()
	var all []bitlog.Verdict
	after := ""
	for pages := 0; ; pages++ {
		vs, more, err := l.Verdicts(context.Background(), account, store, space, after, limit)
		if err != nil {
			t.Fatalf("Verdicts(%s/%s/%s after %q): %v", account, store, space, after, err)
		}
		if limit > 0 && len(vs) > limit {
			t.Fatalf("Verdicts: %d verdicts in a page of %d", len(vs), limit)
		}
		all = append(all, vs...)
		if !more {
			return all
		}
		if len(vs) == 0 || pages > 1000 {
			t.Fatalf("Verdicts: more after an empty page, or paging does not end (after %q)", after)
		}
		after = vs[len(vs)-1].ContentID
	}
}

func ids(vs []bitlog.Verdict) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.ContentID
	}
	return out
}

// verdictOf returns the one verdict of a copy of acme/1/space, or false.
func verdictOf(t *testing.T, l bitlog.Log, space, content string) (bitlog.Verdict, bool) {
	t.Helper()
	for _, v := range verdicts(t, l, "acme", "1", space, 0) {
		if v.ContentID == content {
			return v, true
		}
	}
	return bitlog.Verdict{}, false
}

// testVerdictPages: a space's verdicts come in byte-wise content order,
// in pages of at most limit, after the given content ID; more says
// whether others follow (false when the last page is exactly full).
func testVerdictPages(t *testing.T, l bitlog.Log) {
	ctx := context.Background()
	if vs, more, err := l.Verdicts(ctx, "acme", "1", "photos", "", 10); err != nil || len(vs) != 0 || more {
		t.Fatalf("empty log: %+v more=%v err=%v", vs, more, err)
	}
	names := []string{"b", "B", "a/b", "a-b", "a", "Z", "é", "e", "a b", "item-10", "item-9"}
	for i := range 13 {
		names = append(names, fmt.Sprintf("n%03d", 12-i))
	}
	for i, n := range names {
		r := row(fmt.Sprintf("run%d", i%3), "photos", n, bitlog.ResultSuccess)
		if i%4 == 0 {
			r.Result = bitlog.ResultFailure
		}
		record(t, l, r)
	}
	want := slices.Clone(names)
	slices.Sort(want) // byte-wise
	for _, limit := range []int{1, 4, 6, 24, 25, 0} {
		got := verdicts(t, l, "acme", "1", "photos", limit)
		if fmt.Sprint(ids(got)) != fmt.Sprint(want) {
			t.Fatalf("limit %d: %v\nwant      %v", limit, ids(got), want)
		}
	}
	// A page after an ID that is not a copy starts at the next one.
	vs, more, err := l.Verdicts(ctx, "acme", "1", "photos", "item-", 2)
	if err != nil || !more || fmt.Sprint(ids(vs)) != "[item-10 item-9]" {
		t.Fatalf("after \"item-\": %v more=%v err=%v", ids(vs), more, err)
	}
	// The last page: exactly full, nothing more.
	vs, more, err = l.Verdicts(ctx, "acme", "1", "photos", want[len(want)-3], 2)
	if err != nil || more || len(vs) != 2 {
		t.Fatalf("last full page: %v more=%v err=%v", ids(vs), more, err)
	}
	if vs, more, err := l.Verdicts(ctx, "acme", "1", "photos", want[len(want)-1], 5); err != nil || len(vs) != 0 || more {
		t.Fatalf("after the last: %v more=%v err=%v", ids(vs), more, err)
	}
	// A limit beyond the largest page is clamped.
	if vs, _, err := l.Verdicts(ctx, "acme", "1", "photos", "", bitlog.MaxPageSize*10); err != nil || len(vs) != len(names) {
		t.Fatalf("huge limit: %d verdicts, err %v", len(vs), err)
	}
}

// testVerdictForward: the verdict follows the newest fresh check of the
// copy over every run, with its result, method, archival state and time
// (microseconds, UTC); a check older than the verdict (a replayed task)
// does not move it back; one at the same instant replaces it.
func testVerdictForward(t *testing.T, l bitlog.Log) {
	check := func(what string, want bitlog.Verdict) {
		t.Helper()
		got, ok := verdictOf(t, l, "photos", "x")
		if !ok || got != want {
			t.Fatalf("%s: verdict %+v (found %v)\nwant %+v", what, got, ok, want)
		}
	}
	r := row("20240305T000000Z", "photos", "x", bitlog.ResultSuccess)
	r.CheckedAt = t0.Add(789 * time.Nanosecond)
	record(t, l, r)
	check("first check", bitlog.Verdict{ContentID: "x", Result: bitlog.ResultSuccess, Method: bitlog.MethodRead, CheckedAt: t0})

	later := row("20240405T000000Z", "photos", "x", bitlog.ResultFailure)
	later.Method, later.Archived, later.CheckedAt = bitlog.MethodAtRest, true, t0.Add(30*24*time.Hour)
	record(t, l, later)
	want := bitlog.Verdict{ContentID: "x", Result: bitlog.ResultFailure, Method: bitlog.MethodAtRest, Archived: true, CheckedAt: later.CheckedAt}
	check("a later run", want)

	// The first run's check replayed (redelivered after the later run):
	// its row is replaced, the verdict stays the later one.
	record(t, l, r)
	check("an older check replayed", want)
	old := row("", "photos", "x", bitlog.ResultSuccess)
	old.CheckedAt = t0.Add(-time.Hour)
	record(t, l, old)
	check("an older check outside any run", want)

	same := later
	same.Result, same.Method, same.Archived = bitlog.ResultSuccess, bitlog.MethodRead, false
	record(t, l, same)
	check("a check at the same instant", bitlog.Verdict{ContentID: "x", Result: bitlog.ResultSuccess, Method: bitlog.MethodRead, CheckedAt: later.CheckedAt})

	// A zero CheckedAt is now, as for the row.
	before := time.Now().Add(-time.Minute)
	now := row("", "photos", "y", bitlog.ResultSuccess)
	now.CheckedAt = time.Time{}
	record(t, l, now)
	rows, _ := results(t, l, bitlog.Filter{RunID: "", SpaceID: "photos", ContentID: "y"})
	got, ok := verdictOf(t, l, "photos", "y")
	if !ok || len(rows) != 1 || !got.CheckedAt.Equal(rows[0].CheckedAt) || got.CheckedAt.Before(before) || got.CheckedAt.Location() != time.UTC {
		t.Fatalf("zero CheckedAt: verdict %+v, rows %+v", got, rows)
	}
}

// testVerdictFresh: only a fresh check (read or at rest) that reached a
// verdict (SUCCESS or FAILURE) counts: an ERROR, a comparison of stored
// checksums and a row without a method make no verdict and leave an
// existing one as it is, even when they come later or replace the row
// that made it.
func testVerdictFresh(t *testing.T, l bitlog.Log) {
	later := func(r bitlog.Row, d time.Duration) bitlog.Row { r.CheckedAt = t0.Add(d); return r }
	errRead := row("run1", "photos", "err", bitlog.ResultError)
	stored := row("run1", "photos", "stored", bitlog.ResultSuccess)
	stored.Method = bitlog.MethodStored
	none := row("run1", "photos", "none", bitlog.ResultFailure)
	none.Method, none.Bytes = "", 0
	for _, r := range []bitlog.Row{errRead, stored, none} {
		record(t, l, r)
	}
	if vs := verdicts(t, l, "acme", "1", "photos", 0); len(vs) != 0 {
		t.Fatalf("verdicts of checks that are not fresh verdicts: %+v", vs)
	}

	good := row("run1", "photos", "good", bitlog.ResultSuccess)
	record(t, l, good)
	want := bitlog.Verdict{ContentID: "good", Result: bitlog.ResultSuccess, Method: bitlog.MethodRead, CheckedAt: t0}
	e := later(good, time.Hour)
	e.Result = bitlog.ResultError
	s := later(good, 2*time.Hour)
	s.RunID, s.Method = "run2", bitlog.MethodStored
	n := later(good, 3*time.Hour)
	n.RunID, n.Method, n.Result = "run3", "", bitlog.ResultFailure
	for _, r := range []bitlog.Row{e, s, n} {
		record(t, l, r)
		if vs := verdicts(t, l, "acme", "1", "photos", 0); len(vs) != 1 || vs[0] != want {
			t.Fatalf("after a later %s %q row: %+v, want %+v", r.Result, r.Method, vs, want)
		}
	}
	// e replaced good's row of run1: the verdict outlives it.
	if rows, _ := results(t, l, bitlog.Filter{RunID: "run1", ContentID: "good"}); len(rows) != 1 || rows[0].Result != bitlog.ResultError {
		t.Fatalf("run1's row of good: %+v, want the ERROR", rows)
	}
}

// testVerdictRetention: dropping old months of rows keeps every copy's
// verdict. Skipped for a log that is not a bitlog.Pruner.
func testVerdictRetention(t *testing.T, l bitlog.Log) {
	p, ok := l.(bitlog.Pruner)
	if !ok {
		t.Skip("the log does not implement bitlog.Pruner")
	}
	jan := row("20240105T000000Z", "photos", "old", bitlog.ResultFailure)
	jan.CheckedAt = time.Date(2024, 1, 5, 3, 0, 0, 0, time.UTC)
	jan.Method, jan.Archived = bitlog.MethodAtRest, true
	adhoc := row("", "photos", "adhoc", bitlog.ResultSuccess)
	adhoc.CheckedAt = time.Date(2024, 1, 20, 3, 0, 0, 0, time.UTC)
	mar := row("20240301T000000Z", "photos", "new", bitlog.ResultSuccess)
	mar.CheckedAt = time.Date(2024, 3, 1, 3, 0, 0, 0, time.UTC)
	for _, r := range []bitlog.Row{jan, adhoc, mar} {
		record(t, l, r)
	}
	before := verdicts(t, l, "acme", "1", "photos", 0)
	if len(before) != 3 {
		t.Fatalf("verdicts before retention: %+v", before)
	}
	if _, err := p.DropMonths(context.Background(), time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if rows, _ := results(t, l, bitlog.Filter{SpaceID: "photos"}); len(rows) != 1 || rows[0].ContentID != "new" {
		t.Fatalf("rows after retention: %+v, want March's only", rows)
	}
	if after := verdicts(t, l, "acme", "1", "photos", 0); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("verdicts after retention: %+v\nwant %+v", after, before)
	}
}

// testVerdictIsolation: a space's verdicts are its own: the same content
// ID in another space, store or account (even one whose ID extends this
// one's) never shows, nor moves this copy's verdict.
func testVerdictIsolation(t *testing.T, l bitlog.Log) {
	base := row("run1", "photos", "x", bitlog.ResultSuccess)
	record(t, l, base)
	others := []bitlog.Row{}
	for i, f := range []func(*bitlog.Row){
		func(r *bitlog.Row) { r.SpaceID = "photos2" },
		func(r *bitlog.Row) { r.SpaceID = "Photos" },
		func(r *bitlog.Row) { r.StoreID = "2" },
		func(r *bitlog.Row) { r.Account = "acme2" },
		func(r *bitlog.Row) { r.Account, r.StoreID = "acm", "e1" },
	} {
		r := base
		f(&r)
		r.Result, r.ContentID = bitlog.ResultFailure, fmt.Sprintf("x%d", i)
		r.CheckedAt = t0.Add(time.Hour)
		record(t, l, r)
		r.ContentID = "x"
		record(t, l, r)
		others = append(others, r)
	}
	want := []bitlog.Verdict{{ContentID: "x", Result: bitlog.ResultSuccess, Method: bitlog.MethodRead, CheckedAt: t0}}
	if got := verdicts(t, l, "acme", "1", "photos", 0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("acme/1/photos: %+v\nwant %+v", got, want)
	}
	for i, r := range others {
		got := verdicts(t, l, r.Account, r.StoreID, r.SpaceID, 0)
		if fmt.Sprint(ids(got)) != fmt.Sprintf("[x x%d]", i) || got[0].Result != bitlog.ResultFailure {
			t.Fatalf("%s/%s/%s: %+v", r.Account, r.StoreID, r.SpaceID, got)
		}
	}
	if vs, _, err := l.Verdicts(context.Background(), "nobody", "1", "photos", "", 0); err != nil || len(vs) != 0 {
		t.Fatalf("an unknown account: %+v %v", vs, err)
	}
}
