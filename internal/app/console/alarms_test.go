package console_test

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/millfleet/mill/internal/app/console"
	"github.com/millfleet/mill/internal/ops/alarms"
	"github.com/millfleet/mill/internal/testkit/testenv"
)

// TestCloudWatchAlarmsOnEmulator: of Mill's alarms (as millctl setup
// --alarms makes them), the one set to ALARM is listed, with its reason;
// an alarm of another prefix in ALARM is not.
func TestCloudWatchAlarmsOnEmulator(t *testing.T) {
	cw := testenv.AWS(t).CloudWatch()
	ctx := context.Background()
	prefix := testenv.Prefix(t)
	specs := alarms.Specs(alarms.DefaultConfig(prefix))
	other := alarms.Specs(alarms.DefaultConfig(prefix + "other-"))[0]
	var names []string
	for _, sp := range append(specs, other) {
		names = append(names, sp.Name)
	}
	t.Cleanup(func() {
		if _, err := cw.DeleteAlarms(context.Background(), &cloudwatch.DeleteAlarmsInput{AlarmNames: names}); err != nil {
			t.Errorf("delete the alarms: %v", err)
		}
	})
	rs, err := alarms.Resources(alarms.DefaultConfig(prefix), cw)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		a := r.(*alarms.Alarm)
		if _, err := cw.PutMetricAlarm(ctx, a.Input()); err != nil {
			t.Fatal(err)
		}
	}
	rsOther, _ := alarms.Resources(alarms.DefaultConfig(prefix+"other-"), cw)
	if _, err := cw.PutMetricAlarm(ctx, rsOther[0].(*alarms.Alarm).Input()); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{specs[2].Name, other.Name} {
		if _, err := cw.SetAlarmState(ctx, &cloudwatch.SetAlarmStateInput{AlarmName: aws.String(n), StateValue: cwtypes.StateValueAlarm,
			StateReason: aws.String("injected by the test")}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := console.CloudWatchAlarms{Client: cw, Prefix: prefix}.InAlarm(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != specs[2].Name || got[0].Reason != "injected by the test" {
		t.Fatalf("in ALARM: %+v, want only %s", got, specs[2].Name)
	}
	if slices.ContainsFunc(got, func(a console.Alarm) bool { return a.Name == other.Name }) {
		t.Error("another prefix's alarm is listed")
	}
}
