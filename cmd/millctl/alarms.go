package main

import (
	"flag"

	"github.com/millfleet/mill/internal/ops/alarms"
	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/pkg/awsconfig"
)

// alarmOptions are setup's --alarms flags.
type alarmOptions struct {
	enabled bool
	cfg     alarms.Config
}

// alarmFlags defines --alarms, --alarm-topic-arn and the thresholds on
// setup's flag set (defaults: those of infra/alarms.yaml and
// infra/workman.yaml).
func alarmFlags(fs *flag.FlagSet) *alarmOptions {
	o := &alarmOptions{cfg: alarms.DefaultConfig("")}
	fs.BoolVar(&o.enabled, "alarms", false, "also create the CloudWatch alarms of infra/ (queue volume, dead letters, bit errors that need a person, oldest message age)")
	fs.StringVar(&o.cfg.TopicARN, "alarm-topic-arn", "", "SNS topic `ARN` the alarms notify (default: no actions)")
	fs.Float64Var(&o.cfg.DupHighHigh, "alarm-dup-high-high", alarms.DefaultDupHighHigh, "visible messages on dup-high above which its high-volume alarm fires")
	fs.Float64Var(&o.cfg.DupHighLow, "alarm-dup-high-low", alarms.DefaultDupHighLow, "visible messages on dup-high at or below which its low-volume alarm fires")
	fs.Float64Var(&o.cfg.DupLowHigh, "alarm-dup-low-high", alarms.DefaultDupLowHigh, "visible messages on dup-low above which its high-volume alarm fires")
	fs.Float64Var(&o.cfg.DupLowLow, "alarm-dup-low-low", alarms.DefaultDupLowLow, "visible messages on dup-low at or below which its low-volume alarm fires")
	fs.DurationVar(&o.cfg.HighPriorityMaxAge, "alarm-high-priority-max-age", alarms.DefaultHighPriorityMaxAge, "oldest-message age alarm threshold of the audit and dup-high queues")
	fs.DurationVar(&o.cfg.LowPriorityMaxAge, "alarm-low-priority-max-age", alarms.DefaultLowPriorityMaxAge, "oldest-message age alarm threshold of the bit-report, dup-low and bit queues")
	fs.DurationVar(&o.cfg.BitErrorMaxAge, "alarm-bit-error-max-age", alarms.DefaultBitErrorMaxAge, "oldest-message age alarm threshold of the bit-error queue")
	fs.StringVar(&o.cfg.MetricsNamespace, "alarm-metrics-namespace", o.cfg.MetricsNamespace, "CloudWatch `namespace` workman publishes its metrics in (its --cloudwatch-namespace), for the bit-error alarms")
	return o
}

// resources returns the alarm resources for the queues under prefix, none
// unless --alarms was given.
func (o *alarmOptions) resources(awsCfg *awsconfig.Config, prefix string) ([]setup.Resource, error) {
	if !o.enabled {
		return nil, nil
	}
	c := o.cfg
	c.QueuePrefix = prefix
	rs, err := alarms.Resources(c, awsCfg.CloudWatch())
	if err != nil {
		return nil, usagef("%v", err)
	}
	return rs, nil
}
