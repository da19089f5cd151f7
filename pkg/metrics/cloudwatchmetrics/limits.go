package cloudwatchmetrics

import (
	"maps"
	"slices"
	"time"

	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/millfleet/mill/pkg/metrics"
)

// The per-store request limit metrics (metrics.LimitRecorder).
const (
	// MetricStoreRequestLimit: the limits a store had in the interval,
	// requests/s (statistic set; 0: unlimited), dimension Store.
	MetricStoreRequestLimit = "StoreRequestLimit"
	// MetricStoreRequestLimitChanges: Count, dimensions Store, Change.
	MetricStoreRequestLimitChanges = "StoreRequestLimitChanges"
	DimStore                       = "Store"
	DimChange                      = "Change"
)

// limitSeries aggregates one store's limit changes in an interval.
type limitSeries struct {
	values  series
	changes map[string]int64
}

func newLimitSeries() *limitSeries { return &limitSeries{changes: map[string]int64{}} }

func (s *limitSeries) merge(o *limitSeries) {
	s.values.merge(&o.values)
	for change, n := range o.changes {
		s.changes[change] += n
	}
}

var _ metrics.LimitRecorder = (*Recorder)(nil)

// LimitChanged implements metrics.LimitRecorder: it adds to the
// interval's aggregate.
func (c *Recorder) LimitChanged(store, change string, limit float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := entry(c.interval.limits, store, newLimitSeries)
	s.values.add(1, limit, limit, limit)
	s.changes[change]++
}

// limitDatums are the datums of the stores' limit totals.
func limitDatums(l map[string]*limitSeries, now time.Time) []cwtypes.MetricDatum {
	var out []cwtypes.MetricDatum
	for _, store := range slices.Sorted(maps.Keys(l)) {
		s := l[store]
		out = append(out, s.values.statisticSet(MetricStoreRequestLimit, cwtypes.StandardUnitCountSecond, now, dim(DimStore, store)))
		for _, ch := range slices.Sorted(maps.Keys(s.changes)) {
			out = append(out, countDatum(MetricStoreRequestLimitChanges, s.changes[ch], now, dim(DimStore, store), dim(DimChange, ch)))
		}
	}
	return out
}
