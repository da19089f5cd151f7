package bitreport_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/processors/bitreport"
)

// TestReportCost: the report's lines carry each verdict's method, bytes
// and archived flag, and the run's cost estimate is written next to it,
// per method, from those rows at the configured table's prices, with the
// table's label and date.
func TestReportCost(t *testing.T) {
	e := setup(t, "a", "b", "c")
	e.index_(t, "a", "b", "c")
	rec := func(id string, m bitlog.Method, n int64, archived bool) {
		err := e.log.Record(t.Context(), bitlog.Row{RunID: run, Account: "acme", StoreID: "1", StoreKind: "fs", SpaceID: "photos",
			ContentID: id, Result: bitlog.ResultSuccess, Case: 1, Details: "checked", Method: m, Bytes: n, Archived: archived, CheckedAt: e.clk.Now()})
		if err != nil {
			t.Fatal(err)
		}
	}
	rec("a", bitlog.MethodRead, 3*pricing.GB, false) // 3 GETs of 1 GiB
	rec("b", bitlog.MethodAtRest, pricing.GB, true)
	rec("c", bitlog.MethodStored, 0, true)
	prices := pricing.Default()
	prices.Label, prices.TakenOn = "test prices", "2026-02-03"
	prices.GetPer1000, prices.HeadPer1000, prices.TransferInRegionPerGB = 1, 2, 0.5
	prices.BatchJob, prices.BatchPerMillionObjects, prices.ComputeChecksumPerGB = 0.25, 1e6, 3
	prices.RestoreFlexiblePer1000, prices.RestoreFlexiblePerGB = 1000, 7
	p := e.processor(t, func(c *bitreport.Config) { c.Prices, c.ReadPartSize = prices, 1<<30 })
	if err := p.Handle(t.Context(), e.report(t, 3, nil)); err != nil {
		t.Fatal(err)
	}
	lines := e.reportLines(t)
	want := map[string][3]string{"a": {"read", "3221225472", "false"}, "b": {"at-rest", "1073741824", "true"}, "c": {"stored", "0", "true"}}
	for _, f := range lines {
		w := want[f[5]]
		if got := [3]string{f[13], f[14], f[15]}; got != w {
			t.Errorf("%s: method, bytes, archived %v; want %v", f[5], got, w)
		}
	}
	b, err := os.ReadFile(filepath.Join(e.dir, "bit-integrity/acme/1/photos/"+run+".cost.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c pricing.Estimate
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("read", c.Read, 3.0/1000*1+3*0.5)
	near("at rest", c.AtRest, 0.25+1+1*3)
	near("stored", c.Stored, 1.0/1000*2)
	near("total", c.Total, c.Read+c.AtRest+c.Stored)
	near("restore (flexible) for comparison", c.RestoreFlexible, 2.0/1000*1000+1*7+(2.0/1000*1+1*0.5))
	if c.Label != "test prices" || c.TakenOn != "2026-02-03" || c.Usage.Read.Objects != 1 || c.Usage.AtRest.Objects != 1 ||
		c.Usage.Stored.Objects != 1 || c.Usage.Archived.Objects != 2 || len(c.Unverified) == 0 {
		t.Errorf("estimate %s", b)
	}
}
