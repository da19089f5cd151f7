package bitlogtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
)

// testFindingStands: a run's finding (a FAILURE, or an ERROR with a case)
// is not replaced by a later SUCCESS of the same run — a redelivered or
// duplicate check that looks at an item the first check's actions
// repaired — unless that SUCCESS is the re-check of the finding's case
// (Row.Supersedes); the copy's verdict moves forward all the same. A
// placeholder ERROR (case 0), a finding of another kind, and the row of
// a check outside any run are replaced as before; Supersedes reads back
// as 0.
func testFindingStands(t *testing.T, l bitlog.Log) {
	const run = "20240305T000000Z"
	finding := func(content string, res bitlog.Result, c int) bitlog.Row {
		r := row(run, "photos", content, res)
		r.Case, r.Details = c, "found"
		return r
	}
	success := func(of bitlog.Row, supersedes int) bitlog.Row {
		r := of
		r.Result, r.Case, r.Details, r.Supersedes = bitlog.ResultSuccess, 1, "checked again", supersedes
		r.CheckedAt = of.CheckedAt.Add(time.Minute)
		return r
	}
	rowOf := func(r bitlog.Row) bitlog.Row {
		t.Helper()
		rows, _ := results(t, l, bitlog.Filter{RunID: r.RunID, Account: r.Account, StoreID: r.StoreID, SpaceID: r.SpaceID, ContentID: r.ContentID})
		if len(rows) != 1 || rows[0].RunID != r.RunID {
			t.Fatalf("rows of %s: %+v, want one", r.Key(), rows)
		}
		return rows[0]
	}
	for _, tc := range []struct {
		name  string
		first bitlog.Row
		later bitlog.Row
		kept  bool
	}{
		{"FAILURE stands against a duplicate's SUCCESS", finding("audit-missing", bitlog.ResultFailure, 7), bitlog.Row{}, true},
		{"ERROR of a case stands", finding("updated", bitlog.ResultError, 10), bitlog.Row{}, true},
		{"placeholder ERROR is replaced", finding("dead-lettered", bitlog.ResultError, 0), bitlog.Row{}, false},
		{"re-check of another case does not replace", finding("sour", bitlog.ResultFailure, 2), bitlog.Row{Supersedes: 6}, true},
		{"re-check of its case replaces", finding("sour2", bitlog.ResultFailure, 2), bitlog.Row{Supersedes: 2}, false},
		{"outside any run the latest check is the row", func() bitlog.Row { r := finding("adhoc", bitlog.ResultFailure, 2); r.RunID = ""; return r }(), bitlog.Row{}, false},
	} {
		record(t, l, tc.first)
		later := success(tc.first, tc.later.Supersedes)
		record(t, l, later)
		want := later
		if tc.kept {
			want = tc.first
		}
		want.Supersedes = 0
		if got := rowOf(tc.first); got != want {
			t.Errorf("%s: row %+v\nwant %+v", tc.name, got, want)
		}
		if v, ok := verdictOf(t, l, "photos", tc.first.ContentID); !ok || v.Result != bitlog.ResultSuccess || !v.CheckedAt.Equal(later.CheckedAt) {
			t.Errorf("%s: verdict %+v (found %v), want the later SUCCESS", tc.name, v, ok)
		}
	}
	// A finding replaces a finding: the run's row is its latest finding.
	first := finding("index", bitlog.ResultFailure, 5)
	record(t, l, first)
	again := first
	again.Case, again.Details = 6, "found again"
	record(t, l, again)
	if got := rowOf(first); got != again {
		t.Errorf("a finding after a finding: %+v\nwant %+v", got, again)
	}
	// A placeholder ERROR (case 0: "not checked", e.g. an at-rest job that
	// failed, or a dead-lettered redelivery) is no observation of the copy:
	// it does not replace the run's finding either, unless it is the
	// re-check of that case.
	for _, tc := range []struct {
		name       string
		supersedes int
		kept       bool
	}{{"placeholder ERROR after a finding", 0, true}, {"placeholder ERROR of its re-check", 8, false}} {
		found := finding("removed-"+fmt.Sprint(tc.supersedes), bitlog.ResultFailure, 8)
		record(t, l, found)
		later := found
		later.Result, later.Case, later.Details, later.Supersedes = bitlog.ResultError, 0, "not checked", tc.supersedes
		later.CheckedAt = found.CheckedAt.Add(time.Minute)
		record(t, l, later)
		want := later
		if tc.kept {
			want = found
		}
		want.Supersedes = 0
		if got := rowOf(found); got != want {
			t.Errorf("%s: row %+v\nwant %+v", tc.name, got, want)
		}
	}
	// A negative Supersedes is invalid.
	bad := success(first, -1)
	if err := l.Record(t.Context(), bad); err == nil {
		t.Errorf("Record with Supersedes -1: no error")
	}
}
