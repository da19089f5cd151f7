// Package queuestats reads the depth of Mill's seven queues — visible, in
// flight and delayed messages, and the age of the oldest message — for
// `millctl queues` and the console (docs/ARCHITECTURE.md, Operations).
package queuestats

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/millfleet/mill/internal/ops/alarms"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/queue"
)

// Row is one queue's depth.
type Row struct {
	Key      string `json:"key"`
	Name     string `json:"name"`
	Visible  int64  `json:"visible"`
	InFlight int64  `json:"in_flight"`
	Delayed  int64  `json:"delayed"`
	// OldestAgeSeconds is nil when no age is known (see Ages).
	OldestAgeSeconds *float64 `json:"oldest_age_seconds"`
	// Paused names the fleet-wide pause that stops Workman from receiving
	// from the queue ("queue", or "type DUP" for its task type's), "?" when
	// the pauses could not be read, "" when none applies or the reader has
	// no fleet registry.
	Paused string `json:"paused,omitempty"`
	// Error is set (and the counts are 0) when the queue could not be read.
	Error string `json:"error,omitempty"`
}

// Total is every message of the queue.
func (r Row) Total() int64 { return r.Visible + r.InFlight + r.Delayed }

// OpenFunc opens the queue named name (whose key is key). It may fail with
// queue.ErrNotFound.
type OpenFunc func(ctx context.Context, key, name string) (queue.Queue, error)

// Ages tells the age of a queue's oldest message; nil when unknown.
type Ages interface {
	OldestAge(ctx context.Context, name string) *float64
}

// Reader reads the seven queues. Queues are opened on first use and kept;
// one that could not be opened is tried again on the next Read. Safe for
// concurrent use.
type Reader struct {
	prefix string
	open   OpenFunc
	ages   Ages
	fleet  fleet.Registry // nil: pauses not read

	mu     sync.Mutex
	opened map[string]queue.Queue
}

// New returns a reader of the queues named prefix+key. ages may be nil (no
// ages).
func New(prefix string, open OpenFunc, ages Ages) *Reader {
	return &Reader{prefix: prefix, open: open, ages: ages, opened: map[string]queue.Queue{}}
}

// Prefix is the prefix of the queues' names.
func (r *Reader) Prefix() string { return r.prefix }

// WithFleet makes Read also fill each row's Paused from the fleet
// registry's pauses. It returns r.
func (r *Reader) WithFleet(reg fleet.Registry) *Reader {
	r.fleet = reg
	return r
}

// Read returns one row per queue, in queue.AllKeys order. A queue that
// cannot be read has its Error set; only a cancelled ctx fails the call.
func (r *Reader) Read(ctx context.Context) ([]Row, error) {
	rows := make([]Row, len(queue.AllKeys))
	var wg sync.WaitGroup
	for i, key := range queue.AllKeys {
		wg.Go(func() { rows[i] = r.row(ctx, key) })
	}
	var pauses fleet.PauseSet
	var pauseErr error
	if r.fleet != nil {
		var ps []fleet.Pause
		if ps, pauseErr = r.fleet.Pauses(ctx); pauseErr == nil {
			pauses = fleet.NewPauseSet(ps, r.prefix)
		}
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.fleet != nil {
		for i := range rows {
			rows[i].Paused = pausedBy(pauses, pauseErr, rows[i].Name)
		}
	}
	return rows, nil
}

// pausedBy says which pause stops receiving from the queue named name.
func pausedBy(pauses fleet.PauseSet, err error, name string) string {
	if err != nil {
		return "?"
	}
	p, ok := pauses.QueuePause(name)
	if !ok {
		return ""
	}
	if p.Kind == fleet.PauseType {
		return string(p.Kind) + " " + p.Name
	}
	return string(p.Kind)
}

func (r *Reader) row(ctx context.Context, key string) Row {
	row := Row{Key: key, Name: queue.Name(r.prefix, key)}
	q, err := r.queue(ctx, key, row.Name)
	var d queue.Depth
	if err == nil {
		d, err = q.Depth(ctx)
	}
	switch {
	case errors.Is(err, queue.ErrNotFound):
		row.Error = "does not exist"
	case err != nil:
		row.Error = err.Error()
	default:
		row.Visible, row.InFlight, row.Delayed = d.Visible, d.InFlight, d.Delayed
		if r.ages != nil {
			row.OldestAgeSeconds = r.ages.OldestAge(ctx, row.Name)
		}
	}
	return row
}

func (r *Reader) queue(ctx context.Context, key, name string) (queue.Queue, error) {
	r.mu.Lock()
	q, ok := r.opened[name]
	r.mu.Unlock()
	if ok {
		return q, nil
	}
	q, err := r.open(ctx, key, name)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.opened[name] = q
	r.mu.Unlock()
	return q, nil
}

// CloudWatchAPI is the part of the CloudWatch client CloudWatchAges uses.
type CloudWatchAPI interface {
	GetMetricStatistics(context.Context, *cloudwatch.GetMetricStatisticsInput, ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricStatisticsOutput, error)
}

// CloudWatchAges reads the age of the oldest message from CloudWatch: SQS
// has no queue attribute for it, only the metric
// ApproximateAgeOfOldestMessage (namespace AWS/SQS). The age is the latest
// 1-minute maximum of the last 15 minutes; nil when CloudWatch has no
// recent datapoint (an idle queue, an emulator that publishes no SQS
// metrics) or cannot be read.
type CloudWatchAges struct {
	Client CloudWatchAPI
	// Now tells the time (default time.Now).
	Now func() time.Time
}

// OldestAge implements Ages.
func (c CloudWatchAges) OldestAge(ctx context.Context, name string) *float64 {
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	out, err := c.Client.GetMetricStatistics(ctx, &cloudwatch.GetMetricStatisticsInput{
		Namespace:  aws.String(alarms.Namespace),
		MetricName: aws.String(alarms.MetricOldestAge),
		Dimensions: []cwtypes.Dimension{{Name: aws.String(alarms.DimensionQueue), Value: aws.String(name)}},
		StartTime:  aws.Time(now.Add(-15 * time.Minute)),
		EndTime:    aws.Time(now),
		Period:     aws.Int32(60),
		Statistics: []cwtypes.Statistic{cwtypes.StatisticMaximum},
	})
	if err != nil {
		return nil
	}
	var latest *cwtypes.Datapoint
	for i, p := range out.Datapoints {
		if p.Maximum != nil && p.Timestamp != nil && (latest == nil || p.Timestamp.After(*latest.Timestamp)) {
			latest = &out.Datapoints[i]
		}
	}
	if latest == nil {
		return nil
	}
	return latest.Maximum
}
