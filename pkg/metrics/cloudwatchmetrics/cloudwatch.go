package cloudwatchmetrics

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/task"

	"github.com/millfleet/mill/pkg/metrics"
)

// CloudWatch defaults.
const (
	DefaultNamespace          = "Mill"
	DefaultPublishInterval    = time.Minute
	DefaultFlushTimeout       = 10 * time.Second
	maxDatumsPerPutMetricData = 1000 // the PutMetricData limit
)

// CloudWatch metric and dimension names.
const (
	MetricTasks        = "Tasks"        // Count, dimensions TaskType, Result
	MetricTaskDuration = "TaskDuration" // Milliseconds (statistic set), dimensions TaskType, Result
	MetricDeadLettered = "DeadLettered" // Count, dimensions TaskType, Result (the reason)
	DimTaskType        = "TaskType"
	DimResult          = "Result"
)

// API is the part of *cloudwatch.Client the publisher uses.
type API interface {
	PutMetricData(ctx context.Context, in *cloudwatch.PutMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error)
}

// Config configures New. The zero value takes every
// default.
type Config struct {
	// Namespace of the metrics (default DefaultNamespace, "Mill").
	Namespace string
	// Interval between publications (default DefaultPublishInterval).
	Interval time.Duration
	// FlushTimeout bounds the final publication when Run's ctx ends
	// (default DefaultFlushTimeout).
	FlushTimeout time.Duration
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// TaskTypes are the task types published as themselves (the
	// registered ones); any other type is published as OtherTaskType.
	// Default task.Types.
	TaskTypes []task.Type
}

// defaultConfig holds the values WithDefaults gives a Config's zero fields.
var defaultConfig = Config{Namespace: DefaultNamespace, Interval: DefaultPublishInterval, FlushTimeout: DefaultFlushTimeout}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	defaults.Fill(&c, defaultConfig)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	p := validate.Struct("metrics: CloudWatchConfig", c)
	p.Check(c.Interval >= time.Second, "Interval", c.Interval, "be at least 1s")
	p.Check(c.FlushTimeout > 0, "FlushTimeout", c.FlushTimeout, "be positive")
	return p.Err()
}

// Recorder is a metrics.Recorder that aggregates task results in memory and
// publishes them to CloudWatch once per interval with one PutMetricData
// call (a second call only if more than 1000 distinct series accumulated,
// which Mill's handful of task types and results never reach: a type that
// is not registered is published as OtherTaskType). A failed
// publication keeps its data and is retried with the next one.
// Received and InFlight are not published (Prometheus has them). The
// queue-wait distributions (TaskTimed, timing.go) go in the same call.
type Recorder struct {
	client API
	cfg    Config
	labels metrics.TaskTypeLabels

	mu       sync.Mutex
	interval *totals // the interval's aggregate (totals.go)
	calls    int64

	flushMu sync.Mutex // one publication at a time
}

type seriesKey struct {
	typ    string // a TaskTypeLabels label
	result string
}

var _ metrics.Recorder = (*Recorder)(nil)

// New returns a publisher sending to client.
func New(client API, cfg Config) (*Recorder, error) {
	if client == nil {
		return nil, errors.New("metrics: cloudwatch: nil client")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("metrics: cloudwatch: %w", err)
	}
	return &Recorder{client: client, cfg: cfg, labels: metrics.NewTaskTypeLabels(cfg.TaskTypes), interval: newTotals()}, nil
}

// TaskDone implements metrics.Recorder: it adds to the interval's aggregate.
func (c *Recorder) TaskDone(t task.Type, result string, elapsed time.Duration) {
	ms := float64(elapsed) / float64(time.Millisecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	entry(c.interval.tasks, seriesKey{c.labels.Label(t), result}, newSeries).add(1, ms, ms, ms)
}

// DeadLettered implements metrics.Recorder.
func (c *Recorder) DeadLettered(t task.Type, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.interval.dead[seriesKey{c.labels.Label(t), reason}]++
}

// Received implements metrics.Recorder (not published to CloudWatch).
func (c *Recorder) Received(string, int) {}

// InFlight implements metrics.Recorder (not published to CloudWatch).
func (c *Recorder) InFlight(int) {}

// Calls returns how many PutMetricData calls the publisher has made.
func (c *Recorder) Calls() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// Run publishes every interval until ctx ends, then publishes what is left
// (within FlushTimeout) and returns nil. Publication errors are logged, not
// returned: metrics must never stop the worker.
func (c *Recorder) Run(ctx context.Context) error {
	for {
		t := time.NewTimer(c.cfg.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.FlushTimeout)
			if err := c.Flush(fctx); err != nil {
				c.cfg.Logger.Warn("cloudwatch: final publication failed", "error", err)
			}
			cancel()
			return nil
		case <-t.C:
			if err := c.Flush(ctx); err != nil {
				c.cfg.Logger.Warn("cloudwatch: publication failed; will retry with the next one", "error", err)
			}
		}
	}
}

// Flush publishes the aggregate now (nothing is sent when it is empty).
func (c *Recorder) Flush(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	c.mu.Lock()
	taken := c.interval
	c.interval = newTotals()
	c.mu.Unlock()
	if taken.empty() {
		return nil
	}
	data := taken.datums(time.Now())
	var errs []error
	for len(data) > 0 {
		n := min(len(data), maxDatumsPerPutMetricData)
		c.mu.Lock()
		c.calls++
		c.mu.Unlock()
		_, err := c.client.PutMetricData(ctx, &cloudwatch.PutMetricDataInput{
			Namespace:  aws.String(c.cfg.Namespace),
			MetricData: data[:n],
		})
		if err != nil {
			errs = append(errs, err)
		}
		data = data[n:]
	}
	if err := errors.Join(errs...); err != nil {
		c.mu.Lock()
		c.interval.merge(taken) // the next publication carries it
		c.mu.Unlock()
		return fmt.Errorf("metrics: cloudwatch: put metric data: %w", err)
	}
	return nil
}

func dims(k seriesKey) []cwtypes.Dimension {
	return []cwtypes.Dimension{dim(DimTaskType, k.typ), dim(DimResult, k.result)}
}

// taskDatums are the datums of the tasks' and the dead letters' totals.
func taskDatums(tasks map[seriesKey]*series, dead map[seriesKey]int64, now time.Time) []cwtypes.MetricDatum {
	keys := make([]seriesKey, 0, len(tasks))
	for k := range tasks {
		keys = append(keys, k)
	}
	sortKeys(keys)
	var out []cwtypes.MetricDatum
	for _, k := range keys {
		s := tasks[k]
		out = append(out, countDatum(MetricTasks, s.count, now, dims(k)...),
			s.statisticSet(MetricTaskDuration, cwtypes.StandardUnitMilliseconds, now, dims(k)...))
	}
	keys = keys[:0]
	for k := range dead {
		keys = append(keys, k)
	}
	sortKeys(keys)
	for _, k := range keys {
		out = append(out, countDatum(MetricDeadLettered, dead[k], now, dims(k)...))
	}
	return out
}

func sortKeys(keys []seriesKey) {
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].typ != keys[j].typ {
			return keys[i].typ < keys[j].typ
		}
		return keys[i].result < keys[j].result
	})
}
