package cloudwatchmetrics

import (
	"math"
	"sort"
	"time"

	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/millfleet/mill/pkg/metrics"
)

// Queue-wait metrics (metrics.TaskTiming), dimensions Queue and TaskType.
// They are published as values and counts (PutMetricData Values/Counts),
// which CloudWatch keeps as a distribution: p50 and p99 are its p50 and
// p99 statistics (a statistic set would give only min, max and average).
const (
	MetricQueueWait = "QueueWait" // Milliseconds, send (SQS SentTimestamp) to start
	MetricRunTime   = "RunTime"   // Milliseconds, how long the task ran
	MetricAttempts  = "Attempts"  // Count, the attempt number (1 = first)
	DimQueue        = "Queue"

	// maxValuesPerDatum is PutMetricData's limit of values per datum.
	maxValuesPerDatum = 150
)

type timingKey struct {
	queue, typ string
}

// distribution counts values (rounded by quantize) of one series.
type distribution map[float64]float64

// timing is the interval's distributions of one queue and task type.
type timing struct {
	wait, run, attempts distribution
}

func newTimingSeries() *timing {
	return &timing{wait: distribution{}, run: distribution{}, attempts: distribution{}}
}

func (t *timing) merge(o *timing) {
	for _, p := range [][2]distribution{{t.wait, o.wait}, {t.run, o.run}, {t.attempts, o.attempts}} {
		for v, n := range p[1] {
			p[0][v] += n
		}
	}
}

// quantize rounds ms to two significant digits (at most 5% off), so an
// interval's distinct values stay few (90 a decade) whatever the number
// of tasks; values under 1 ms round to 0.1 ms.
func quantize(ms float64) float64 {
	if ms <= 0 {
		return 0
	}
	if ms < 1 {
		return math.Round(ms*10) / 10
	}
	scale := math.Pow(10, math.Floor(math.Log10(ms))-1)
	return math.Round(ms/scale) * scale
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

var _ metrics.TaskTimer = (*Recorder)(nil)

// TaskTimed implements metrics.TaskTimer: it adds to the interval's
// distributions, published with the other metrics (no request of its own).
func (c *Recorder) TaskTimed(tt metrics.TaskTiming) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := entry(c.interval.timed, timingKey{tt.Queue, c.labels.Label(tt.Type)}, newTimingSeries)
	s.wait[quantize(millis(tt.Wait))]++
	s.run[quantize(millis(tt.Run))]++
	s.attempts[float64(tt.Attempts)]++
}

// timingDatums are the datums of the distributions: one per metric and
// series, or more when a distribution has over 150 distinct values.
func timingDatums(timed map[timingKey]*timing, now time.Time) []cwtypes.MetricDatum {
	keys := make([]timingKey, 0, len(timed))
	for k := range timed {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].queue != keys[j].queue {
			return keys[i].queue < keys[j].queue
		}
		return keys[i].typ < keys[j].typ
	})
	var out []cwtypes.MetricDatum
	for _, k := range keys {
		dims := []cwtypes.Dimension{dim(DimQueue, k.queue), dim(DimTaskType, k.typ)}
		s := timed[k]
		for _, m := range []struct {
			name string
			unit cwtypes.StandardUnit
			d    distribution
		}{
			{MetricQueueWait, cwtypes.StandardUnitMilliseconds, s.wait},
			{MetricRunTime, cwtypes.StandardUnitMilliseconds, s.run},
			{MetricAttempts, cwtypes.StandardUnitCount, s.attempts},
		} {
			values := make([]float64, 0, len(m.d))
			for v := range m.d {
				values = append(values, v)
			}
			sort.Float64s(values)
			for len(values) > 0 {
				n := min(len(values), maxValuesPerDatum)
				counts := make([]float64, n)
				for i, v := range values[:n] {
					counts[i] = m.d[v]
				}
				d := datum(m.name, m.unit, now, dims...)
				d.Values, d.Counts = values[:n:n], counts
				out = append(out, d)
				values = values[n:]
			}
		}
	}
	return out
}
