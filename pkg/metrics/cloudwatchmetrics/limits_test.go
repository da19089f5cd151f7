package cloudwatchmetrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/metrics/cloudwatchmetrics"
)

// TestCloudWatchLimits: a store's limit changes in an interval go out in
// the interval's one call, as a statistic set of the limits and a count
// per kind of change; a failed call keeps them for the next.
func TestCloudWatchLimits(t *testing.T) {
	cfg := testenv.AWS(t)
	client := cfg.CloudWatch()
	ns := "MillTest/" + testenv.Unique()
	cc := &counting{next: client}
	cw, err := cloudwatchmetrics.New(cc, cloudwatchmetrics.Config{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cw.LimitChanged("s3 hot", "decrease", 85)
	cc.fail.Store(true)
	if err := cw.Flush(ctx); err == nil {
		t.Fatal("a failed publication reported no error")
	}
	cc.fail.Store(false)
	cw.LimitChanged("s3 hot", "increase", 86)
	cw.LimitChanged("s3 hot", "decrease", 73)
	if err := cw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if c := cc.calls.Load(); c != 2 {
		t.Fatalf("calls %d, want 2", c)
	}
	stat := func(name string, dims map[string]string, s cwtypes.Statistic) float64 {
		t.Helper()
		var ds []cwtypes.Dimension
		for k, v := range dims {
			ds = append(ds, cwtypes.Dimension{Name: aws.String(k), Value: aws.String(v)})
		}
		st, err := client.GetMetricStatistics(ctx, &cloudwatch.GetMetricStatisticsInput{
			Namespace: aws.String(ns), MetricName: aws.String(name), Dimensions: ds,
			StartTime: aws.Time(time.Now().Add(-10 * time.Minute)), EndTime: aws.Time(time.Now().Add(10 * time.Minute)),
			Period: aws.Int32(60), Statistics: []cwtypes.Statistic{s},
		})
		if err != nil {
			t.Fatal(err)
		}
		var v float64
		for _, d := range st.Datapoints {
			switch s {
			case cwtypes.StatisticMinimum:
				v = aws.ToFloat64(d.Minimum)
			case cwtypes.StatisticMaximum:
				v = aws.ToFloat64(d.Maximum)
			default:
				v += aws.ToFloat64(d.Sum)
			}
		}
		return v
	}
	store := map[string]string{cloudwatchmetrics.DimStore: "s3 hot"}
	if mn, mx := stat(cloudwatchmetrics.MetricStoreRequestLimit, store, cwtypes.StatisticMinimum),
		stat(cloudwatchmetrics.MetricStoreRequestLimit, store, cwtypes.StatisticMaximum); mn != 73 || mx != 86 {
		t.Errorf("StoreRequestLimit min %v max %v, want 73 and 86", mn, mx)
	}
	dec := map[string]string{cloudwatchmetrics.DimStore: "s3 hot", cloudwatchmetrics.DimChange: "decrease"}
	if n := stat(cloudwatchmetrics.MetricStoreRequestLimitChanges, dec, cwtypes.StatisticSum); n != 2 {
		t.Errorf("decreases %v, want 2 (one kept from the failed call)", n)
	}
}
