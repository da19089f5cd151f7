package bitreport_test

import (
	"errors"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/notify/memnotify"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/bitreport"
)

// javaReport is a BIT_REPORT as the Java Mill's bit producer writes it
// (BitIntegrityCheckReportTask: account, storeId, spaceId, nothing else).
func javaReport() *task.Task {
	return &task.Task{Type: task.TypeBitReport, Props: map[string]string{
		task.KeyAccount: "acme", task.KeyStoreID: "1", task.KeySpaceID: "photos"}}
}

// recordOutside records a check outside any producer run (what Workman
// records for a Java BIT task, which has no runId).
func (e *env) recordOutside(t *testing.T, id string, res bitlog.Result, c int) {
	t.Helper()
	err := e.log.Record(t.Context(), bitlog.Row{Account: "acme", StoreID: "1", StoreKind: "fs", SpaceID: "photos",
		ContentID: id, Result: res, Case: c, ContentChecksum: "c", StorageChecksum: "s", IndexChecksum: "i", AuditChecksum: "a",
		Details: "checked", CheckedAt: e.clk.Now()})
	if err != nil {
		t.Fatal(err)
	}
}

func (e *env) onlyReport(t *testing.T) bitlog.Report {
	t.Helper()
	reps, err := e.log.Reports(t.Context(), bitlog.ReportFilter{})
	if err != nil || len(reps) != 1 {
		t.Fatalf("reports %+v %v, want one", reps, err)
	}
	return reps[0]
}

// TestJavaReportCountsOnlyWhatMillChecked: a Java-shaped BIT_REPORT means
// what it means in the Java Mill — report the space's bit checks made
// outside a producer run — and is never a silent SUCCESS: an item in the
// space without such a check is an ERROR line, a space of which nothing
// was checked is not a SUCCESS, and rows of Mill's own runs are not
// counted for it.
func TestJavaReportCountsOnlyWhatMillChecked(t *testing.T) {
	t.Run("an item not checked", func(t *testing.T) {
		e := setup(t, "a", "b", "c")
		e.index_(t, "a", "b", "c")
		e.recordOutside(t, "a", bitlog.ResultSuccess, 1)
		e.recordOutside(t, "b", bitlog.ResultSuccess, 1)
		e.record(t, "c", bitlog.ResultSuccess, 1) // a row of a Mill run: not this report's
		var n memnotify.Notifier
		if err := e.processor(t, func(c *bitreport.Config) { c.Notifier = &n }).Handle(t.Context(), javaReport()); err != nil {
			t.Fatalf("a Java-shaped BIT_REPORT was refused: %v", err)
		}
		rep := e.onlyReport(t)
		if rep.Result != bitlog.ResultError || rep.Counts != (bitlog.Counts{Total: 3, Success: 2, Error: 1}) || rep.RunID != "" {
			t.Fatalf("report %+v, want ERROR of 3 (2 SUCCESS, c not checked)", rep)
		}
		if evs := n.Events(); len(evs) != 1 || evs[0].Attributes["result"] != "ERROR" {
			t.Errorf("notified %+v, want the ERROR", evs)
		}
		rows, _, _ := e.log.Results(t.Context(), bitlog.Filter{ContentID: "c", Account: "acme"})
		if len(rows) != 2 || rows[0].RunID != "" || rows[0].Result != bitlog.ResultError {
			t.Errorf("rows of c %+v, want an ERROR outside any run beside the run's row", rows)
		}
	})
	t.Run("nothing checked", func(t *testing.T) {
		e := setup(t, "a", "b")
		e.index_(t, "a", "b")
		if err := e.processor(t, nil).Handle(t.Context(), javaReport()); err != nil {
			t.Fatal(err)
		}
		if rep := e.onlyReport(t); rep.Result == bitlog.ResultSuccess || rep.Counts.Error != 2 {
			t.Fatalf("report %+v, want ERROR: no item was checked", rep)
		}
	})
	t.Run("an empty space", func(t *testing.T) {
		e := setup(t)
		if err := e.processor(t, nil).Handle(t.Context(), javaReport()); err != nil {
			t.Fatal(err)
		}
		if rep := e.onlyReport(t); rep.Result != bitlog.ResultEmpty {
			t.Fatalf("report %+v, want EMPTY", rep)
		}
	})
	t.Run("every item checked", func(t *testing.T) {
		e := setup(t, "a", "b")
		e.index_(t, "a", "b")
		e.recordOutside(t, "a", bitlog.ResultSuccess, 1)
		e.recordOutside(t, "b", bitlog.ResultFailure, 2)
		if err := e.processor(t, nil).Handle(t.Context(), javaReport()); err != nil {
			t.Fatal(err)
		}
		if rep := e.onlyReport(t); rep.Result != bitlog.ResultFailure || rep.Counts != (bitlog.Counts{Total: 2, Success: 1, Failure: 1}) {
			t.Fatalf("report %+v, want FAILURE of 2", rep)
		}
	})
}

// TestJavaReportMissingTwice: an item of the index missing from storage
// is, as in the Java Mill, reported by the second Java-shaped report that
// finds it missing, not the first.
func TestJavaReportMissingTwice(t *testing.T) {
	e := setup(t, "a")
	e.index_(t, "a", "gone")
	e.recordOutside(t, "a", bitlog.ResultSuccess, 1)
	p := e.processor(t, nil)
	if err := p.Handle(t.Context(), javaReport()); err != nil {
		t.Fatal(err)
	}
	if rep := e.onlyReport(t); rep.Counts.Error != 0 || e.errQ.Len() != 0 {
		t.Fatalf("first sighting reported: %+v", rep)
	}
	ent, err := e.index.Get(t.Context(), contentindex.Item{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "gone"})
	if err != nil || ent.MissingRun == "" {
		t.Fatalf("first sighting not marked: %+v %v", ent, err)
	}
	e.clk.Advance(24 * time.Hour)
	if err := p.Handle(t.Context(), javaReport()); err != nil {
		t.Fatal(err)
	}
	if rep := e.onlyReport(t); rep.Counts.Error != 1 || e.errQ.Len() != 1 {
		t.Fatalf("second sighting: report %+v, %d BIT_ERROR", rep, e.errQ.Len())
	}
}

// TestJavaReportWithExpectedIsRefused: a report with an expected count
// but no run is neither Java's shape nor Mill's: refused, nothing written.
func TestJavaReportWithExpectedIsRefused(t *testing.T) {
	e := setup(t, "a")
	e.index_(t, "a")
	e.recordOutside(t, "a", bitlog.ResultSuccess, 1)
	var n memnotify.Notifier
	zero := int64(0)
	err := e.processor(t, func(c *bitreport.Config) { c.Notifier = &n }).Handle(t.Context(), reportTask("", &zero, nil))
	if !processors.IsPermanent(err) || !errors.Is(err, bitreport.ErrNoRun) {
		t.Fatalf("err = %v, want permanent %v", err, bitreport.ErrNoRun)
	}
	e.nothingWritten(t, &n, 1)
}
