package bitreport_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/duradb"
	"github.com/millfleet/mill/pkg/duradb/memduradb"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/bitreport"
)

// TestPublished: a completed report reaches Config.Published after the bit
// log has it, naming the admin copy when one is made (what DuraStore
// serves), else the reports store's file; an outage of DuraCloud's
// database fails the task as that dependency's outage.
func TestPublished(t *testing.T) {
	e := setup(t, "a")
	e.index_(t, "a")
	e.record(t, "a", bitlog.ResultFailure, 3)
	db := memduradb.New()
	auditQ := memqueue.New("mill-audit", memqueue.Config{Clock: e.clk})
	with := e.processor(t, func(c *bitreport.Config) {
		c.AdminSpace, c.AuditQueue, c.Published = true, auditQ, duradb.NewReports(db, nil)
	})
	if err := with.Handle(t.Context(), e.report(t, 1, nil)); err != nil {
		t.Fatal(err)
	}
	got, err := db.BitReports(t.Context(), "acme", "1", "photos")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ReportSpaceID != bitreport.AdminSpaceID ||
		!strings.HasPrefix(got[0].ReportContentID, "bit-integrity/photos/1/bit-integrity_acme_1_photos_") ||
		got[0].Result != duradb.JavaFailure || !got[0].Completed.Equal(e.clk.Now()) {
		t.Fatalf("bit_report = %+v, want the FAILURE naming the admin copy", got)
	}
	if reps, err := e.log.Reports(t.Context(), bitlog.ReportFilter{}); err != nil || len(reps) != 1 {
		t.Fatalf("the bit log's reports: %v, %v; want the one published", reps, err)
	}

	var rec recorder
	without := e.processor(t, func(c *bitreport.Config) { c.Published = &rec })
	if err := without.Handle(t.Context(), e.report(t, 1, nil)); err != nil {
		t.Fatal(err)
	}
	if len(rec.calls) != 1 || rec.calls[0] != "||"+string(bitlog.ResultFailure) {
		t.Fatalf("Published calls = %q, want one without an admin copy", rec.calls)
	}

	db.SetDown(errors.New("connection refused"))
	err = with.Handle(t.Context(), e.report(t, 1, nil))
	if dep, ok := processors.IsUnavailable(err); !ok || dep != duradb.DependencyMySQL {
		t.Fatalf("Handle during the outage: %v; want an outage of %s", err, duradb.DependencyMySQL)
	}
}

type recorder struct{ calls []string }

func (r *recorder) ReportPublished(_ context.Context, rep bitlog.Report, space, id string) error {
	r.calls = append(r.calls, space+"|"+id+"|"+string(rep.Result))
	return nil
}
