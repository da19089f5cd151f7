// Package bitlogtest is the conformance suite every bitlog.Log
// implementation passes: Run(t, Harness{New: newFn})
// with newFn returning an empty log for each subtest.
package bitlogtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
)

// Harness is the implementation under test, the one entry shape of Mill's
// conformance suites: New makes what one subtest runs on, the other
// fields (none yet) say where an implementation may differ.
type Harness struct {
	// New returns an empty log for one subtest.
	New func(t *testing.T) bitlog.Log
}

var t0 = time.Date(2024, 3, 5, 14, 7, 9, 123_456_000, time.UTC)

func row(run, space, content string, res bitlog.Result) bitlog.Row {
	return bitlog.Row{RunID: run, Account: "acme", StoreID: "1", StoreKind: "fs", SpaceID: space,
		ContentID: content, Result: res, Case: 1, ContentChecksum: "c", StorageChecksum: "s",
		IndexChecksum: "i", AuditChecksum: "a", Details: "ok", Method: bitlog.MethodRead, Bytes: 1234, CheckedAt: t0}
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("bitlogtest: Harness.New is nil")
	}
	newLog := h.New
	t.Run("RecordUpsert", func(t *testing.T) { testRecordUpsert(t, newLog(t)) })
	t.Run("NullsAndZeroTime", func(t *testing.T) { testNulls(t, newLog(t)) })
	t.Run("FilterAndPages", func(t *testing.T) { testPages(t, newLog(t)) })
	t.Run("SpaceOfARunInPages", func(t *testing.T) { testSpacePages(t, newLog(t)) })
	t.Run("OneItem", func(t *testing.T) { testOneItem(t, newLog(t)) })
	t.Run("Count", func(t *testing.T) { testCount(t, newLog(t)) })
	t.Run("Reports", func(t *testing.T) { testReports(t, newLog(t)) })
	t.Run("Invalid", func(t *testing.T) { testInvalid(t, newLog(t)) })
	t.Run("OneRowAcrossMonths", func(t *testing.T) { testAcrossMonths(t, newLog(t)) })
	t.Run("DropMonths", func(t *testing.T) { testDropMonths(t, newLog(t)) })
	t.Run("RunSpaces", func(t *testing.T) { testRunSpaces(t, newLog(t)) })
	t.Run("VerdictsOrderAndPages", func(t *testing.T) { testVerdictPages(t, newLog(t)) })
	t.Run("VerdictsForwardOnly", func(t *testing.T) { testVerdictForward(t, newLog(t)) })
	t.Run("VerdictsOnlyFresh", func(t *testing.T) { testVerdictFresh(t, newLog(t)) })
	t.Run("VerdictsSurviveRetention", func(t *testing.T) { testVerdictRetention(t, newLog(t)) })
	t.Run("VerdictsIsolated", func(t *testing.T) { testVerdictIsolation(t, newLog(t)) })
	t.Run("AtRestJobs", func(t *testing.T) { testAtRest(t, newLog(t)) })
	t.Run("CheckedByTime", func(t *testing.T) { testChecked(t, newLog(t)) })
	t.Run("Agent", func(t *testing.T) { testAgent(t, newLog(t)) })
	t.Run("FindingStands", func(t *testing.T) { testFindingStands(t, newLog(t)) })
}

// testOneItem: Filter.ContentID selects one item's rows; with the run,
// account, store and space set, its one row of the run (the bit-error
// processor reads the bit check's row of an item so).
func testOneItem(t *testing.T, l bitlog.Log) {
	for _, r := range []bitlog.Row{row("run1", "photos", "x", bitlog.ResultFailure), row("run1", "photos", "x/y", bitlog.ResultSuccess),
		row("run1", "photos", "xx", bitlog.ResultSuccess), row("run1", "other", "x", bitlog.ResultSuccess),
		row("run2", "photos", "x", bitlog.ResultError), row("", "photos", "x", bitlog.ResultSuccess)} {
		record(t, l, r)
	}
	rows, next := results(t, l, bitlog.Filter{RunID: "run1", Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "x"})
	if len(rows) != 1 || next != "" || rows[0].ContentID != "x" || rows[0].Result != bitlog.ResultFailure {
		t.Fatalf("the row of run1's photos/x: %+v (next %q)", rows, next)
	}
	if rows, _ := results(t, l, bitlog.Filter{ContentID: "x"}); len(rows) != 4 {
		t.Fatalf("every row of an item named x: %d rows, want 4 (%+v)", len(rows), rows)
	}
	if rows, _ := results(t, l, bitlog.Filter{RunID: "run1", SpaceID: "photos", ContentID: "nope"}); len(rows) != 0 {
		t.Fatalf("an item without rows: %+v", rows)
	}
}

// testAcrossMonths: a check outside any producer run, and a producer run's
// check redelivered in a later month, still leave one row per item.
func testAcrossMonths(t *testing.T, l bitlog.Log) {
	for _, run := range []string{"", "adhoc", "20240131T230000Z"} {
		r := row(run, "photos", "x", bitlog.ResultError)
		r.Case = 0 // not a finding (FindingStands), so a SUCCESS replaces it
		r.CheckedAt = time.Date(2024, 1, 31, 23, 30, 0, 0, time.UTC)
		record(t, l, r)
		r.Result, r.Case, r.CheckedAt = bitlog.ResultSuccess, 1, time.Date(2024, 2, 1, 0, 30, 0, 0, time.UTC)
		record(t, l, r)
		rows, _ := results(t, l, bitlog.Filter{RunID: run, SpaceID: "photos"})
		var mine []bitlog.Row
		for _, x := range rows {
			if x.RunID == run {
				mine = append(mine, x)
			}
		}
		if len(mine) != 1 || mine[0].Result != bitlog.ResultSuccess || !mine[0].CheckedAt.Equal(r.CheckedAt) {
			t.Fatalf("run %q: rows %+v, want the February row only", run, mine)
		}
		if run != "" {
			if c, err := l.Count(context.Background(), run, "acme", "1", "photos"); err != nil || c.Total != 1 {
				t.Fatalf("run %q: count %+v %v", run, c, err)
			}
		}
	}
}

// testDropMonths: months are listed oldest first; dropping the months
// before a cutoff removes their rows and keeps the rest. Skipped for a log
// that is not a bitlog.Pruner.
func testDropMonths(t *testing.T, l bitlog.Log) {
	p, ok := l.(bitlog.Pruner)
	if !ok {
		t.Skip("the log does not implement bitlog.Pruner")
	}
	ctx := context.Background()
	jan, feb, mar := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	for i, run := range []string{"20240105T000000Z", "20240105T000000Z", "20240210T000000Z", "20240301T000000Z"} {
		record(t, l, row(run, "photos", fmt.Sprintf("i%d", i), bitlog.ResultSuccess))
	}
	adhoc := row("", "photos", "adhoc", bitlog.ResultSuccess) // recorded in February
	adhoc.CheckedAt = feb.Add(time.Hour)
	record(t, l, adhoc)
	months, err := p.Months(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[time.Time]int64{jan: 2, feb: 2, mar: 1}
	var have []time.Time
	for _, m := range months {
		if n, ok := want[m.Month]; ok {
			have = append(have, m.Month)
			if m.Rows != n && m.Rows != -1 { // -1: an estimate not made yet
				t.Errorf("month %s: %d rows, want %d", m.Month.Format("2006-01"), m.Rows, n)
			}
		}
	}
	if fmt.Sprint(have) != fmt.Sprint([]time.Time{jan, feb, mar}) {
		t.Fatalf("months %+v, want January, February and March 2024, oldest first", months)
	}
	// At-rest jobs of the runs of dropped months go too.
	jobs, _ := l.(bitlog.AtRestJobs)
	if jobs != nil {
		for _, run := range []string{"20240229T235959Z", "20240301T000000Z"} {
			if err := jobs.AddAtRestObjects(ctx, bitlog.AtRestKey{RunID: run, Account: "acme", StoreID: "1", SpaceID: "photos"},
				[]bitlog.AtRestObject{{ContentID: "x"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	dropped, err := p.DropMonths(ctx, mar)
	if err != nil {
		t.Fatal(err)
	}
	if jobs != nil {
		if _, err := jobs.AtRestJob(ctx, bitlog.AtRestKey{RunID: "20240229T235959Z", Account: "acme", StoreID: "1", SpaceID: "photos"}); !errors.Is(err, bitlog.ErrNoAtRestJob) {
			t.Errorf("the at-rest job of a February run after dropping February: %v, want gone", err)
		}
		if _, err := jobs.AtRestObject(ctx, bitlog.AtRestKey{RunID: "20240301T000000Z", Account: "acme", StoreID: "1", SpaceID: "photos"}, "x"); err != nil {
			t.Errorf("the at-rest job of a March run after dropping February: %v, want kept", err)
		}
	}
	var gone []time.Time
	for _, m := range dropped {
		gone = append(gone, m.Month)
	}
	if fmt.Sprint(gone) != fmt.Sprint([]time.Time{jan, feb}) {
		t.Fatalf("dropped %+v, want January and February", dropped)
	}
	rows, _ := results(t, l, bitlog.Filter{})
	if len(rows) != 1 || rows[0].RunID != "20240301T000000Z" {
		t.Fatalf("after dropping: %+v, want the March row only", rows)
	}
	// A dropped month can be written again.
	record(t, l, row("20240105T000000Z", "photos", "late", bitlog.ResultSuccess))
	if c, err := l.Count(ctx, "20240105T000000Z", "acme", "1", "photos"); err != nil || c.Total != 1 {
		t.Fatalf("a late row of a dropped month: %+v %v", c, err)
	}
}

func record(t *testing.T, l bitlog.Log, r bitlog.Row) {
	t.Helper()
	if err := l.Record(context.Background(), r); err != nil {
		t.Fatalf("Record(%s): %v", r.Key(), err)
	}
}

func results(t *testing.T, l bitlog.Log, f bitlog.Filter) ([]bitlog.Row, string) {
	t.Helper()
	rows, next, err := l.Results(context.Background(), f)
	if err != nil {
		t.Fatalf("Results(%+v): %v", f, err)
	}
	return rows, next
}

func testRecordUpsert(t *testing.T, l bitlog.Log) {
	r := row("run1", "photos", "a/b.jpg", bitlog.ResultFailure)
	r.Case = 5
	record(t, l, r)
	// A redelivered check updates its row (a finding replaces a finding;
	// see FindingStands for a SUCCESS).
	r2 := r
	r2.Result, r2.Case, r2.IndexChecksum, r2.Details = bitlog.ResultError, 10, "i2", "second"
	r2.CheckedAt = t0.Add(time.Minute)
	record(t, l, r2)
	rows, next := results(t, l, bitlog.Filter{RunID: "run1"})
	if len(rows) != 1 || next != "" {
		t.Fatalf("rows %d next %q, want one row", len(rows), next)
	}
	if got := rows[0]; got != r2 {
		t.Fatalf("row = %+v\nwant %+v", got, r2)
	}
	// Another run is another row.
	r3 := r
	r3.RunID = "run2"
	record(t, l, r3)
	if rows, _ := results(t, l, bitlog.Filter{}); len(rows) != 2 {
		t.Fatalf("all runs: %d rows, want 2", len(rows))
	}
	if rows, _ := results(t, l, bitlog.Filter{RunID: "run2"}); len(rows) != 1 || rows[0].Case != 5 {
		t.Fatalf("run2: %+v", rows)
	}
}

func testNulls(t *testing.T, l bitlog.Log) {
	r := bitlog.Row{Account: "acme", StoreID: "1", SpaceID: "s", ContentID: "ünï cødé/x", Result: bitlog.ResultError}
	before := time.Now().Add(-time.Minute)
	record(t, l, r)
	rows, _ := results(t, l, bitlog.Filter{Account: "acme"})
	if len(rows) != 1 {
		t.Fatalf("rows = %+v", rows)
	}
	got := rows[0]
	if got.CheckedAt.Before(before) || got.CheckedAt.Location() != time.UTC {
		t.Errorf("zero CheckedAt stored as %v, want about now in UTC", got.CheckedAt)
	}
	got.CheckedAt = time.Time{}
	if got != r {
		t.Errorf("row = %+v\nwant %+v", got, r)
	}
}

func testPages(t *testing.T, l bitlog.Log) {
	// 7 rows in run1 space "a" (every third a failure), 2 in space "b",
	// 1 in run2.
	for i := range 7 {
		res := bitlog.ResultSuccess
		if i%3 == 0 {
			res = bitlog.ResultFailure
		}
		record(t, l, row("run1", "a", fmt.Sprintf("item-%02d", 6-i), res))
	}
	record(t, l, row("run1", "b", "x", bitlog.ResultError))
	record(t, l, row("run1", "b", "Y", bitlog.ResultSuccess))
	record(t, l, row("run2", "a", "item-00", bitlog.ResultSuccess))

	var all []string
	tok := ""
	pages := 0
	for {
		rows, next := results(t, l, bitlog.Filter{RunID: "run1", After: tok, Limit: 3})
		pages++
		for _, r := range rows {
			all = append(all, r.SpaceID+"/"+r.ContentID)
		}
		if next == "" {
			break
		}
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
		tok = next
	}
	want := []string{"a/item-00", "a/item-01", "a/item-02", "a/item-03", "a/item-04", "a/item-05", "a/item-06", "b/Y", "b/x"}
	if fmt.Sprint(all) != fmt.Sprint(want) {
		t.Fatalf("pages = %v\nwant  %v", all, want)
	}
	if pages != 3 {
		t.Errorf("%d pages of 3, want 3", pages)
	}
	fails, _ := results(t, l, bitlog.Filter{RunID: "run1", SpaceID: "a", Result: bitlog.ResultFailure})
	if len(fails) != 3 {
		t.Errorf("failures = %d, want 3", len(fails))
	}
	if rows, _ := results(t, l, bitlog.Filter{RunID: "run1", Result: bitlog.ResultError}); len(rows) != 1 || rows[0].ContentID != "x" {
		t.Errorf("errors = %+v", rows)
	}
	if _, _, err := l.Results(context.Background(), bitlog.Filter{After: "!!not a token"}); !errors.Is(err, bitlog.ErrBadPageToken) {
		t.Errorf("bad token: err = %v, want ErrBadPageToken", err)
	}
}

func testCount(t *testing.T, l bitlog.Log) {
	ctx := context.Background()
	c, err := l.Count(ctx, "run1", "acme", "1", "a")
	if err != nil || c != (bitlog.Counts{}) {
		t.Fatalf("empty Count = %+v, %v", c, err)
	}
	record(t, l, row("run1", "a", "1", bitlog.ResultSuccess))
	record(t, l, row("run1", "a", "2", bitlog.ResultFailure))
	notChecked := row("run1", "a", "3", bitlog.ResultError)
	notChecked.Case = 0 // a placeholder, not a finding (FindingStands)
	record(t, l, notChecked)
	record(t, l, row("run1", "a", "3", bitlog.ResultSuccess)) // its check
	record(t, l, row("run1", "b", "1", bitlog.ResultSuccess))
	record(t, l, row("run2", "a", "1", bitlog.ResultSuccess))
	c, err = l.Count(ctx, "run1", "acme", "1", "a")
	if err != nil {
		t.Fatal(err)
	}
	if want := (bitlog.Counts{Total: 3, Success: 2, Failure: 1}); c != want {
		t.Fatalf("Count = %+v, want %+v", c, want)
	}
}

func testReports(t *testing.T, l bitlog.Log) {
	ctx := context.Background()
	put := func(r bitlog.Report) {
		t.Helper()
		if err := l.PutReport(ctx, r); err != nil {
			t.Fatalf("PutReport: %v", err)
		}
	}
	r1 := bitlog.Report{RunID: "run1", Account: "acme", StoreID: "1", SpaceID: "a", Result: bitlog.ResultFailure,
		Counts: bitlog.Counts{Total: 3, Success: 2, Failure: 1}, Location: "s3://r/1.tsv", CreatedAt: t0}
	put(r1)
	r1b := r1
	r1b.Result, r1b.Counts, r1b.Location = bitlog.ResultSuccess, bitlog.Counts{Total: 3, Success: 3}, "s3://r/2.tsv"
	put(r1b) // redelivery replaces
	r2 := bitlog.Report{RunID: "run2", Account: "acme", StoreID: "1", SpaceID: "a", Result: bitlog.ResultSuccess,
		Counts: bitlog.Counts{Total: 1, Success: 1}, CreatedAt: t0.Add(time.Hour)}
	put(r2)
	r3 := bitlog.Report{RunID: "run2", Account: "acme", StoreID: "1", SpaceID: "b", Result: bitlog.ResultError, CreatedAt: t0.Add(time.Hour)}
	put(r3)

	got, err := l.Reports(ctx, bitlog.ReportFilter{Account: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != r2 || got[1] != r3 || got[2] != r1b {
		t.Fatalf("Reports = %+v\nwant %+v %+v %+v", got, r2, r3, r1b)
	}
	got, _ = l.Reports(ctx, bitlog.ReportFilter{SpaceID: "a", Limit: 1})
	if len(got) != 1 || got[0] != r2 {
		t.Fatalf("space a, limit 1 = %+v", got)
	}
	got, _ = l.Reports(ctx, bitlog.ReportFilter{RunID: "run1"})
	if len(got) != 1 || got[0] != r1b {
		t.Fatalf("run1 = %+v", got)
	}
}

func testInvalid(t *testing.T, l bitlog.Log) {
	ctx := context.Background()
	bad := []bitlog.Row{
		{Account: "acme", StoreID: "1", SpaceID: "s", Result: bitlog.ResultSuccess},                                 // no content
		{Account: "acme", StoreID: "1", SpaceID: "s", ContentID: "c", Result: "MAYBE"},                              // bad result
		{StoreID: "1", SpaceID: "s", ContentID: "c", Result: bitlog.ResultSuccess},                                  // no account
		{Account: "acme", StoreID: "1", SpaceID: "s", ContentID: "c", Result: "SUCCESS", Case: -1},                  // bad case
		{Account: "acme", StoreID: "1", SpaceID: "s", ContentID: "c", Result: "SUCCESS", Method: "guess"},           // bad method
		{Account: "acme", StoreID: "1", SpaceID: "s", ContentID: "c", Result: "SUCCESS", Method: "READ"},            // bad method
		{Account: "acme", StoreID: "1", SpaceID: "s", ContentID: "c", Result: "SUCCESS", Method: "read", Bytes: -1}, // bad byte count
	}
	for _, r := range bad {
		if err := l.Record(ctx, r); !errors.Is(err, bitlog.ErrInvalid) {
			t.Errorf("Record(%+v) = %v, want ErrInvalid", r, err)
		}
	}
	if rows, _ := results(t, l, bitlog.Filter{}); len(rows) != 0 {
		t.Errorf("invalid rows were stored: %+v", rows)
	}
	if vs, _, err := l.Verdicts(ctx, "acme", "1", "s", "", 0); err != nil || len(vs) != 0 {
		t.Errorf("invalid rows made verdicts: %+v %v", vs, err)
	}
	if err := l.PutReport(ctx, bitlog.Report{Account: "acme", StoreID: "1", SpaceID: "s", Result: "SUCCESS",
		Counts: bitlog.Counts{Total: -1}}); !errors.Is(err, bitlog.ErrInvalid) {
		t.Errorf("PutReport negative count = %v, want ErrInvalid", err)
	}
	if _, _, err := l.Results(ctx, bitlog.Filter{Result: "MAYBE"}); !errors.Is(err, bitlog.ErrInvalid) {
		t.Errorf("Results bad result filter = %v, want ErrInvalid", err)
	}
	// A report that counted nothing is not a SUCCESS; EMPTY is a report's
	// result only, and counts nothing.
	for _, r := range []bitlog.Report{
		{RunID: "r", Account: "acme", StoreID: "1", SpaceID: "s", Result: bitlog.ResultSuccess},
		{RunID: "r", Account: "acme", StoreID: "1", SpaceID: "s", Result: bitlog.ResultEmpty, Counts: bitlog.Counts{Total: 1, Success: 1}},
		{RunID: "r", Account: "acme", StoreID: "1", SpaceID: "s", Result: "MAYBE", Counts: bitlog.Counts{Total: 1, Success: 1}},
	} {
		if err := l.PutReport(ctx, r); !errors.Is(err, bitlog.ErrInvalid) {
			t.Errorf("PutReport(%s, %d items) = %v, want ErrInvalid", r.Result, r.Counts.Total, err)
		}
	}
	if reps, err := l.Reports(ctx, bitlog.ReportFilter{}); err != nil || len(reps) != 0 {
		t.Errorf("invalid reports were stored: %+v %v", reps, err)
	}
	if err := l.Record(ctx, bitlog.Row{Account: "acme", StoreID: "1", SpaceID: "s", ContentID: "c", Result: bitlog.ResultEmpty}); !errors.Is(err, bitlog.ErrInvalid) {
		t.Errorf("Record(EMPTY) = %v, want ErrInvalid: EMPTY is a report's result", err)
	}
	empty := bitlog.Report{RunID: "r", Account: "acme", StoreID: "1", SpaceID: "s", Result: bitlog.ResultEmpty, CreatedAt: t0}
	if err := l.PutReport(ctx, empty); err != nil {
		t.Fatalf("PutReport(EMPTY): %v", err)
	}
	if reps, err := l.Reports(ctx, bitlog.ReportFilter{}); err != nil || len(reps) != 1 || reps[0] != empty {
		t.Errorf("reports %+v %v, want the EMPTY one", reps, err)
	}
}
