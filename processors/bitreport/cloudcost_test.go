package bitreport_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/processors/bitreport"
)

// TestReportCostOutsideAWS: the cost estimate of a run over a store
// outside AWS prices its reads at that provider's prices, counting every
// byte read as the provider's internet egress (a Workman outside that
// cloud), and gives the figure of a Workman inside it for comparison. The
// store here is registered as a gcs store; its provider is the fs stand-in
// (the report reads only the registry's kind for the prices).
func TestReportCostOutsideAWS(t *testing.T) {
	e := setup(t, "a", "b")
	e.index_(t, "a", "b")
	reg := &stores.Registry{Accounts: []stores.Account{{ID: "acme", Status: stores.StatusActive, Stores: []stores.Store{
		{ID: "1", Primary: true, Kind: storage.KindGCS, Bucket: "acme-copy"},
	}}}}
	e.opener = stores.NewOpener(reg, stores.OpenerConfig{GCS: func(context.Context, stores.Store) (storage.Provider, error) {
		return e.store, nil
	}})
	for id, n := range map[string]int64{"a": 3 * pricing.GB, "b": 0} {
		m := bitlog.MethodRead
		if n == 0 {
			m = bitlog.MethodStored
		}
		err := e.log.Record(t.Context(), bitlog.Row{RunID: run, Account: "acme", StoreID: "1", StoreKind: "gcs", SpaceID: "photos",
			ContentID: id, Result: bitlog.ResultSuccess, Case: 1, Details: "checked", Method: m, Bytes: n, CheckedAt: e.clk.Now()})
		if err != nil {
			t.Fatal(err)
		}
	}
	prices := pricing.Default()
	prices.Providers[storage.KindGCS] = pricing.ProviderPrices{Label: "test gcs prices", TakenOn: "2026-03-04", ReadPer1000: 2, EgressPerGB: 0.5}
	p := e.processor(t, func(c *bitreport.Config) { c.Prices, c.ReadPartSize = prices, 1<<30 })
	if err := p.Handle(t.Context(), e.report(t, 2, nil)); err != nil {
		t.Fatal(err)
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
	near("egress", c.Egress, 3*0.5)
	near("read inside the provider", c.ReadInsideProvider, 3.0/1000*2)
	near("read", c.Read, 3.0/1000*2+3*0.5)
	near("stored", c.Stored, 1.0/1000*2)
	near("total", c.Total, c.Read+c.Stored)
	if c.Provider != "gcs" || c.ProviderLabel != "test gcs prices" || c.ProviderTakenOn != "2026-03-04" {
		t.Errorf("estimate %s: want the gcs prices named", b)
	}
}
