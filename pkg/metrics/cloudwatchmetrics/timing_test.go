package cloudwatchmetrics_test

import (
	"context"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/metrics"
	"github.com/millfleet/mill/pkg/metrics/cloudwatchmetrics"
	"github.com/millfleet/mill/pkg/task"
)

// capture records the datums of every call.
type capture struct {
	counting
	data []cwtypes.MetricDatum
}

func (c *capture) PutMetricData(ctx context.Context, in *cloudwatch.PutMetricDataInput, o ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error) {
	c.data = append(c.data, in.MetricData...)
	return c.counting.PutMetricData(ctx, in, o...)
}

// percentile of the values/counts of every datum of metric name: the
// smallest value with at least q of the count at or below it.
func percentile(t *testing.T, data []cwtypes.MetricDatum, name string, q float64) (float64, float64) {
	t.Helper()
	counts := map[float64]float64{}
	var total float64
	for _, d := range data {
		if aws.ToString(d.MetricName) != name {
			continue
		}
		if len(d.Values) > 150 || len(d.Values) != len(d.Counts) {
			t.Fatalf("%s datum with %d values and %d counts", name, len(d.Values), len(d.Counts))
		}
		for i, v := range d.Values {
			counts[v] += d.Counts[i]
			total += d.Counts[i]
		}
	}
	vs := make([]float64, 0, len(counts))
	for v := range counts {
		vs = append(vs, v)
	}
	sort.Float64s(vs)
	var acc float64
	for _, v := range vs {
		acc += counts[v]
		if acc >= q*total {
			return v, total
		}
	}
	return math.NaN(), total
}

// TestTaskTimedValuesAndCounts: 10,000 tasks' waits (1..10,000 ms), run
// times and attempts go out in the interval's one PutMetricData call as
// values and counts, at most 150 values a datum, from which p50 and p99
// come out within the 5% of the rounding.
func TestTaskTimedValuesAndCounts(t *testing.T) {
	cc := &capture{}
	cw, err := cloudwatchmetrics.New(cc, cloudwatchmetrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var r metrics.TaskTimer = cw
	for i := 1; i <= 10000; i++ {
		r.TaskTimed(metrics.TaskTiming{Queue: "mill-bit", Type: task.TypeBit,
			Wait: time.Duration(i) * time.Millisecond, Run: time.Duration(i%100) * time.Microsecond * 10, Attempts: 1 + i%3})
	}
	cw.TaskDone(task.TypeBit, "success", time.Second)
	if err := cw.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := cc.calls.Load(); c != 1 {
		t.Fatalf("PutMetricData calls %d, want 1", c)
	}
	for _, c := range []struct {
		q, want float64
	}{{0.5, 5000}, {0.99, 9900}} {
		got, total := percentile(t, cc.data, cloudwatchmetrics.MetricQueueWait, c.q)
		if total != 10000 || math.Abs(got-c.want) > 0.05*c.want {
			t.Errorf("QueueWait p%v = %v of %v samples, want %v ±5%%", c.q*100, got, total, c.want)
		}
	}
	if got, total := percentile(t, cc.data, cloudwatchmetrics.MetricAttempts, 0.99); got != 3 || total != 10000 {
		t.Errorf("Attempts p99 %v of %v", got, total)
	}
	if _, total := percentile(t, cc.data, cloudwatchmetrics.MetricRunTime, 0.5); total != 10000 {
		t.Errorf("RunTime samples %v", total)
	}
	for _, d := range cc.data {
		if aws.ToString(d.MetricName) == cloudwatchmetrics.MetricQueueWait {
			if len(d.Dimensions) != 2 || aws.ToString(d.Dimensions[0].Value) != "mill-bit" || aws.ToString(d.Dimensions[1].Value) != "BIT" || d.Unit != cwtypes.StandardUnitMilliseconds {
				t.Fatalf("QueueWait datum %+v", d)
			}
		}
	}
	// Nothing new: the next interval sends nothing.
	if err := cw.Flush(context.Background()); err != nil || cc.calls.Load() != 1 {
		t.Fatalf("empty flush: %v, calls %d", err, cc.calls.Load())
	}
}

// TestTaskTimedKeptAcrossAFailedPublication: distributions not published
// go out with the next publication.
func TestTaskTimedKeptAcrossAFailedPublication(t *testing.T) {
	cc := &capture{}
	cw, err := cloudwatchmetrics.New(cc, cloudwatchmetrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cc.fail.Store(true)
	cw.TaskTimed(metrics.TaskTiming{Queue: "q", Type: task.TypeDup, Wait: time.Second, Attempts: 1})
	if err := cw.Flush(context.Background()); err == nil {
		t.Fatal("flush succeeded through an outage")
	}
	cc.fail.Store(false)
	cc.data = nil
	cw.TaskTimed(metrics.TaskTiming{Queue: "q", Type: task.TypeDup, Wait: time.Second, Attempts: 2})
	if err := cw.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, total := percentile(t, cc.data, cloudwatchmetrics.MetricQueueWait, 0.5); total != 2 {
		t.Fatalf("QueueWait samples %v after the retry, want 2", total)
	}
}

// TestTaskTimedEmulator publishes the distributions to moto and reads their
// sample count back.
func TestTaskTimedEmulator(t *testing.T) {
	cfg := testenv.AWS(t)
	client := cfg.CloudWatch()
	ns := "MillTest/" + testenv.Unique()
	cw, err := cloudwatchmetrics.New(client, cloudwatchmetrics.Config{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		cw.TaskTimed(metrics.TaskTiming{Queue: "mill-bit", Type: task.TypeBit, Wait: time.Duration(i) * time.Second, Run: time.Second, Attempts: 1})
	}
	ctx := context.Background()
	if err := cw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := client.GetMetricStatistics(ctx, &cloudwatch.GetMetricStatisticsInput{
		Namespace: aws.String(ns), MetricName: aws.String(cloudwatchmetrics.MetricQueueWait),
		Dimensions: []cwtypes.Dimension{{Name: aws.String(cloudwatchmetrics.DimQueue), Value: aws.String("mill-bit")}, {Name: aws.String(cloudwatchmetrics.DimTaskType), Value: aws.String("BIT")}},
		StartTime:  aws.Time(time.Now().Add(-10 * time.Minute)), EndTime: aws.Time(time.Now().Add(10 * time.Minute)),
		Period: aws.Int32(60), Statistics: []cwtypes.Statistic{cwtypes.StatisticSampleCount, cwtypes.StatisticMaximum},
	})
	if err != nil {
		t.Fatal(err)
	}
	var n, mx float64
	for _, d := range st.Datapoints {
		n += aws.ToFloat64(d.SampleCount)
		mx = max(mx, aws.ToFloat64(d.Maximum))
	}
	if n != 50 || mx != 49000 {
		t.Fatalf("QueueWait sample count %v, maximum %v; want 50 and 49000", n, mx)
	}
}
