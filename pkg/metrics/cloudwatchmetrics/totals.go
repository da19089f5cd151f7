package cloudwatchmetrics

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// totals is one interval's aggregate, all that a publication sends. Flush
// takes the Recorder's and starts new ones; a failed publication merges
// what it took back into them, so the next one carries it.
type totals struct {
	tasks  map[seriesKey]*series
	dead   map[seriesKey]int64
	timed  map[timingKey]*timing   // timing.go
	limits map[string]*limitSeries // limits.go
}

func newTotals() *totals {
	return &totals{tasks: map[seriesKey]*series{}, dead: map[seriesKey]int64{}, timed: map[timingKey]*timing{}, limits: map[string]*limitSeries{}}
}

func (t *totals) empty() bool {
	return len(t.tasks) == 0 && len(t.dead) == 0 && len(t.timed) == 0 && len(t.limits) == 0
}

// merge adds o to t.
func (t *totals) merge(o *totals) {
	for k, s := range o.tasks {
		entry(t.tasks, k, newSeries).merge(s)
	}
	for k, n := range o.dead {
		t.dead[k] += n
	}
	for k, s := range o.timed {
		entry(t.timed, k, newTimingSeries).merge(s)
	}
	for store, s := range o.limits {
		entry(t.limits, store, newLimitSeries).merge(s)
	}
}

// datums are the datums of t at now, in a stable order.
func (t *totals) datums(now time.Time) []cwtypes.MetricDatum {
	data := append(taskDatums(t.tasks, t.dead, now), timingDatums(t.timed, now)...)
	return append(data, limitDatums(t.limits, now)...)
}

// entry returns m[k], adding mk() first if m has none.
func entry[K comparable, V any](m map[K]*V, k K, mk func() *V) *V {
	v := m[k]
	if v == nil {
		v = mk()
		m[k] = v
	}
	return v
}

// series aggregates values published as a statistic set.
type series struct {
	count         int64
	sum, min, max float64
}

func newSeries() *series { return &series{} }

func (s *series) add(n int64, sum, mn, mx float64) {
	if s.count == 0 || mn < s.min {
		s.min = mn
	}
	if s.count == 0 || mx > s.max {
		s.max = mx
	}
	s.count += n
	s.sum += sum
}

func (s *series) merge(o *series) { s.add(o.count, o.sum, o.min, o.max) }

// statisticSet is the datum of s: its sample count, sum, minimum and
// maximum.
func (s *series) statisticSet(name string, unit cwtypes.StandardUnit, now time.Time, dims ...cwtypes.Dimension) cwtypes.MetricDatum {
	d := datum(name, unit, now, dims...)
	d.StatisticValues = &cwtypes.StatisticSet{
		SampleCount: aws.Float64(float64(s.count)), Sum: aws.Float64(s.sum),
		Minimum: aws.Float64(s.min), Maximum: aws.Float64(s.max)}
	return d
}

// datum is a datum of metric name at now without its value(s).
func datum(name string, unit cwtypes.StandardUnit, now time.Time, dims ...cwtypes.Dimension) cwtypes.MetricDatum {
	return cwtypes.MetricDatum{MetricName: aws.String(name), Dimensions: dims, Timestamp: aws.Time(now), Unit: unit}
}

// countDatum is the datum of a count n.
func countDatum(name string, n int64, now time.Time, dims ...cwtypes.Dimension) cwtypes.MetricDatum {
	d := datum(name, cwtypes.StandardUnitCount, now, dims...)
	d.Value = aws.Float64(float64(n))
	return d
}

func dim(name, value string) cwtypes.Dimension {
	return cwtypes.Dimension{Name: aws.String(name), Value: aws.String(value)}
}
