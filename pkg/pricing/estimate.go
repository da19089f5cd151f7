package pricing

import (
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/storage"
)

// Count is how many objects a method covered, the requests it made and the
// bytes it hashed (or, for Archived, the bytes known of the copies).
type Count struct {
	Objects  int64 `json:"objects"`
	Requests int64 `json:"requests"`
	Bytes    int64 `json:"bytes"`
}

// Usage is what one run's checks did, counted from its bit-log rows (Add).
type Usage struct {
	Read   Count `json:"read"`   // bytes read and hashed: ranged GETs
	AtRest Count `json:"atRest"` // computed by S3 at rest (Batch Operations)
	Stored Count `json:"stored"` // nothing hashed: a HEAD each
	// Archived are the copies in an archival class, whatever their
	// method: what a restore would have had to bring back.
	Archived Count `json:"archived"`
	// Jobs are the Batch Operations jobs of the at-rest checks (at least
	// one when any copy was checked at rest).
	Jobs int64 `json:"jobs"`
	// PartSize is the size of a read's ranged GETs (default
	// storage.DefaultPartSize): a read of n bytes is ⌈n/PartSize⌉ GETs,
	// at least one.
	PartSize int64 `json:"-"`
}

// Add counts one row: its method, the bytes it hashed, whether the copy
// was archived. A row of no method (written before methods were
// recorded) counts as stored.
func (u *Usage) Add(m bitlog.Method, bytes int64, archived bool) {
	bytes = max(bytes, 0)
	switch m {
	case bitlog.MethodRead:
		ps := u.PartSize
		if ps <= 0 {
			ps = storage.DefaultPartSize
		}
		u.Read.Objects++
		u.Read.Requests += max(1, (bytes+ps-1)/ps)
		u.Read.Bytes += bytes
	case bitlog.MethodAtRest:
		u.AtRest.Objects++
		u.AtRest.Bytes += bytes
	default:
		u.Stored.Objects++
		u.Stored.Requests++
	}
	if archived {
		u.Archived.Objects++
		u.Archived.Requests++
		u.Archived.Bytes += bytes
	}
}

// Estimate is what a Usage costs at a table's prices, USD. It is an
// estimate from the table, labelled with it, never a bill.
type Estimate struct {
	Label      string   `json:"label"`
	Region     string   `json:"region"`
	TakenOn    string   `json:"pricesTakenOn"`
	Unverified []string `json:"unverifiedPrices,omitempty"`
	Usage      Usage    `json:"usage"`
	// Read: the GETs and the bytes moved in the region (Mill beside its
	// buckets); ReadOutside: the same reads from outside AWS (transfer
	// out), for comparison.
	Read        float64 `json:"readUSD"`
	ReadOutside float64 `json:"readOutsideAWSUSD"`
	// AtRest: the Batch Operations jobs, objects and Compute checksum GB.
	AtRest float64 `json:"atRestUSD"`
	// Stored: the HEADs of checks that hashed nothing.
	Stored float64 `json:"storedUSD"`
	// Total: Read + AtRest + Stored.
	Total float64 `json:"totalUSD"`
	// A store outside AWS (Table.EstimateFor): the provider (its store
	// kind) and its prices' label and date; Egress, the bytes read at its
	// internet egress price (part of Read and Total: a Workman outside
	// that cloud); ReadInsideProvider, the reads from a Workman inside it
	// (requests only), for comparison.
	Provider           string  `json:"provider,omitempty"`
	ProviderLabel      string  `json:"providerLabel,omitempty"`
	ProviderTakenOn    string  `json:"providerPricesTakenOn,omitempty"`
	Egress             float64 `json:"egressUSD"`
	ReadInsideProvider float64 `json:"readInsideProviderUSD,omitempty"`
	// RestoreFlexible and RestoreDeepArchive: what restoring the archived
	// copies (Standard tier) and reading them would have cost instead —
	// for comparison; the per-GB part counts only the bytes the rows
	// know (a copy not hashed records 0 bytes).
	RestoreFlexible    float64 `json:"restoreFlexibleForComparisonUSD"`
	RestoreDeepArchive float64 `json:"restoreDeepArchiveForComparisonUSD"`
}

// Estimate prices u.
func (t *Table) Estimate(u Usage) Estimate {
	gb := func(b int64) float64 { return float64(b) / GB }
	per1000 := func(n int64, p float64) float64 { return float64(n) / 1000 * p }
	if u.AtRest.Objects > 0 {
		u.Jobs = max(u.Jobs, 1)
	}
	e := Estimate{Label: t.Label, Region: t.Region, TakenOn: t.TakenOn, Unverified: t.Unverified, Usage: u}
	e.Read = per1000(u.Read.Requests, t.GetPer1000) + gb(u.Read.Bytes)*t.TransferInRegionPerGB
	e.ReadOutside = per1000(u.Read.Requests, t.GetPer1000) + gb(u.Read.Bytes)*t.TransferOutPerGB
	e.AtRest = float64(u.Jobs)*t.BatchJob + float64(u.AtRest.Objects)/1e6*t.BatchPerMillionObjects + gb(u.AtRest.Bytes)*t.ComputeChecksumPerGB
	e.Stored = per1000(u.Stored.Requests, t.HeadPer1000)
	e.Total = e.Read + e.AtRest + e.Stored
	readBack := per1000(u.Archived.Requests, t.GetPer1000) + gb(u.Archived.Bytes)*t.TransferInRegionPerGB
	e.RestoreFlexible = per1000(u.Archived.Requests, t.RestoreFlexiblePer1000) + gb(u.Archived.Bytes)*t.RestoreFlexiblePerGB + readBack
	e.RestoreDeepArchive = per1000(u.Archived.Requests, t.RestoreDeepArchivePer1000) + gb(u.Archived.Bytes)*t.RestoreDeepArchivePerGB + readBack
	return e
}
