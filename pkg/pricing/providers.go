package pricing

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/millfleet/mill/pkg/storage"
)

// Stores outside AWS. A copy to, or a check of, a store on another cloud
// moves its bytes across the internet: a check read by a Workman outside
// that cloud pays the provider's internet egress for every byte hashed (a
// copy from S3 pays AWS's transfer out, TransferOutPerGB). A table prices
// those providers in "providers", by store kind (optional: a table
// without it prices every store as S3):
//
//	"providers": {
//	  "gcs":   {"label": "…", "takenOn": "2026-11-27", "readPer1000": 0.0004, "egressPerGB": 0.12},
//	  "azure": {"label": "…", "takenOn": "2026-11-27", "readPer1000": 0.0004, "egressPerGB": 0.087}
//	}
//
// The default table's figures, all unverified (none could be read from the
// providers' pages when it was made; set them from the pricing pages
// before relying on them): GCS Standard storage Class B operations (reads,
// metadata) $0.004 per 10,000, and internet egress (Premium Tier,
// worldwide, first TiB) $0.12/GB,
// https://cloud.google.com/storage/pricing; Azure Blob Hot read operations
// $0.004 per 10,000 (LRS) and internet egress (Microsoft premium global
// network, first 10 TB after the free 100 GB) $0.087/GB,
// https://azure.microsoft.com/pricing/details/storage/blobs/ and
// https://azure.microsoft.com/pricing/details/bandwidth/.
//
// Running a Workman inside that cloud (it needs only SQS to take work)
// makes its checks of the cloud's stores pay no egress: an estimate gives
// that figure too (ReadInsideProvider).

// ProviderPrices are a storage provider's prices, USD.
type ProviderPrices struct {
	// Label says what the figures are; TakenOn the date (YYYY-MM-DD) they
	// were collected.
	Label   string `json:"label"`
	TakenOn string `json:"takenOn"`
	// ReadPer1000: a GET or metadata request (GCS Class B, Azure read
	// operations), per 1,000.
	ReadPer1000 float64 `json:"readPer1000"`
	// EgressPerGB: internet egress out of the provider's cloud.
	EgressPerGB float64 `json:"egressPerGB"`
	// Unverified names the fields whose figures were not confirmed.
	Unverified []string `json:"unverified,omitempty"`
}

// priced are the store kinds a table may price in "providers".
var priced = []storage.Kind{storage.KindGCS, storage.KindAzure}

// checkProviders validates a table's "providers".
func (t *Table) checkProviders() error {
	var errs []error
	for kind, p := range t.Providers {
		what := fmt.Sprintf("\"providers\" %q", kind)
		if !slices.Contains(priced, kind) {
			errs = append(errs, fmt.Errorf("%s: not a store kind priced outside AWS (want gcs or azure)", what))
			continue
		}
		for name, v := range map[string]float64{"readPer1000": p.ReadPer1000, "egressPerGB": p.EgressPerGB} {
			if math.IsNaN(v) || v < 0 || v > MaxPrice {
				errs = append(errs, fmt.Errorf("%s: %q is %v: want 0..%d", what, name, v, MaxPrice))
			}
		}
		if d, err := time.Parse(time.DateOnly, p.TakenOn); err != nil || d.Year() < 2006 {
			errs = append(errs, fmt.Errorf("%s: \"takenOn\" %q: want the date the prices were collected, YYYY-MM-DD", what, p.TakenOn))
		}
		if len(p.Label) > 300 {
			errs = append(errs, fmt.Errorf("%s: \"label\" is %d bytes: want at most 300", what, len(p.Label)))
		}
		for _, u := range p.Unverified {
			if u != "readPer1000" && u != "egressPerGB" {
				errs = append(errs, fmt.Errorf("%s: \"unverified\" names %q, which is not a price", what, u))
			}
		}
	}
	return errors.Join(errs...)
}

// EstimateFor prices u for a store of kind: as Estimate for an s3 or fs
// store (or a kind the table does not price), else at the provider's
// prices, with a Workman outside its cloud — every byte read is that
// provider's internet egress (Egress, counted in Read and Total) — and,
// for comparison, with a Workman inside it (ReadInsideProvider: the
// requests only).
func (t *Table) EstimateFor(kind storage.Kind, u Usage) Estimate {
	e := t.Estimate(u)
	p, ok := t.Providers[kind]
	if !ok {
		return e
	}
	gb := func(b int64) float64 { return float64(b) / GB }
	per1000 := func(n int64, price float64) float64 { return float64(n) / 1000 * price }
	e.Provider, e.ProviderLabel, e.ProviderTakenOn = string(kind), p.Label, p.TakenOn
	e.Unverified = slices.Clone(e.Unverified)
	for _, f := range p.Unverified {
		e.Unverified = append(e.Unverified, string(kind)+"."+f)
	}
	e.ReadInsideProvider = per1000(u.Read.Requests, p.ReadPer1000)
	e.Egress = gb(u.Read.Bytes) * p.EgressPerGB
	e.Read = e.ReadInsideProvider + e.Egress
	e.ReadOutside = e.Read
	e.Stored = per1000(u.Stored.Requests, p.ReadPer1000)
	// No archival tiers or at-rest checksums are priced outside AWS.
	e.AtRest, e.RestoreFlexible, e.RestoreDeepArchive = 0, 0, 0
	e.Total = e.Read + e.Stored
	return e
}
