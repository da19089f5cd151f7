package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"golang.org/x/term"

	"github.com/millfleet/mill/pkg/alarms"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
)

func init() {
	register(&command{
		name:    "queues",
		summary: "show the depth of the seven queues (visible, in flight, delayed, oldest message age)",
		usage: `Show each queue's approximate depth: visible, in flight (received, not yet
deleted) and delayed messages, read from the queue attributes, and the age of
its oldest message. SQS has no queue attribute for that age: it is the
CloudWatch metric ApproximateAgeOfOldestMessage (namespace AWS/SQS), read
with GetMetricStatistics (the latest 1-minute maximum of the last 15
minutes). It is "-" when CloudWatch has no recent datapoint (an idle queue,
a local emulator that publishes no SQS metrics) or cannot be read.
PAUSED names the fleet-wide pause that stops Workman from receiving from the
queue (millctl pause: the queue's own, or its task type's), read from the
fleet table ("?" when it cannot be read).
--watch refreshes every --interval until interrupted (clearing the screen
only on a terminal); --json prints one JSON array per refresh.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			prefix := queuePrefixFlag(fs)
			watch := fs.Bool("watch", false, "refresh until interrupted")
			interval := fs.Duration("interval", 5*time.Second, "refresh `interval` with --watch")
			asJSON := fs.Bool("json", false, "print JSON")
			noAge := fs.Bool("no-age", false, "do not ask CloudWatch for the oldest message age")
			fleetTable := fs.String("fleet-table", fleet.DefaultTable, "DynamoDB `table` of the fleet registry, for the pauses (empty: not shown)")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected arguments: %q", args)
				}
				if *interval <= 0 {
					return usagef("--interval must be positive")
				}
				awsCfg, err := a.awsConfig(ctx)
				if err != nil {
					return err
				}
				var cw ageAPI
				if !*noAge {
					cw = awsCfg.CloudWatch()
				}
				qs := &queueStats{sqs: awsCfg.SQS(), cw: cw, prefix: *prefix}
				if *fleetTable != "" {
					qs.fleet = fleet.NewDynamo(awsCfg.DynamoDB(), *fleetTable, nil)
				}
				return watchLoop(ctx, a, *watch, *asJSON, *interval, func(ctx context.Context) (any, func(io.Writer) error, error) {
					rows, err := qs.read(ctx)
					return rows, func(w io.Writer) error { return printQueueTable(w, rows) }, err
				})
			}
		},
	})
}

// watchLoop prints what read returns — as JSON (one value per refresh)
// or as its text — once, or with watch every interval until ctx ends,
// clearing the screen between refreshes on a terminal.
func watchLoop(ctx context.Context, a *app, watch, asJSON bool, interval time.Duration, read func(context.Context) (any, func(io.Writer) error, error)) error {
	clear := watch && !asJSON && isTerminal(a.stdout)
	for {
		v, text, err := read(ctx)
		if err != nil {
			return err
		}
		if clear {
			fmt.Fprint(a.stdout, "\033[H\033[2J")
		}
		if asJSON {
			err = json.NewEncoder(a.stdout).Encode(v)
		} else {
			if watch {
				fmt.Fprintf(a.stdout, "%s — every %v, ^C to stop\n", time.Now().Format(time.DateTime), interval)
			}
			err = text(a.stdout)
		}
		if err != nil || !watch {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// queueRow is one line of `millctl queues`.
type queueRow struct {
	Key      string `json:"key"`
	Name     string `json:"name"`
	Visible  int64  `json:"visible"`
	InFlight int64  `json:"in_flight"`
	Delayed  int64  `json:"delayed"`
	// OldestAgeSeconds is nil when CloudWatch has no recent datapoint.
	OldestAgeSeconds *float64 `json:"oldest_age_seconds"`
	// Paused names the fleet-wide pause that stops receiving from the
	// queue ("type DUP", "queue"), "?" when the pauses could not be read.
	Paused string `json:"paused,omitempty"`
	// Error is set (and the counts are 0) when the queue could not be read.
	Error string `json:"error,omitempty"`
}

// ageAPI is the part of the CloudWatch client `queues` uses.
type ageAPI interface {
	GetMetricStatistics(context.Context, *cloudwatch.GetMetricStatisticsInput, ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricStatisticsOutput, error)
}

type queueStats struct {
	sqs    sqsqueue.API
	cw     ageAPI // nil: no ages
	prefix string
	fleet  fleet.Registry // nil: pauses not shown
	opened map[string]*sqsqueue.Queue
}

func (s *queueStats) read(ctx context.Context) ([]queueRow, error) {
	if s.opened == nil {
		s.opened = map[string]*sqsqueue.Queue{}
	}
	var pauses fleet.PauseSet
	var pauseErr error
	if s.fleet != nil {
		var ps []fleet.Pause
		if ps, pauseErr = s.fleet.Pauses(ctx); pauseErr == nil {
			pauses = fleet.NewPauseSet(ps, s.prefix)
		}
	}
	rows := make([]queueRow, 0, len(queue.AllKeys))
	for _, key := range queue.AllKeys {
		r := queueRow{Key: key, Name: queue.Name(s.prefix, key)}
		if p, ok := pauses.QueuePause(r.Name); ok {
			r.Paused = string(p.Kind)
			if p.Kind == fleet.PauseType {
				r.Paused += " " + p.Name
			}
		} else if pauseErr != nil {
			r.Paused = "?"
		}
		q, err := s.open(ctx, r.Name)
		var d queue.Depth
		if err == nil {
			d, err = q.Depth(ctx)
		}
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, queue.ErrNotFound):
			r.Error = "does not exist"
		case err != nil:
			r.Error = err.Error()
		default:
			r.Visible, r.InFlight, r.Delayed = d.Visible, d.InFlight, d.Delayed
			r.OldestAgeSeconds = s.oldestAge(ctx, r.Name)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func (s *queueStats) open(ctx context.Context, name string) (*sqsqueue.Queue, error) {
	if q, ok := s.opened[name]; ok {
		return q, nil
	}
	q, err := sqsqueue.Open(ctx, s.sqs, name, sqsqueue.Config{})
	if err == nil {
		s.opened[name] = q
	}
	return q, err
}

// oldestAge returns the latest ApproximateAgeOfOldestMessage of the last 15
// minutes, or nil.
func (s *queueStats) oldestAge(ctx context.Context, name string) *float64 {
	if s.cw == nil {
		return nil
	}
	now := time.Now()
	out, err := s.cw.GetMetricStatistics(ctx, &cloudwatch.GetMetricStatisticsInput{
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

func printQueueTable(w io.Writer, rows []queueRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tVISIBLE\tIN FLIGHT\tDELAYED\tOLDEST\tPAUSED")
	for _, r := range rows {
		paused := r.Paused
		if paused == "" {
			paused = "-"
		}
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\t%s\n", r.Name, paused, r.Error)
			continue
		}
		age := "-"
		if r.OldestAgeSeconds != nil {
			age = (time.Duration(*r.OldestAgeSeconds) * time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, strconv.FormatInt(r.Visible, 10), strconv.FormatInt(r.InFlight, 10), strconv.FormatInt(r.Delayed, 10), age, paused)
	}
	return tw.Flush()
}
