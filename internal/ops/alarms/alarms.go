// Package alarms defines Mill's CloudWatch alarms as setup.Resource values,
// so `millctl setup --alarms` creates on a local emulator (or an account
// without the CloudFormation stacks) the alarms that infra/alarms.yaml and
// infra/workman.yaml define:
//
//   - high and low queue volume on dup-high and dup-low
//     (ApproximateNumberOfMessagesVisible; in infra they drive Auto Scaling);
//   - dead-letter not empty;
//   - bit errors that need a person: a BIT_ERROR task dead-lettered as
//     permanent (the mill could not repair it, or the repair rule refused
//     it) or after failing every attempt — Workman's DeadLettered metric
//     (namespace Mill, dimensions TaskType=BIT_ERROR and Result=the
//     reason). Workman consumes the bit-error queue, so its depth is
//     normal traffic and is not alarmed;
//   - the age of the oldest message on each of the six work queues
//     (ApproximateAgeOfOldestMessage); bit-error has its own, shorter
//     threshold: a bit error waiting for hours is not being handled.
//
// docs/RUNBOOK.md says what each alarm means and what to do.
//
// Names, metrics, statistics, periods, evaluation periods and thresholds
// match the templates' defaults. One deliberate difference: infra's low-volume
// alarms are metric-math alarms that also require the other duplication
// queue to be below its high threshold; here they are plain metric alarms on
// their own queue (Maximum <= low threshold for 15 minutes), which local
// emulators store and report faithfully. Actions: when a topic ARN is given,
// every alarm notifies it on ALARM, and the operator alarms (not-empty,
// bit errors, oldest-message age) also on OK, as in alarms.yaml; infra's
// volume alarms invoke scaling policies instead, which do not exist locally.
//
// Each Alarm is idempotent: Plan reads the alarm with DescribeAlarms and
// compares metric, namespace, dimensions, statistic, period, evaluation
// periods, datapoints to alarm, threshold, comparison, missing-data
// treatment and actions; Apply writes it with PutMetricAlarm (which creates
// or replaces).
package alarms

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/metrics/cloudwatchmetrics"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// Defaults of Config: the defaults of infra/workman.yaml (volume thresholds)
// and infra/alarms.yaml (oldest-message ages).
const (
	DefaultDupHighHigh        = 500
	DefaultDupHighLow         = 10
	DefaultDupLowHigh         = 5000
	DefaultDupLowLow          = 100
	DefaultHighPriorityMaxAge = time.Hour
	DefaultLowPriorityMaxAge  = 48 * time.Hour
	// DefaultBitErrorMaxAge: bit-error is served before dup-low and bit,
	// so a bit error older than this is not being handled.
	DefaultBitErrorMaxAge = 6 * time.Hour
)

// Metric names and namespace the alarms watch.
const (
	Namespace        = "AWS/SQS"
	MetricVisible    = "ApproximateNumberOfMessagesVisible"
	MetricDeadLetter = cloudwatchmetrics.MetricDeadLettered
	MetricOldestAge  = "ApproximateAgeOfOldestMessage"
	DimensionQueue   = "QueueName"
	ResourceKind     = "alarm"
	missingNotBreach = "notBreaching"
	missingBreach    = "breaching"
)

// Config says which alarms to define. Start from DefaultConfig: thresholds
// are taken as given (a low-volume threshold of 0 is a valid choice).
type Config struct {
	// QueuePrefix names the queues (default queue.DefaultPrefix) and
	// prefixes every alarm name, as in infra.
	QueuePrefix string
	// TopicARN, when set, is notified by every alarm (AlarmActions) and by
	// the operator alarms on recovery (OKActions).
	TopicARN string
	// Visible-message thresholds of the volume alarms: an alarm when
	// dup-high has more than DupHighHigh, when it has at most DupHighLow,
	// and likewise for dup-low.
	DupHighHigh, DupHighLow, DupLowHigh, DupLowLow float64
	// HighPriorityMaxAge is the oldest-message age alarm threshold of the
	// audit and dup-high queues; BitErrorMaxAge that of bit-error;
	// LowPriorityMaxAge that of the others.
	HighPriorityMaxAge, LowPriorityMaxAge, BitErrorMaxAge time.Duration
	// MetricsNamespace is the namespace Workman publishes its metrics in
	// (its --cloudwatch-namespace; default cloudwatchmetrics.DefaultNamespace).
	MetricsNamespace string
}

// DefaultConfig returns the infra defaults for the queues under prefix
// ("" = queue.DefaultPrefix), without a topic.
func DefaultConfig(prefix string) Config {
	if prefix == "" {
		prefix = queue.DefaultPrefix
	}
	return Config{
		QueuePrefix: prefix,
		DupHighHigh: DefaultDupHighHigh, DupHighLow: DefaultDupHighLow,
		DupLowHigh: DefaultDupLowHigh, DupLowLow: DefaultDupLowLow,
		HighPriorityMaxAge: DefaultHighPriorityMaxAge, LowPriorityMaxAge: DefaultLowPriorityMaxAge,
		BitErrorMaxAge: DefaultBitErrorMaxAge, MetricsNamespace: cloudwatchmetrics.DefaultNamespace,
	}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.QueuePrefix == "" {
		errs = append(errs, errors.New("no queue prefix"))
	}
	for _, th := range []struct {
		name      string
		high, low float64
	}{{"dup-high", c.DupHighHigh, c.DupHighLow}, {"dup-low", c.DupLowHigh, c.DupLowLow}} {
		if th.high < 1 || th.low < 0 {
			errs = append(errs, fmt.Errorf("%s thresholds high %g, low %g: need high >= 1 and low >= 0", th.name, th.high, th.low))
		} else if th.low >= th.high {
			errs = append(errs, fmt.Errorf("%s low threshold %g is not below its high threshold %g", th.name, th.low, th.high))
		}
	}
	for _, a := range []struct {
		name string
		d    time.Duration
	}{{"high-priority max age", c.HighPriorityMaxAge}, {"low-priority max age", c.LowPriorityMaxAge}, {"bit-error max age", c.BitErrorMaxAge}} {
		if a.d < time.Minute || a.d%time.Second != 0 {
			errs = append(errs, fmt.Errorf("%s %v: want whole seconds, at least 1m", a.name, a.d))
		}
	}
	if c.MetricsNamespace == "" || strings.HasPrefix(c.MetricsNamespace, "AWS/") {
		errs = append(errs, fmt.Errorf("metrics namespace %q: want Workman's own (not empty, not AWS/…)", c.MetricsNamespace))
	}
	if c.TopicARN != "" && !isARN(c.TopicARN) {
		errs = append(errs, fmt.Errorf("topic %q is not an ARN", c.TopicARN))
	}
	return errors.Join(errs...)
}

func isARN(s string) bool { return len(s) > 4 && s[:4] == "arn:" }

// API is the part of *cloudwatch.Client the alarms use.
type API interface {
	DescribeAlarms(context.Context, *cloudwatch.DescribeAlarmsInput, ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error)
	PutMetricAlarm(context.Context, *cloudwatch.PutMetricAlarmInput, ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricAlarmOutput, error)
}

var _ API = (*cloudwatch.Client)(nil)

// Spec is one alarm as wanted.
type Spec struct {
	Name, Description string
	// Namespace of the metric ("" means Namespace, AWS/SQS).
	Namespace  string
	MetricName string
	// QueueName is the QueueName dimension of an SQS metric; Dimensions,
	// when set, are the dimensions of another metric (QueueName unused).
	QueueName         string
	Dimensions        []Dimension
	Statistic         cwtypes.Statistic
	Period            int32 // seconds
	EvaluationPeriods int32
	// DatapointsToAlarm is 0 when it equals EvaluationPeriods (CloudWatch's
	// default).
	DatapointsToAlarm int32
	Threshold         float64
	Comparison        cwtypes.ComparisonOperator
	TreatMissingData  string
	AlarmActions      []string
	OKActions         []string
}

// Dimension is one metric dimension.
type Dimension struct{ Name, Value string }

// namespace is the spec's metric namespace.
func (s Spec) namespace() string {
	if s.Namespace == "" {
		return Namespace
	}
	return s.Namespace
}

// dimensions are the spec's metric dimensions.
func (s Spec) dimensions() []Dimension {
	if s.Dimensions != nil {
		return s.Dimensions
	}
	return []Dimension{{DimensionQueue, s.QueueName}}
}

// Specs returns every alarm cfg defines (cfg is not validated), in a
// stable order.
func Specs(cfg Config) []Spec {
	p := cfg.QueuePrefix
	var alarmActs, okActs []string
	if cfg.TopicARN != "" {
		alarmActs, okActs = []string{cfg.TopicARN}, []string{cfg.TopicARN}
	}
	volume := func(key, level string, th float64, cmp cwtypes.ComparisonOperator, evals int32, missing, desc string) Spec {
		return Spec{
			Name: p + key + "-volume-" + level, Description: desc,
			MetricName: MetricVisible, QueueName: queue.Name(p, key), Statistic: cwtypes.StatisticMaximum,
			Period: 60, EvaluationPeriods: evals, Threshold: th, Comparison: cmp,
			TreatMissingData: missing, AlarmActions: alarmActs,
		}
	}
	notEmpty := func(key, desc string) Spec {
		return Spec{
			Name: p + key + "-not-empty", Description: desc,
			MetricName: MetricVisible, QueueName: queue.Name(p, key), Statistic: cwtypes.StatisticMaximum,
			Period: 300, EvaluationPeriods: 1, Threshold: 0, Comparison: cwtypes.ComparisonOperatorGreaterThanThreshold,
			TreatMissingData: missingNotBreach, AlarmActions: alarmActs, OKActions: okActs,
		}
	}
	specs := []Spec{
		volume(queue.KeyDupHigh, "high", cfg.DupHighHigh, cwtypes.ComparisonOperatorGreaterThanThreshold, 3, missingNotBreach,
			"dup-high has a backlog; add workman instances."),
		volume(queue.KeyDupHigh, "low", cfg.DupHighLow, cwtypes.ComparisonOperatorLessThanOrEqualToThreshold, 15, missingBreach,
			"dup-high is (nearly) empty; remove a workman instance."),
		volume(queue.KeyDupLow, "high", cfg.DupLowHigh, cwtypes.ComparisonOperatorGreaterThanThreshold, 3, missingNotBreach,
			"dup-low has a backlog; add workman instances."),
		volume(queue.KeyDupLow, "low", cfg.DupLowLow, cwtypes.ComparisonOperatorLessThanOrEqualToThreshold, 15, missingBreach,
			"dup-low is (nearly) empty; remove a workman instance."),
		notEmpty(queue.KeyDeadLetter, "Tasks failed three times, could not be decoded, or need a person; inspect them with `millctl dlq list` and redrive or purge (docs/RUNBOOK.md)."),
		bitErrorDeadLettered(cfg, deadletter.ReasonPermanent, "needs-person", alarmActs, okActs,
			"A bit error needs a person: the mill recorded it but could not repair it (no healthy copy, a storage-provider checksum, or the repair rule refused the task). See `millctl dlq list` and docs/RUNBOOK.md."),
		bitErrorDeadLettered(cfg, deadletter.ReasonFailed, "failed", alarmActs, okActs,
			"The bit-error processor failed every attempt at a task (a store, database or queue problem). See `millctl dlq list` and docs/RUNBOOK.md."),
	}
	for _, key := range queue.DefaultPriority {
		maxAge, level := cfg.LowPriorityMaxAge, "low"
		switch key {
		case queue.KeyAudit, queue.KeyDupHigh:
			maxAge, level = cfg.HighPriorityMaxAge, "high"
		case queue.KeyBitError:
			maxAge = cfg.BitErrorMaxAge
		}
		specs = append(specs, Spec{
			Name: p + key + "-oldest-message-age",
			Description: fmt.Sprintf("The oldest message on the %s queue (%s priority) is older than %v: workman is not keeping up, or is not running.",
				key, level, maxAge),
			MetricName: MetricOldestAge, QueueName: queue.Name(p, key), Statistic: cwtypes.StatisticMaximum,
			Period: 300, EvaluationPeriods: 3, DatapointsToAlarm: 2, Threshold: maxAge.Seconds(),
			Comparison: cwtypes.ComparisonOperatorGreaterThanThreshold, TreatMissingData: missingNotBreach,
			AlarmActions: alarmActs, OKActions: okActs,
		})
	}
	return specs
}

// bitErrorDeadLettered alarms on Workman's DeadLettered metric of BIT_ERROR
// tasks dead-lettered for reason: any in 5 minutes.
func bitErrorDeadLettered(cfg Config, reason, suffix string, alarmActs, okActs []string, desc string) Spec {
	return Spec{
		Name: cfg.QueuePrefix + "bit-error-" + suffix, Description: desc,
		Namespace: cfg.MetricsNamespace, MetricName: MetricDeadLetter,
		Dimensions: []Dimension{{cloudwatchmetrics.DimResult, reason}, {cloudwatchmetrics.DimTaskType, string(task.TypeBitError)}},
		Statistic:  cwtypes.StatisticSum, Period: 300, EvaluationPeriods: 1, Threshold: 0,
		Comparison: cwtypes.ComparisonOperatorGreaterThanThreshold, TreatMissingData: missingNotBreach,
		AlarmActions: alarmActs, OKActions: okActs,
	}
}

// Resources returns the alarms of cfg as setup resources.
func Resources(cfg Config, client API) ([]setup.Resource, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("alarms: %w", err)
	}
	if client == nil {
		return nil, errors.New("alarms: a CloudWatch client is required")
	}
	var rs []setup.Resource
	for _, s := range Specs(cfg) {
		rs = append(rs, &Alarm{Client: client, Spec: s})
	}
	return rs, nil
}

// Alarm is one CloudWatch metric alarm managed by setup.
type Alarm struct {
	Client API
	Spec   Spec
}

var _ setup.Resource = (*Alarm)(nil)

// Kind implements setup.Resource.
func (a *Alarm) Kind() string { return ResourceKind }

// Name implements setup.Resource.
func (a *Alarm) Name() string { return a.Spec.Name }

func (a *Alarm) describe() []string {
	s := a.Spec
	d := fmt.Sprintf("%s of %s %s{%s} %s %g over %d×%ds", s.Statistic, s.namespace(), s.MetricName, dimString(s.dimensions()),
		cmpSymbol(s.Comparison), s.Threshold, s.EvaluationPeriods, s.Period)
	if len(s.AlarmActions) > 0 {
		d += "; notifies " + s.AlarmActions[0]
	}
	return []string{d}
}

func cmpSymbol(c cwtypes.ComparisonOperator) string {
	switch c {
	case cwtypes.ComparisonOperatorGreaterThanThreshold:
		return ">"
	case cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold:
		return ">="
	case cwtypes.ComparisonOperatorLessThanThreshold:
		return "<"
	case cwtypes.ComparisonOperatorLessThanOrEqualToThreshold:
		return "<="
	}
	return string(c)
}

// current returns the existing alarm, or nil.
func (a *Alarm) current(ctx context.Context) (*cwtypes.MetricAlarm, error) {
	out, err := a.Client.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{
		AlarmNames: []string{a.Spec.Name},
		AlarmTypes: []cwtypes.AlarmType{cwtypes.AlarmTypeMetricAlarm},
	})
	if err != nil {
		return nil, fmt.Errorf("describe alarm %s: %w", a.Spec.Name, err)
	}
	for i := range out.MetricAlarms {
		if aws.ToString(out.MetricAlarms[i].AlarmName) == a.Spec.Name {
			return &out.MetricAlarms[i], nil
		}
	}
	return nil, nil
}

// Diff returns what differs between the existing alarm have and the spec,
// one reason per setting.
func (a *Alarm) Diff(have *cwtypes.MetricAlarm) []string {
	s := a.Spec
	var r []string
	str := func(what, got, want string) {
		if got != want {
			r = append(r, fmt.Sprintf("%s %q → %q", what, got, want))
		}
	}
	num := func(what string, got, want int64) {
		if got != want {
			r = append(r, fmt.Sprintf("%s %d → %d", what, got, want))
		}
	}
	str("namespace", aws.ToString(have.Namespace), s.namespace())
	str("metric", aws.ToString(have.MetricName), s.MetricName)
	str("dimensions", dimensions(have.Dimensions), dimString(s.dimensions()))
	str("statistic", string(have.Statistic), string(s.Statistic))
	num("period", int64(aws.ToInt32(have.Period)), int64(s.Period))
	num("evaluation periods", int64(aws.ToInt32(have.EvaluationPeriods)), int64(s.EvaluationPeriods))
	// An unset DatapointsToAlarm means "all evaluation periods".
	gotDP, wantDP := aws.ToInt32(have.DatapointsToAlarm), s.DatapointsToAlarm
	if gotDP == 0 {
		gotDP = aws.ToInt32(have.EvaluationPeriods)
	}
	if wantDP == 0 {
		wantDP = s.EvaluationPeriods
	}
	num("datapoints to alarm", int64(gotDP), int64(wantDP))
	if got := aws.ToFloat64(have.Threshold); have.Threshold == nil || got != s.Threshold {
		r = append(r, fmt.Sprintf("threshold %s → %g", fmtFloat(have.Threshold), s.Threshold))
	}
	str("comparison", string(have.ComparisonOperator), string(s.Comparison))
	// CloudWatch reports "missing" when TreatMissingData was never set.
	gotMissing := aws.ToString(have.TreatMissingData)
	if gotMissing == "" {
		gotMissing = "missing"
	}
	str("missing data", gotMissing, s.TreatMissingData)
	if !sameSet(have.AlarmActions, s.AlarmActions) {
		r = append(r, fmt.Sprintf("alarm actions %v → %v", have.AlarmActions, s.AlarmActions))
	}
	if !sameSet(have.OKActions, s.OKActions) {
		r = append(r, fmt.Sprintf("OK actions %v → %v", have.OKActions, s.OKActions))
	}
	return r
}

func fmtFloat(f *float64) string {
	if f == nil {
		return "none"
	}
	return strconv.FormatFloat(*f, 'g', -1, 64)
}

// dimensions is ds as "Name=Value,…" in name order (CloudWatch does not
// promise to keep the order they were put in).
func dimensions(ds []cwtypes.Dimension) string {
	var out []Dimension
	for _, d := range ds {
		out = append(out, Dimension{aws.ToString(d.Name), aws.ToString(d.Value)})
	}
	return dimString(out)
}

func dimString(ds []Dimension) string {
	parts := make([]string, 0, len(ds))
	for _, d := range ds {
		parts = append(parts, d.Name+"="+d.Value)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// Plan implements setup.Resource.
func (a *Alarm) Plan(ctx context.Context) (setup.Change, error) {
	have, err := a.current(ctx)
	if err != nil {
		return setup.Change{}, err
	}
	if have == nil {
		return setup.Change{Action: setup.ActionCreate, Reasons: a.describe()}, nil
	}
	if r := a.Diff(have); len(r) > 0 {
		return setup.Change{Action: setup.ActionUpdate, Reasons: r}, nil
	}
	return setup.Change{Action: setup.ActionNone}, nil
}

// Input returns the PutMetricAlarm request that makes the alarm.
func (a *Alarm) Input() *cloudwatch.PutMetricAlarmInput {
	s := a.Spec
	var dims []cwtypes.Dimension
	for _, d := range s.dimensions() {
		dims = append(dims, cwtypes.Dimension{Name: aws.String(d.Name), Value: aws.String(d.Value)})
	}
	in := &cloudwatch.PutMetricAlarmInput{
		AlarmName:          aws.String(s.Name),
		AlarmDescription:   aws.String(s.Description),
		Namespace:          aws.String(s.namespace()),
		MetricName:         aws.String(s.MetricName),
		Dimensions:         dims,
		Statistic:          s.Statistic,
		Period:             aws.Int32(s.Period),
		EvaluationPeriods:  aws.Int32(s.EvaluationPeriods),
		Threshold:          aws.Float64(s.Threshold),
		ComparisonOperator: s.Comparison,
		TreatMissingData:   aws.String(s.TreatMissingData),
		ActionsEnabled:     aws.Bool(true),
		AlarmActions:       s.AlarmActions,
		OKActions:          s.OKActions,
	}
	if s.DatapointsToAlarm > 0 {
		in.DatapointsToAlarm = aws.Int32(s.DatapointsToAlarm)
	}
	return in
}

// Apply implements setup.Resource. PutMetricAlarm replaces the whole alarm,
// so create and update are the same call.
func (a *Alarm) Apply(ctx context.Context, c setup.Change) (setup.Result, error) {
	if _, err := a.Client.PutMetricAlarm(ctx, a.Input()); err != nil {
		return setup.Result{}, fmt.Errorf("put alarm %s: %w", a.Spec.Name, err)
	}
	if c.Action == setup.ActionCreate {
		return setup.Result{Status: setup.StatusCreated, Details: a.describe()}, nil
	}
	return setup.Result{Status: setup.StatusUpdated, Details: c.Reasons}, nil
}
