package cloudwatchmetrics_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/metrics"
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

// TestCloudWatchFailedPublicationKeepsTotals: a failed publication keeps
// every total of its interval, the tasks' and the stores' limits' alike,
// and the next one sends them merged with what came since, once.
func TestCloudWatchFailedPublicationKeepsTotals(t *testing.T) {
	cc := &capture{}
	cw, err := cloudwatchmetrics.New(cc, cloudwatchmetrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cw.TaskDone(task.TypeNoop, "success", 20*time.Millisecond)
	cw.TaskDone(task.TypeNoop, "success", 50*time.Millisecond)
	cw.DeadLettered(task.TypeBit, "failed")
	cw.TaskTimed(metrics.TaskTiming{Queue: "q", Type: task.TypeBit, Wait: time.Second, Attempts: 1})
	cw.LimitChanged("s3 hot", "decrease", 85)
	cc.fail.Store(true)
	if err := cw.Flush(ctx); err == nil {
		t.Fatal("a failed publication reported no error")
	}
	cc.fail.Store(false)
	cc.data = nil
	cw.TaskDone(task.TypeNoop, "success", 10*time.Millisecond)
	cw.LimitChanged("s3 hot", "increase", 90)
	if err := cw.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	type key struct{ name, dims string }
	got := map[key]cwtypes.MetricDatum{}
	var sent []key
	for _, d := range cc.data {
		var dims []string
		for _, dm := range d.Dimensions {
			dims = append(dims, aws.ToString(dm.Name)+"="+aws.ToString(dm.Value))
		}
		k := key{aws.ToString(d.MetricName), strings.Join(dims, ",")}
		got[k] = d
		sent = append(sent, k)
	}
	value := func(name, dims string) float64 {
		t.Helper()
		d, ok := got[key{name, dims}]
		if !ok {
			t.Fatalf("no %s{%s} after the retry; sent %v", name, dims, sent)
		}
		return aws.ToFloat64(d.Value)
	}
	stats := func(name, dims string) [4]float64 {
		t.Helper()
		d, ok := got[key{name, dims}]
		if !ok || d.StatisticValues == nil {
			t.Fatalf("no statistic set %s{%s} after the retry; sent %v", name, dims, sent)
		}
		s := d.StatisticValues
		return [4]float64{aws.ToFloat64(s.SampleCount), aws.ToFloat64(s.Sum), aws.ToFloat64(s.Minimum), aws.ToFloat64(s.Maximum)}
	}
	noop := "TaskType=NOOP,Result=success"
	if n := value(cloudwatchmetrics.MetricTasks, noop); n != 3 {
		t.Errorf("Tasks{%s} %v, want 3", noop, n)
	}
	if s := stats(cloudwatchmetrics.MetricTaskDuration, noop); s != [4]float64{3, 80, 10, 50} {
		t.Errorf("TaskDuration{%s} count, sum, min, max %v, want [3 80 10 50]", noop, s)
	}
	if n := value(cloudwatchmetrics.MetricDeadLettered, "TaskType=BIT,Result=failed"); n != 1 {
		t.Errorf("DeadLettered %v, want 1", n)
	}
	if _, total := percentile(t, cc.data, cloudwatchmetrics.MetricQueueWait, 0.5); total != 1 {
		t.Errorf("QueueWait samples %v, want 1", total)
	}
	if s := stats(cloudwatchmetrics.MetricStoreRequestLimit, "Store=s3 hot"); s != [4]float64{2, 175, 85, 90} {
		t.Errorf("StoreRequestLimit count, sum, min, max %v, want [2 175 85 90]", s)
	}
	for _, ch := range []string{"decrease", "increase"} {
		if n := value(cloudwatchmetrics.MetricStoreRequestLimitChanges, "Store=s3 hot,Change="+ch); n != 1 {
			t.Errorf("StoreRequestLimitChanges{%s} %v, want 1", ch, n)
		}
	}
	// Sent once: nothing is left for the next interval.
	if err := cw.Flush(ctx); err != nil || cc.calls.Load() != 2 {
		t.Fatalf("flush after the retry: %v, calls %d, want 2", err, cc.calls.Load())
	}
}
