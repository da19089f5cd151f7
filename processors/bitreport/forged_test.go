package bitreport_test

import (
	"errors"
	"github.com/millfleet/mill/pkg/notify/memnotify"
	"os"
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/bitreport"
)

// nothingWritten fails unless the processor left no trace: no report row,
// no report file, no notification, no bit log row beyond the n recorded
// by the test, nothing re-queued, no BIT_ERROR.
func (e *env) nothingWritten(t *testing.T, n *memnotify.Notifier, rows int) {
	t.Helper()
	if reps, err := e.log.Reports(t.Context(), bitlog.ReportFilter{}); err != nil || len(reps) != 0 {
		t.Errorf("report rows %+v %v, want none", reps, err)
	}
	if _, err := os.Stat(e.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a report file was written (%v)", err)
	}
	if evs := n.Events(); len(evs) != 0 {
		t.Errorf("notified %+v", evs)
	}
	if got, _, err := e.log.Results(t.Context(), bitlog.Filter{}); err != nil || len(got) != rows {
		t.Errorf("bit log rows %+v %v, want the %d the test recorded", got, err, rows)
	}
	if e.requeue.Len() != 0 || e.errQ.Len() != 0 {
		t.Errorf("%d re-queued, %d BIT_ERROR sent", e.requeue.Len(), e.errQ.Len())
	}
}

// TestForgedReportsAreRefused: a BIT_REPORT whose run the bit producer did
// not record for the space — a fresh run ID claiming 0 or a huge number of
// items, an expected count without a run ID (neither Mill's shape nor
// the Java Mill's, which java_test.go holds to its meaning), the run of another
// space, a run whose listing of the space is not finished — is refused
// with a permanent error naming the rule, and writes nothing: no report
// (so no SUCCESS to silence the next runs), no bit log row, no
// notification.
func TestForgedReportsAreRefused(t *testing.T) {
	e := setup(t, "a", "b", "c")
	e.index_(t, "a", "b", "c")
	e.record(t, "a", bitlog.ResultSuccess, 1)
	// The producer recorded another space in the run, and started (but
	// did not finish) listing photos in a later run.
	if err := e.log.FinishSpace(t.Context(), bitlog.RunSpace{RunID: run, Account: "acme", StoreID: "1", SpaceID: "docs", Expected: 3}); err != nil {
		t.Fatal(err)
	}
	const later = "20260601T030000Z"
	if err := e.log.StartSpace(t.Context(), bitlog.RunSpace{RunID: later, Account: "acme", StoreID: "1", SpaceID: "photos"}); err != nil {
		t.Fatal(err)
	}
	zero, huge := int64(0), int64(1)<<60
	var n memnotify.Notifier
	p := e.processor(t, func(c *bitreport.Config) { c.Notifier = &n })
	for _, tt := range []struct {
		name     string
		runID    string
		expected *int64
		rule     error
	}{
		{"a fresh run claiming 0 items", "20260701T000000Z", &zero, bitreport.ErrUnrecordedRun},
		{"a fresh run claiming many items", "20260701T000001Z", &huge, bitreport.ErrUnrecordedRun},
		{"no run ID but an expected count", "", &zero, bitreport.ErrNoRun},
		{"the run of another space", run, &zero, bitreport.ErrUnrecordedRun},
		{"a listing not finished", later, &zero, bitreport.ErrListing},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Handle(t.Context(), reportTask(tt.runID, tt.expected, nil))
			if !processors.IsPermanent(err) || !errors.Is(err, tt.rule) {
				t.Fatalf("err = %v, want a permanent error: %v", err, tt.rule)
			}
			e.nothingWritten(t, &n, 1)
		})
	}
}

// TestForgedExpectedIsIgnored: the count a report waits for is the
// producer's record. A replayed task claiming fewer items than the
// producer listed waits for all of them; one claiming more does not stall
// a complete space.
func TestForgedExpectedIsIgnored(t *testing.T) {
	e := setup(t, "a", "b", "c")
	e.index_(t, "a", "b", "c")
	e.record(t, "a", bitlog.ResultSuccess, 1)
	e.listed(t, run, 3)
	p := e.processor(t, nil)
	one := int64(1)
	if err := p.Handle(t.Context(), reportTask(run, &one, nil)); err != nil {
		t.Fatal(err)
	}
	if e.requeue.Len() != 1 {
		t.Fatal("a claim of 1 item ended the wait for 3")
	}
	if reps, _ := e.log.Reports(t.Context(), bitlog.ReportFilter{}); len(reps) != 0 {
		t.Fatalf("report written with 1 of 3 results: %+v", reps)
	}
	e.record(t, "b", bitlog.ResultSuccess, 1)
	e.record(t, "c", bitlog.ResultSuccess, 1)
	huge := int64(1) << 40
	if err := p.Handle(t.Context(), reportTask(run, &huge, nil)); err != nil {
		t.Fatal(err)
	}
	if e.requeue.Len() != 1 {
		t.Error("a claim of 2^40 items held back a complete space")
	}
	reps, _ := e.log.Reports(t.Context(), bitlog.ReportFilter{})
	if len(reps) != 1 || reps[0].Result != bitlog.ResultSuccess || reps[0].Counts.Total != 3 {
		t.Errorf("reports %+v, want SUCCESS of 3", reps)
	}
}

// TestNothingCheckedIsEmpty: a run that checked nothing is not a SUCCESS.
// The producer listed an empty space, or its one item is missing for the
// first time (marked, not reported): the report is EMPTY — written, with
// no line, counting nothing — and no one is notified.
func TestNothingCheckedIsEmpty(t *testing.T) {
	for _, tt := range []struct {
		name    string
		indexed []string
		listed  int64
	}{{"an empty space", nil, 0}, {"an item missing for the first time", []string{"gone"}, 0}} {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t)
			e.index_(t, tt.indexed...)
			e.listed(t, run, tt.listed)
			var n memnotify.Notifier
			if err := e.processor(t, func(c *bitreport.Config) { c.Notifier = &n }).Handle(t.Context(), reportTask(run, nil, nil)); err != nil {
				t.Fatal(err)
			}
			reps, _ := e.log.Reports(t.Context(), bitlog.ReportFilter{})
			if len(reps) != 1 || reps[0].Result != bitlog.ResultEmpty || reps[0].Counts != (bitlog.Counts{}) {
				t.Fatalf("reports %+v, want one EMPTY of no item", reps)
			}
			if lines := e.reportLines(t); len(lines) != 0 {
				t.Errorf("report lines %q, want none", lines)
			}
			if evs := n.Events(); len(evs) != 0 {
				t.Errorf("notified %+v", evs)
			}
		})
	}
}
