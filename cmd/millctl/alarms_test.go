package main

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"

	"github.com/millfleet/mill/internal/ops/alarms"
	"github.com/millfleet/mill/internal/testkit/testenv"
)

// TestSetupAlarms runs setup --alarms twice: the second run has nothing to
// do; the alarms carry the topic and the thresholds given.
func TestSetupAlarms(t *testing.T) {
	cfg := testenv.AWS(t)
	n := newSetupNames(t, "")
	n.cleanup(t, cfg.SQS(), cfg.S3(), cfg.DynamoDB())
	cw := cfg.CloudWatch()
	var names []string
	for _, s := range alarms.Specs(alarms.DefaultConfig(n.prefix)) {
		names = append(names, s.Name)
	}
	t.Cleanup(func() { _, _ = cw.DeleteAlarms(context.Background(), &cloudwatch.DeleteAlarmsInput{AlarmNames: names}) })
	topic := "arn:aws:sns:us-east-1:123456789012:" + n.prefix + "alarms"
	// No database: drop setupNames' --database-url "" and skip it.
	args := n.args("--skip-db", "--alarms", "--alarm-topic-arn", topic, "--alarm-dup-high-high", "42")
	for i, a := range args {
		if a == "--database-url" {
			args = append(args[:i], args[i+2:]...)
			break
		}
	}
	code, out, _ := setupRun(t, nil, args...)
	if code != 0 || !strings.Contains(out, "setup: 26 created") || strings.Count(out, "alarm ") != 13 {
		t.Fatalf("first run: %d\n%s", code, out)
	}
	if code, out, _ = setupRun(t, nil, args...); code != 0 || !strings.Contains(out, "26 already existed — nothing to do") {
		t.Fatalf("second run: %d\n%s", code, out)
	}
	got, err := cw.DescribeAlarms(context.Background(), &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{n.prefix + "dup-high-volume-high"}})
	if err != nil || len(got.MetricAlarms) != 1 {
		t.Fatalf("describe: %v %v", err, got)
	}
	a := got.MetricAlarms[0]
	if aws.ToFloat64(a.Threshold) != 42 || aws.ToString(a.Namespace) != "AWS/SQS" || len(a.AlarmActions) != 1 || a.AlarmActions[0] != topic ||
		aws.ToString(a.Dimensions[0].Value) != n.prefix+"dup-high" {
		t.Errorf("alarm: %+v", a)
	}
}
