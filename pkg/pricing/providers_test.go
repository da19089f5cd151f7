package pricing

import (
	"math"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/storage"
)

// TestProviders: the default table prices GCS and Azure (labelled,
// dated, unverified), a table without "providers" still parses, and bad
// provider entries are refused.
func TestProviders(t *testing.T) {
	d := Default()
	for _, k := range []storage.Kind{storage.KindGCS, storage.KindAzure} {
		p, ok := d.Providers[k]
		if !ok || p.EgressPerGB <= 0 || p.TakenOn == "" || !strings.Contains(p.Label, "estimate") || len(p.Unverified) != 2 {
			t.Errorf("default %s prices %+v: want egress, a date, a label and both figures marked unverified", k, p)
		}
	}
	without := strings.Split(string(defaultJSON), `,
  "providers"`)[0] + "\n}"
	if tb, err := Parse([]byte(without), "old.json"); err != nil || len(tb.Providers) != 0 {
		t.Fatalf("a table without providers: %+v, %v", tb, err)
	}
	good := string(defaultJSON)
	for name, tc := range map[string]struct{ body, want string }{
		"unknown kind":     {strings.Replace(good, `"gcs": {`, `"tape": {"label": "", "takenOn": "2026-01-01", "readPer1000": 0, "egressPerGB": 0}, "gcs": {`, 1), `"tape": not a store kind`},
		"s3 as a provider": {strings.Replace(good, `"gcs": {`, `"s3": {"label": "", "takenOn": "2026-01-01", "readPer1000": 0, "egressPerGB": 0}, "gcs": {`, 1), `"s3": not a store kind`},
		"negative egress":  {strings.Replace(good, `"egressPerGB": 0.12`, `"egressPerGB": -1`, 1), `"egressPerGB" is -1`},
		"no date":          {strings.Replace(good, `"takenOn": "2026-11-27", "readPer1000": 0.0004, "egressPerGB": 0.12`, `"takenOn": "", "readPer1000": 0.0004, "egressPerGB": 0.12`, 1), `"takenOn" ""`},
		"unknown field":    {strings.Replace(good, `"egressPerGB": 0.12`, `"egressPerGB": 0.12, "ingressPerGB": 0`, 1), `unknown field "ingressPerGB"`},
		"bad unverified":   {strings.Replace(good, `"egressPerGB": 0.12, "unverified": ["readPer1000"`, `"egressPerGB": 0.12, "unverified": ["storage"`, 1), `names "storage"`},
	} {
		if _, err := Parse([]byte(tc.body), "prices.json"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error saying %q", name, err, tc.want)
		}
	}
}

// TestEstimateFor: a store outside AWS is priced at its provider's
// prices, every byte read as its internet egress; an s3 or fs store, or a
// kind the table does not price, as Estimate prices it.
func TestEstimateFor(t *testing.T) {
	tb := Default()
	tb.Providers = map[storage.Kind]ProviderPrices{storage.KindAzure: {Label: "az", TakenOn: "2026-01-01", ReadPer1000: 0.5, EgressPerGB: 0.08, Unverified: []string{"egressPerGB"}}}
	u := Usage{PartSize: GB}
	u.Add(bitlog.MethodRead, 2*GB+1, false) // 3 GETs
	u.Add(bitlog.MethodStored, 0, false)
	for _, k := range []storage.Kind{storage.KindS3, storage.KindFS, storage.KindGCS} {
		if got, want := tb.EstimateFor(k, u), tb.Estimate(u); got.Total != want.Total || got.Egress != 0 || got.Provider != "" {
			t.Errorf("%s: %+v, want Estimate's %+v", k, got, want)
		}
	}
	e := tb.EstimateFor(storage.KindAzure, u)
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	gb := float64(2*GB+1) / GB
	near("egress", e.Egress, gb*0.08)
	near("inside", e.ReadInsideProvider, 3.0/1000*0.5)
	near("read", e.Read, 3.0/1000*0.5+gb*0.08)
	near("stored", e.Stored, 1.0/1000*0.5)
	near("total", e.Total, e.Read+e.Stored)
	if e.Provider != "azure" || e.ProviderLabel != "az" || !strings.Contains(strings.Join(e.Unverified, ","), "azure.egressPerGB") {
		t.Errorf("estimate %+v: want the provider, its label and its unverified figure named", e)
	}
	if strings.Contains(strings.Join(tb.Unverified, ","), "azure.") {
		t.Error("EstimateFor changed the table's own unverified list")
	}
}
