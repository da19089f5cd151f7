package cloudwatchmetrics_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/metrics/cloudwatchmetrics"
	"github.com/millfleet/mill/pkg/task"
)

// counting wraps a PutMetricDataAPI and counts calls and datums.
type counting struct {
	next   cloudwatchmetrics.API
	calls  atomic.Int64
	datums atomic.Int64
	fail   atomic.Bool
}

func (c *counting) PutMetricData(ctx context.Context, in *cloudwatch.PutMetricDataInput, o ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error) {
	c.calls.Add(1)
	c.datums.Add(int64(len(in.MetricData)))
	if c.fail.Load() {
		return nil, errors.New("injected outage")
	}
	if c.next == nil {
		return &cloudwatch.PutMetricDataOutput{}, nil
	}
	return c.next.PutMetricData(ctx, in, o...)
}

// TestCloudWatchOneCallPerInterval runs in a synctest bubble: the bubble's
// clock moves an interval when every goroutine waits (the test's Sleep,
// the publisher's timer), and synctest.Wait returns once the publisher has
// done all it will do, so the counts are read without polling.
func TestCloudWatchOneCallPerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cc := &counting{}
		cw, err := cloudwatchmetrics.New(cc, cloudwatchmetrics.Config{Interval: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- cw.Run(ctx) }()
		for i := range 500 {
			cw.TaskDone(task.TypeNoop, "success", time.Duration(i)*time.Millisecond)
		}
		cw.TaskDone(task.TypeBit, "failure", time.Second)
		cw.DeadLettered(task.TypeBit, "failed")
		advance := func() {
			time.Sleep(time.Minute)
			synctest.Wait()
		}
		advance()
		if c := cc.calls.Load(); c != 1 {
			t.Fatalf("calls %d after the first interval, want 1", c)
		}
		// 2 series × (count + duration) + 1 dead-lettered.
		if n := cc.datums.Load(); n != 5 {
			t.Errorf("datums %d, want 5", n)
		}
		// An empty interval sends nothing.
		advance()
		if c := cc.calls.Load(); c != 1 {
			t.Fatalf("calls %d after an empty interval, want 1", c)
		}
		// A failed publication keeps its data for the next one.
		cc.fail.Store(true)
		cw.TaskDone(task.TypeNoop, "success", time.Millisecond)
		advance()
		if c := cc.calls.Load(); c != 2 {
			t.Fatalf("calls %d after a failed interval, want 2", c)
		}
		cc.fail.Store(false)
		cw.TaskDone(task.TypeNoop, "success", time.Millisecond)
		cancel() // final flush
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if c := cc.calls.Load(); c != 3 {
			t.Errorf("calls %d, want 3 (one per non-empty interval, one retry-carrying final)", c)
		}
	})
}

// TestCloudWatchEmulator publishes through awsconfig's CloudWatch client to
// moto and reads the metrics back.
func TestCloudWatchEmulator(t *testing.T) {
	cfg := testenv.AWS(t)
	client := cfg.CloudWatch()
	ns := "MillTest/" + testenv.Unique()
	cc := &counting{next: client}
	cw, err := cloudwatchmetrics.New(cc, cloudwatchmetrics.Config{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	for range 40 {
		cw.TaskDone(task.TypeNoop, "success", 25*time.Millisecond)
	}
	cw.TaskDone(task.TypeNoop, "failure", 5*time.Millisecond)
	cw.DeadLettered(task.TypeNoop, "permanent")
	ctx := context.Background()
	if err := cw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if c := cc.calls.Load(); c != 1 {
		t.Fatalf("PutMetricData calls %d, want 1", c)
	}
	lm, err := client.ListMetrics(ctx, &cloudwatch.ListMetricsInput{Namespace: aws.String(ns)})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, m := range lm.Metrics {
		names[aws.ToString(m.MetricName)]++
	}
	if names[cloudwatchmetrics.MetricTasks] != 2 || names[cloudwatchmetrics.MetricTaskDuration] != 2 || names[cloudwatchmetrics.MetricDeadLettered] != 1 {
		t.Fatalf("metrics listed: %v", names)
	}
	st, err := client.GetMetricStatistics(ctx, &cloudwatch.GetMetricStatisticsInput{
		Namespace: aws.String(ns), MetricName: aws.String(cloudwatchmetrics.MetricTasks),
		Dimensions: []cwtypes.Dimension{{Name: aws.String("TaskType"), Value: aws.String("NOOP")}, {Name: aws.String("Result"), Value: aws.String("success")}},
		StartTime:  aws.Time(time.Now().Add(-10 * time.Minute)), EndTime: aws.Time(time.Now().Add(10 * time.Minute)),
		Period: aws.Int32(60), Statistics: []cwtypes.Statistic{cwtypes.StatisticSum},
	})
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, d := range st.Datapoints {
		sum += aws.ToFloat64(d.Sum)
	}
	if sum != 40 {
		t.Fatalf("Tasks{NOOP,success} sum %v, want 40 (datapoints %d)", sum, len(st.Datapoints))
	}
}
