package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/millfleet/mill/internal/ops/queuestats"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/fleet/dynamofleet"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
)

const queuesUsage = `Show each queue's approximate depth: visible, in flight (received, not yet
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
only on a terminal); --json prints one JSON array per refresh.
--wait-empty D waits, at most D, until every work queue (all but the
dead-letter queue) is empty — nothing visible, in flight or delayed, on
two reads a second apart — then prints the table; exit 1 when D passes
first (for scripts: wait until the mill has done what it was given).`

// queuesOptions are the options of queues.
type queuesOptions struct {
	prefix, fleetTable  string
	watch, json, noAge  bool
	interval, waitEmpty time.Duration
}

func (o *queuesOptions) define(fs *flag.FlagSet, _ *app) {
	wiring.QueuePrefixVar(fs, &o.prefix)
	fs.BoolVar(&o.watch, "watch", false, "refresh until interrupted")
	fs.DurationVar(&o.interval, "interval", 5*time.Second, "refresh `interval` with --watch")
	fs.BoolVar(&o.json, "json", false, "print JSON")
	fs.BoolVar(&o.noAge, "no-age", false, "do not ask CloudWatch for the oldest message age")
	fs.StringVar(&o.fleetTable, "fleet-table", fleet.DefaultTable, "DynamoDB `table` of the fleet registry, for the pauses (empty: not shown)")
	fs.DurationVar(&o.waitEmpty, "wait-empty", 0, "wait at most this `long` until every work queue is empty, then print (0: do not wait)")
}

func (o *queuesOptions) run(ctx context.Context, a *app, args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	if o.interval <= 0 {
		return usagef("--interval must be positive")
	}
	if o.waitEmpty < 0 || (o.waitEmpty > 0 && o.watch) {
		return usagef("--wait-empty: a positive duration, without --watch")
	}
	awsCfg, err := a.awsConfig(ctx)
	if err != nil {
		return err
	}
	var ages queuestats.Ages
	if !o.noAge {
		ages = queuestats.CloudWatchAges{Client: awsCfg.CloudWatch()}
	}
	sqsc := awsCfg.SQS()
	qs := queuestats.New(o.prefix, func(ctx context.Context, _, name string) (queue.Queue, error) {
		return sqsqueue.Open(ctx, sqsc, name, sqsqueue.Config{})
	}, ages)
	if o.fleetTable != "" {
		qs.WithFleet(dynamofleet.New(awsCfg.DynamoDB(), o.fleetTable, nil))
	}
	if o.waitEmpty > 0 {
		if err := waitQueuesEmpty(ctx, qs, o.waitEmpty); err != nil {
			return err
		}
	}
	return watchLoop(ctx, a, o.watch, o.json, o.interval, func(ctx context.Context) (any, func(io.Writer) error, error) {
		rows, err := qs.Read(ctx)
		return rows, func(w io.Writer) error { return printQueueTable(w, rows) }, err
	})
}

// waitQueuesEmpty waits until every work queue is empty on two reads in
// a row, at most d.
func waitQueuesEmpty(ctx context.Context, qs *queuestats.Reader, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	empty := 0
	for {
		rows, err := qs.Read(ctx)
		if err != nil && ctx.Err() == nil {
			return err
		}
		busy := ""
		for _, r := range rows {
			if r.Key == queue.KeyDeadLetter {
				continue
			}
			if r.Error != "" {
				return fmt.Errorf("%s: %s", r.Name, r.Error)
			}
			if r.Visible+r.InFlight+r.Delayed > 0 && busy == "" {
				busy = fmt.Sprintf("%s (%d visible, %d in flight, %d delayed)", r.Name, r.Visible, r.InFlight, r.Delayed)
			}
		}
		if busy == "" && err == nil {
			if empty++; empty == 2 {
				return nil
			}
		} else {
			empty = 0
		}
		select {
		case <-ctx.Done():
			if busy == "" {
				busy = "the queues could not be read"
			}
			return fmt.Errorf("not empty after %v: %s", d, busy)
		case <-time.After(time.Second):
		}
	}
}

func printQueueTable(w io.Writer, rows []queuestats.Row) error {
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
