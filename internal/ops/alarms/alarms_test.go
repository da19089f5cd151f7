package alarms_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/millfleet/mill/internal/ops/alarms"
	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/metrics/cloudwatchmetrics"
)

func TestSpecsMirrorInfra(t *testing.T) {
	specs := alarms.Specs(alarms.DefaultConfig("mill-"))
	if len(specs) != 13 {
		t.Fatalf("%d alarms, want 13 (4 volume, dead-letter not empty, 2 bit errors dead-lettered, 6 oldest-age)", len(specs))
	}
	byName := map[string]alarms.Spec{}
	for _, s := range specs {
		byName[s.Name] = s
	}
	for name, want := range map[string]struct {
		metric, queue string
		th            float64
		cmp           cwtypes.ComparisonOperator
	}{
		"mill-dup-high-volume-high":          {alarms.MetricVisible, "mill-dup-high", 500, cwtypes.ComparisonOperatorGreaterThanThreshold},
		"mill-dup-low-volume-low":            {alarms.MetricVisible, "mill-dup-low", 100, cwtypes.ComparisonOperatorLessThanOrEqualToThreshold},
		"mill-dead-letter-not-empty":         {alarms.MetricVisible, "mill-dead-letter", 0, cwtypes.ComparisonOperatorGreaterThanThreshold},
		"mill-audit-oldest-message-age":      {alarms.MetricOldestAge, "mill-audit", 3600, cwtypes.ComparisonOperatorGreaterThanThreshold},
		"mill-bit-report-oldest-message-age": {alarms.MetricOldestAge, "mill-bit-report", 172800, cwtypes.ComparisonOperatorGreaterThanThreshold},
		"mill-dup-high-oldest-message-age":   {alarms.MetricOldestAge, "mill-dup-high", 3600, cwtypes.ComparisonOperatorGreaterThanThreshold},
		"mill-dup-low-volume-high":           {alarms.MetricVisible, "mill-dup-low", 5000, cwtypes.ComparisonOperatorGreaterThanThreshold},
		"mill-dup-high-volume-low":           {alarms.MetricVisible, "mill-dup-high", 10, cwtypes.ComparisonOperatorLessThanOrEqualToThreshold},
		"mill-bit-oldest-message-age":        {alarms.MetricOldestAge, "mill-bit", 172800, cwtypes.ComparisonOperatorGreaterThanThreshold},
		"mill-bit-error-oldest-message-age":  {alarms.MetricOldestAge, "mill-bit-error", 21600, cwtypes.ComparisonOperatorGreaterThanThreshold},
		"mill-dup-low-oldest-message-age":    {alarms.MetricOldestAge, "mill-dup-low", 172800, cwtypes.ComparisonOperatorGreaterThanThreshold},
	} {
		s, ok := byName[name]
		if !ok {
			t.Errorf("no alarm %s", name)
			continue
		}
		if s.MetricName != want.metric || s.QueueName != want.queue || s.Threshold != want.th || s.Comparison != want.cmp {
			t.Errorf("%s: %+v", name, s)
		}
	}
	// Workman consumes bit-error: its depth is normal traffic, not an alarm.
	if _, ok := byName["mill-bit-error-not-empty"]; ok {
		t.Error("mill-bit-error-not-empty alarms on normal traffic")
	}
	for name, reason := range map[string]string{"mill-bit-error-needs-person": "permanent", "mill-bit-error-failed": "failed"} {
		s, ok := byName[name]
		if !ok {
			t.Errorf("no alarm %s", name)
			continue
		}
		dims := map[string]string{}
		for _, d := range s.Dimensions {
			dims[d.Name] = d.Value
		}
		if s.Namespace != cloudwatchmetrics.DefaultNamespace || s.MetricName != cloudwatchmetrics.MetricDeadLettered || s.Statistic != cwtypes.StatisticSum ||
			dims[cloudwatchmetrics.DimTaskType] != "BIT_ERROR" || dims[cloudwatchmetrics.DimResult] != reason || len(dims) != 2 || s.Threshold != 0 ||
			s.Comparison != cwtypes.ComparisonOperatorGreaterThanThreshold || s.TreatMissingData != "notBreaching" {
			t.Errorf("%s: %+v", name, s)
		}
	}
}

func TestValidate(t *testing.T) {
	c := alarms.DefaultConfig("")
	c.DupHighLow, c.DupLowHigh, c.LowPriorityMaxAge, c.TopicARN = 600, 0, time.Second, "topic"
	c.BitErrorMaxAge, c.MetricsNamespace = 0, "AWS/SQS"
	err := c.Validate()
	for _, want := range []string{"dup-high low threshold 600", "dup-low thresholds high 0", "low-priority max age 1s", `topic "topic"`,
		"bit-error max age 0s", `metrics namespace "AWS/SQS"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate: %v, want %q", err, want)
		}
	}
	if err := alarms.DefaultConfig("").Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// TestSetupOnEmulator creates the alarms, reads them back, runs setup
// again (nothing to do), then changes a threshold (updated).
func TestSetupOnEmulator(t *testing.T) {
	cw := testenv.AWS(t).CloudWatch()
	ctx := context.Background()
	cfg := alarms.DefaultConfig(testenv.Prefix(t))
	cfg.TopicARN = "arn:aws:sns:us-east-1:123456789012:" + cfg.QueuePrefix + "alarms"
	var names []string
	for _, s := range alarms.Specs(cfg) {
		names = append(names, s.Name)
	}
	t.Cleanup(func() {
		if _, err := cw.DeleteAlarms(context.Background(), &cloudwatch.DeleteAlarmsInput{AlarmNames: names}); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	apply := func(c alarms.Config) setup.Summary {
		t.Helper()
		rs, err := alarms.Resources(c, cw)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := setup.Apply(ctx, rs, func(r setup.Result) { t.Log(r) })
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	if s := apply(cfg); s.Created != 13 || s.Failed != 0 {
		t.Fatalf("first run: %v", s)
	}
	out, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: names})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.MetricAlarms) != 13 {
		t.Fatalf("%d alarms read back", len(out.MetricAlarms))
	}
	for _, a := range out.MetricAlarms {
		name := aws.ToString(a.AlarmName)
		if strings.HasPrefix(name, cfg.QueuePrefix+"bit-error-needs-person") || strings.HasPrefix(name, cfg.QueuePrefix+"bit-error-failed") {
			if aws.ToString(a.Namespace) != "Mill" || aws.ToString(a.MetricName) != "DeadLettered" || len(a.Dimensions) != 2 ||
				a.Statistic != cwtypes.StatisticSum || len(a.OKActions) != 1 {
				t.Errorf("%s: %+v", name, a)
			}
		} else if aws.ToString(a.Namespace) != "AWS/SQS" || len(a.Dimensions) != 1 || aws.ToString(a.Dimensions[0].Name) != "QueueName" ||
			!strings.HasPrefix(aws.ToString(a.Dimensions[0].Value), cfg.QueuePrefix) {
			t.Errorf("%s: namespace %s dimensions %v", name, aws.ToString(a.Namespace), a.Dimensions)
		}
		if len(a.AlarmActions) != 1 || a.AlarmActions[0] != cfg.TopicARN {
			t.Errorf("%s: alarm actions %v", name, a.AlarmActions)
		}
		switch name {
		case cfg.QueuePrefix + "dead-letter-not-empty":
			if aws.ToString(a.MetricName) != alarms.MetricVisible || aws.ToFloat64(a.Threshold) != 0 ||
				a.ComparisonOperator != cwtypes.ComparisonOperatorGreaterThanThreshold || len(a.OKActions) != 1 ||
				aws.ToString(a.Dimensions[0].Value) != cfg.QueuePrefix+"dead-letter" {
				t.Errorf("%s: %+v", name, a)
			}
		case cfg.QueuePrefix + "dup-low-volume-low":
			if aws.ToString(a.MetricName) != alarms.MetricVisible || aws.ToFloat64(a.Threshold) != 100 ||
				a.ComparisonOperator != cwtypes.ComparisonOperatorLessThanOrEqualToThreshold || len(a.OKActions) != 0 {
				t.Errorf("%s: %+v", name, a)
			}
		case cfg.QueuePrefix + "audit-oldest-message-age":
			if aws.ToString(a.MetricName) != alarms.MetricOldestAge || aws.ToFloat64(a.Threshold) != 3600 ||
				aws.ToInt32(a.EvaluationPeriods) != 3 {
				t.Errorf("%s: %+v", name, a)
			}
		}
	}
	if s := apply(cfg); s.Changed() || s.Existed != 13 {
		t.Fatalf("second run: %v", s)
	}
	cfg.DupHighHigh = 800
	if s := apply(cfg); s.Updated != 1 || s.Existed != 12 {
		t.Fatalf("after a threshold change: %v", s)
	}
}
