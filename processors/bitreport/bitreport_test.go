package bitreport_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/auditlog/memauditlog"
	"github.com/millfleet/mill/pkg/reportstore/fsreportstore"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/bit"
	"github.com/millfleet/mill/processors/bitreport"

	"github.com/millfleet/mill/internal/testkit/slogtest"
	"github.com/millfleet/mill/pkg/bitlog/membitlog"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
)

const run = "20260501T030000Z"

type env struct {
	clk     *clock.Fake
	audit   *memauditlog.Log
	errQ    *memqueue.Queue
	store   *fsstore.Store
	opener  *stores.Opener
	index   *memcontentindex.Index
	log     *membitlog.Log
	dir     string
	requeue *memqueue.Queue
}

func setup(t *testing.T, ids ...string) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := fsstore.New(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := st.CreateSpace(ctx, "photos"); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := st.Put(ctx, "photos", id, strings.NewReader(id), storage.PutOptions{Size: -1}); err != nil {
			t.Fatal(err)
		}
	}
	reg := &stores.Registry{Accounts: []stores.Account{{ID: "acme", Status: stores.StatusActive, Stores: []stores.Store{
		{ID: "1", Primary: true, Kind: storage.KindFS, Root: st.Root()},
	}}}}
	clk := clock.NewFake(time.Date(2026, 5, 1, 4, 0, 0, 0, time.UTC))
	return &env{
		clk:   clk,
		store: st,
		opener: stores.NewOpener(reg, stores.OpenerConfig{FS: func(context.Context, stores.Store) (storage.Provider, error) {
			return st, nil
		}}),
		index:   memcontentindex.New(),
		log:     membitlog.New(clk),
		dir:     filepath.Join(dir, "reports"),
		requeue: memqueue.New("mill-bit-report", memqueue.Config{Clock: clk}),
		audit:   memauditlog.New(),
		errQ:    memqueue.New("mill-bit-error", memqueue.Config{Clock: clk}),
	}
}

func (e *env) processor(t *testing.T, mod func(*bitreport.Config)) *bitreport.Processor {
	t.Helper()
	cfg := bitreport.Config{
		Stores: e.opener, Index: e.index, BitLog: e.log, Reports: fsreportstore.Store{Dir: e.dir},
		Observer: &bit.Observer{Stores: e.opener, Index: e.index, AuditLog: e.audit}, BitErrorQueue: e.errQ,
		Requeue: e.requeue, RecheckDelay: 2 * time.Minute, PageSize: 2, TempDir: t.TempDir(), Clock: e.clk,
		Logger: slogtest.New(t, slog.LevelInfo),
	}
	if mod != nil {
		mod(&cfg)
	}
	p, err := bitreport.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *env) index_(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		_, err := e.index.Upsert(t.Context(), contentindex.Entry{
			Item:     contentindex.Item{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: id},
			Checksum: "sum-" + id, Modified: e.clk.Now(),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func (e *env) record(t *testing.T, id string, res bitlog.Result, c int) {
	t.Helper()
	err := e.log.Record(t.Context(), bitlog.Row{RunID: run, Account: "acme", StoreID: "1", StoreKind: "fs", SpaceID: "photos",
		ContentID: id, Result: res, Case: c, ContentChecksum: "c", StorageChecksum: "s", IndexChecksum: "i", AuditChecksum: "a",
		Details: "checked", CheckedAt: e.clk.Now()})
	if err != nil {
		t.Fatal(err)
	}
}

// listed records, as the bit producer does, that it listed n items of
// acme/1/photos in runID (now).
func (e *env) listed(t *testing.T, runID string, n int64) {
	t.Helper()
	err := e.log.FinishSpace(t.Context(), bitlog.RunSpace{RunID: runID, Account: "acme", StoreID: "1", SpaceID: "photos",
		Started: e.clk.Now(), Listed: e.clk.Now(), Expected: n})
	if err != nil {
		t.Fatal(err)
	}
}

// report records, as the bit producer does, that it listed expected items
// of acme/1/photos in the run, and returns the BIT_REPORT it queues then.
func (e *env) report(t *testing.T, expected int64, extra map[string]string) *task.Task {
	t.Helper()
	e.listed(t, run, expected)
	return reportTask(run, &expected, extra)
}

// reportTask is a BIT_REPORT of acme/1/photos as anyone may send it.
func reportTask(runID string, expected *int64, extra map[string]string) *task.Task {
	return task.BitReport{Account: "acme", StoreID: "1", SpaceID: "photos", RunID: runID, Expected: expected, Extra: extra}.Task()
}

func (e *env) reportLines(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, "bit-integrity/acme/1/photos/"+run+".tsv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if lines[0] != strings.Join(bitreport.Header, "\t") {
		t.Fatalf("header %q", lines[0])
	}
	var out [][]string
	for _, l := range lines[1:] {
		f := bitreport.ParseLine(l)
		if len(f) != len(bitreport.Header) {
			t.Fatalf("line %q has %d fields", l, len(f))
		}
		out = append(out, f)
	}
	return out
}

// TestWaitsThenRequeues: a space with fewer results than expected is
// re-sent with a delay and a re-check count; the handler succeeds and
// writes nothing.
func TestWaitsThenRequeues(t *testing.T) {
	e := setup(t, "a", "b")
	e.index_(t, "a", "b")
	e.record(t, "a", bitlog.ResultSuccess, 1)
	p := e.processor(t, nil)
	if err := p.Handle(t.Context(), e.report(t, 2, nil)); err != nil {
		t.Fatal(err)
	}
	msgs := e.requeue.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages re-queued", len(msgs))
	}
	tk, err := task.Decode(msgs[0].Body)
	if err != nil || tk.Get(bitreport.KeyRechecks) != "1" || tk.Attempts != 0 || tk.Get(task.KeyExpected) != "2" {
		t.Fatalf("re-queued %v %v", tk, err)
	}
	if d := msgs[0].VisibleAt.Sub(msgs[0].SentAt); d != 2*time.Minute {
		t.Errorf("delay %v", d)
	}
	if _, err := os.Stat(e.dir); !errors.Is(err, os.ErrNotExist) {
		t.Error("report written for an incomplete space")
	}
	if reps, _ := e.log.Reports(t.Context(), bitlog.ReportFilter{}); len(reps) != 0 {
		t.Error("bit_report row written")
	}

	// Without a Requeue queue: a RetryAfter error.
	p = e.processor(t, func(c *bitreport.Config) { c.Requeue = nil })
	err = p.Handle(t.Context(), e.report(t, 2, nil))
	if d, ok := processors.RetryDelay(err); !ok || d != 2*time.Minute {
		t.Errorf("err = %v", err)
	}
}

// TestCompareAndReport: an item checked and then gone from the index
// becomes an ERROR row; an item missing from storage for the first time is
// not reported (TestMissingReportedInTheSecondRun); the TSV lists every
// item; the bit_report row counts them; a redelivery replaces the file and
// the row.
func TestCompareAndReport(t *testing.T) {
	e := setup(t, "a", "b", "c", "d", "dir/ü x")
	e.index_(t, "a", "b", "c", "e", "dir/ü x")
	e.record(t, "a", bitlog.ResultSuccess, 1)
	e.record(t, "b", bitlog.ResultFailure, 2)
	e.record(t, "c", bitlog.ResultSuccess, 1)
	e.record(t, "d", bitlog.ResultSuccess, 1) // checked, then its index row went away
	e.record(t, "dir/ü x", bitlog.ResultSuccess, 1)
	// Another run's row and another space's row are not part of the report.
	if err := e.log.Record(t.Context(), bitlog.Row{RunID: "other", Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "zz", Result: bitlog.ResultFailure}); err != nil {
		t.Fatal(err)
	}
	if err := e.log.Record(t.Context(), bitlog.Row{RunID: run, Account: "acme", StoreID: "1", SpaceID: "docs", ContentID: "x", Result: bitlog.ResultFailure}); err != nil {
		t.Fatal(err)
	}
	p := e.processor(t, nil)
	for range 2 { // the second pass is a redelivery
		if err := p.Handle(t.Context(), e.report(t, 5, nil)); err != nil {
			t.Fatal(err)
		}
		lines := e.reportLines(t)
		got := map[string]string{}
		for _, f := range lines {
			got[f[5]] = f[6] + "/" + f[7]
			if f[1] != "acme" || f[2] != "1" || f[3] != "fs" || f[4] != "photos" {
				t.Errorf("line %q", f)
			}
		}
		want := map[string]string{"a": "SUCCESS/1", "b": "FAILURE/2", "c": "SUCCESS/1", "d": "ERROR/0", "dir/ü x": "SUCCESS/1"}
		if len(got) != len(want) || len(lines) != len(want) {
			t.Fatalf("report lines %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%q: %s, want %s", k, got[k], v)
			}
		}
		reps, err := e.log.Reports(t.Context(), bitlog.ReportFilter{RunID: run})
		if err != nil || len(reps) != 1 {
			t.Fatalf("reports %v %v", reps, err)
		}
		r := reps[0]
		if r.Result != bitlog.ResultFailure || r.Counts != (bitlog.Counts{Total: 5, Success: 3, Failure: 1, Error: 1}) ||
			r.Location != filepath.Join(e.dir, "bit-integrity/acme/1/photos/"+run+".tsv") {
			t.Errorf("report %+v", r)
		}
	}
	rows, _, err := e.log.Results(t.Context(), bitlog.Filter{RunID: run, SpaceID: "photos", Result: bitlog.ResultError})
	if err != nil || len(rows) != 1 || rows[0].ContentID != "d" {
		t.Errorf("ERROR rows %+v %v", rows, err)
	}
}

// TestAllGoodIsSuccess: no findings → SUCCESS.
func TestAllGoodIsSuccess(t *testing.T) {
	e := setup(t, "a", "b", "c")
	e.index_(t, "a", "b", "c")
	for _, id := range []string{"a", "b", "c"} {
		e.record(t, id, bitlog.ResultSuccess, 1)
	}
	if err := e.processor(t, nil).Handle(t.Context(), e.report(t, 3, nil)); err != nil {
		t.Fatal(err)
	}
	reps, _ := e.log.Reports(t.Context(), bitlog.ReportFilter{})
	if len(reps) != 1 || reps[0].Result != bitlog.ResultSuccess || reps[0].Counts.Total != 3 {
		t.Errorf("%+v", reps)
	}
}

// TestGivesUpAfterMaxRechecks: MaxRechecks × RecheckDelay after the
// producer finished listing the space, the report is written with what
// the log holds; unchecked items are ERROR rows and the result is ERROR.
// Before that, a task claiming it was re-checked MaxRechecks times is
// re-queued all the same: the wait is measured from the producer's record.
func TestGivesUpAfterMaxRechecks(t *testing.T) {
	e := setup(t, "a", "b")
	e.index_(t, "a", "b")
	e.record(t, "a", bitlog.ResultSuccess, 1)
	p := e.processor(t, func(c *bitreport.Config) { c.MaxRechecks = 3 })
	forged := e.report(t, 2, map[string]string{bitreport.KeyRechecks: "3000"})
	if err := p.Handle(t.Context(), forged); err != nil {
		t.Fatal(err)
	}
	if e.requeue.Len() != 1 {
		t.Fatal("a task's claimed re-check count ended the wait")
	}
	if reps, _ := e.log.Reports(t.Context(), bitlog.ReportFilter{}); len(reps) != 0 {
		t.Fatalf("report written %+v", reps)
	}
	e.clk.Advance(3*2*time.Minute - time.Second)
	if err := p.Handle(t.Context(), reportTask(run, nil, map[string]string{bitreport.KeyRechecks: "2"})); err != nil {
		t.Fatal(err)
	}
	if e.requeue.Len() != 2 {
		t.Fatal("gave up before MaxRechecks × RecheckDelay")
	}
	e.clk.Advance(time.Second)
	if err := p.Handle(t.Context(), reportTask(run, nil, map[string]string{bitreport.KeyRechecks: "3"})); err != nil {
		t.Fatal(err)
	}
	if e.requeue.Len() != 2 {
		t.Error("re-queued past MaxRechecks × RecheckDelay")
	}
	reps, _ := e.log.Reports(t.Context(), bitlog.ReportFilter{})
	if len(reps) != 1 || reps[0].Result != bitlog.ResultError || reps[0].Counts != (bitlog.Counts{Total: 2, Success: 1, Error: 1}) {
		t.Errorf("%+v", reps)
	}
}

func TestInvalidTasksArePermanent(t *testing.T) {
	e := setup(t)
	p := e.processor(t, nil)
	for _, tk := range []*task.Task{
		task.New(task.TypeBitReport, map[string]string{"account": "acme"}),
		task.BitReport{Account: "nobody", StoreID: "1", SpaceID: "s"}.Task(),
	} {
		if err := p.Handle(t.Context(), tk); !processors.IsPermanent(err) {
			t.Errorf("%v: %v", tk, err)
		}
	}
}

func TestKey(t *testing.T) {
	now := time.Date(2026, 5, 2, 1, 2, 3, 0, time.UTC)
	if k := bitreport.Key(task.BitReport{Account: "a", StoreID: "1", SpaceID: "s", RunID: run}, now); k != "bit-integrity/a/1/s/"+run+".tsv" {
		t.Error(k)
	}
	if k := bitreport.Key(task.BitReport{Account: "a", StoreID: "1", SpaceID: "s", RunID: "../x"}, now); k != "bit-integrity/a/1/s/20260502T010203Z.tsv" {
		t.Error(k)
	}
}

func TestLineEscapes(t *testing.T) {
	r := bitlog.Row{Account: "a", StoreID: "1", SpaceID: "s", ContentID: "x\ty\nz\\", Result: bitlog.ResultSuccess, Details: "d\r"}
	l := bitreport.Line(r)
	if strings.Count(l, "\n") != 1 || strings.Count(l, "\t") != len(bitreport.Header)-1 {
		t.Fatalf("%q", l)
	}
	f := bitreport.ParseLine(strings.TrimSuffix(l, "\n"))
	if f[5] != r.ContentID || f[12] != r.Details {
		t.Errorf("%q", f)
	}
}

// TestCase11RowsCountForCompletenessOnly: an item deleted after the
// producer listed it has a case-11 row, which completes the space but is
// neither a line of the report nor counted in it (the item is gone; the
// decision table's case 11 is "do nothing").
func TestCase11RowsCountForCompletenessOnly(t *testing.T) {
	e := setup(t, "a", "b")
	e.index_(t, "a", "b")
	e.record(t, "a", bitlog.ResultSuccess, 1)
	e.record(t, "b", bitlog.ResultSuccess, 1)
	e.record(t, "gone", bitlog.ResultSuccess, 11)
	if err := e.processor(t, nil).Handle(t.Context(), e.report(t, 3, nil)); err != nil {
		t.Fatal(err)
	}
	if e.requeue.Len() != 0 {
		t.Fatal("the space with a case-11 row was taken as incomplete")
	}
	lines := e.reportLines(t)
	if len(lines) != 2 || lines[0][5] != "a" || lines[1][5] != "b" {
		t.Errorf("report lines %q, want a and b only", lines)
	}
	reps, _ := e.log.Reports(t.Context(), bitlog.ReportFilter{})
	if len(reps) != 1 || reps[0].Result != bitlog.ResultSuccess || reps[0].Counts != (bitlog.Counts{Total: 2, Success: 2}) {
		t.Errorf("%+v", reps)
	}
}

// TestMissingReportedInTheSecondRun: an item in the index but missing from
// storage is, the first time, looked at again and marked — no row, no
// BIT_ERROR, the report stays SUCCESS; still missing in the next run, it is
// an ERROR row (case 8) and a BIT_ERROR for the bit-error processor. An
// item marked missing and found again is unmarked.
func TestMissingReportedInTheSecondRun(t *testing.T) {
	ctx := t.Context()
	e := setup(t, "a", "back")
	e.index_(t, "a", "back", "gone")
	if _, err := e.audit.Put(ctx, auditlog.Entry{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "gone",
		Action: task.ActionAddContent, Time: e.clk.Now(), Checksum: "sum-gone"}); err != nil {
		t.Fatal(err)
	}
	item := func(id string) contentindex.Item {
		return contentindex.Item{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: id}
	}
	if err := e.index.SetMissing(ctx, item("back"), "20260401T030000Z"); err != nil {
		t.Fatal(err)
	}
	e.record(t, "a", bitlog.ResultSuccess, 1)
	e.record(t, "back", bitlog.ResultSuccess, 1)
	p := e.processor(t, nil)

	// Run 1: first sighting.
	if err := p.Handle(ctx, e.report(t, 2, nil)); err != nil {
		t.Fatal(err)
	}
	lines := e.reportLines(t)
	if len(lines) != 2 {
		t.Fatalf("run 1 report lines %q, want a and back only", lines)
	}
	reps, _ := e.log.Reports(ctx, bitlog.ReportFilter{RunID: run})
	if len(reps) != 1 || reps[0].Result != bitlog.ResultSuccess {
		t.Fatalf("run 1 report %+v, want SUCCESS", reps)
	}
	if e.errQ.Len() != 0 {
		t.Fatal("run 1 sent a BIT_ERROR for a first sighting")
	}
	if g, _ := e.index.Get(ctx, item("gone")); g.MissingRun != run {
		t.Fatalf("gone: %+v, want marked missing in run %s", g, run)
	}
	if g, _ := e.index.Get(ctx, item("back")); g.MissingRun != "" {
		t.Fatalf("back: %+v, want its mark cleared (found in storage)", g)
	}

	// Run 2: still missing.
	const run2 = "20260601T030000Z"
	for _, id := range []string{"a", "back"} {
		if err := e.log.Record(ctx, bitlog.Row{RunID: run2, Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: id,
			Result: bitlog.ResultSuccess, Case: 1}); err != nil {
			t.Fatal(err)
		}
	}
	e.listed(t, run2, 2)
	if err := p.Handle(ctx, reportTask(run2, nil, nil)); err != nil {
		t.Fatal(err)
	}
	rows, _, err := e.log.Results(ctx, bitlog.Filter{RunID: run2, Result: bitlog.ResultError})
	if err != nil || len(rows) != 1 || rows[0].ContentID != "gone" || rows[0].Case != 8 || rows[0].IndexChecksum != "sum-gone" ||
		rows[0].AuditChecksum != "sum-gone" || !strings.Contains(rows[0].Details, "two consecutive runs (first seen in run "+run+")") {
		t.Fatalf("run 2 ERROR rows %+v %v", rows, err)
	}
	reps, _ = e.log.Reports(ctx, bitlog.ReportFilter{RunID: run2})
	if len(reps) != 1 || reps[0].Result != bitlog.ResultError || reps[0].Counts.Error != 1 {
		t.Fatalf("run 2 report %+v, want ERROR with one error", reps)
	}
	msgs := e.errQ.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d BIT_ERROR messages, want 1", len(msgs))
	}
	tk, err := task.Decode(msgs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	be, err := task.BitErrorFrom(tk)
	if err != nil || be.Case != 8 || be.ContentID != "gone" || be.RunID != run2 || be.IndexChecksum != "sum-gone" || be.InternallyResolvable {
		t.Fatalf("BIT_ERROR %+v %v (no other store: not internally resolvable)", be, err)
	}
}
