package cloudwatchmetrics

import (
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
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

var _ metrics.LimitRecorder = (*Recorder)(nil)

// LimitChanged implements metrics.LimitRecorder: it adds to the
// interval's aggregate.
func (c *Recorder) LimitChanged(store, change string, limit float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limits == nil {
		c.limits = map[string]*limitSeries{}
	}
	s := c.limits[store]
	if s == nil {
		s = &limitSeries{changes: map[string]int64{}}
		c.limits[store] = s
	}
	s.values.add(1, limit, limit, limit)
	s.changes[change]++
}

// takeLimits returns the interval's limit aggregate and starts a new one.
func (c *Recorder) takeLimits() map[string]*limitSeries {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.limits
	c.limits = nil
	return l
}

// restoreLimits merges an unpublished limit aggregate back.
func (c *Recorder) restoreLimits(l map[string]*limitSeries) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for store, s := range l {
		if c.limits == nil {
			c.limits = map[string]*limitSeries{}
		}
		cur := c.limits[store]
		if cur == nil {
			cur = &limitSeries{changes: map[string]int64{}}
			c.limits[store] = cur
		}
		cur.values.add(s.values.count, s.values.sum, s.values.min, s.values.max)
		for change, n := range s.changes {
			cur.changes[change] += n
		}
	}
}

func limitDatums(l map[string]*limitSeries, now time.Time) []cwtypes.MetricDatum {
	stores := make([]string, 0, len(l))
	for k := range l {
		stores = append(stores, k)
	}
	sort.Strings(stores)
	var out []cwtypes.MetricDatum
	for _, store := range stores {
		s := l[store]
		out = append(out, cwtypes.MetricDatum{MetricName: aws.String(MetricStoreRequestLimit), Timestamp: aws.Time(now),
			Dimensions: []cwtypes.Dimension{{Name: aws.String(DimStore), Value: aws.String(store)}},
			Unit:       cwtypes.StandardUnitCountSecond, StatisticValues: &cwtypes.StatisticSet{
				SampleCount: aws.Float64(float64(s.values.count)), Sum: aws.Float64(s.values.sum),
				Minimum: aws.Float64(s.values.min), Maximum: aws.Float64(s.values.max)}})
		changes := make([]string, 0, len(s.changes))
		for k := range s.changes {
			changes = append(changes, k)
		}
		sort.Strings(changes)
		for _, ch := range changes {
			out = append(out, cwtypes.MetricDatum{MetricName: aws.String(MetricStoreRequestLimitChanges), Timestamp: aws.Time(now),
				Dimensions: []cwtypes.Dimension{{Name: aws.String(DimStore), Value: aws.String(store)}, {Name: aws.String(DimChange), Value: aws.String(ch)}},
				Unit:       cwtypes.StandardUnitCount, Value: aws.Float64(float64(s.changes[ch]))})
		}
	}
	return out
}
