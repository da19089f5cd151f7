package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/millfleet/mill/pkg/fleet/dynamofleet"
	"golang.org/x/term"

	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/queuestats"
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
only on a terminal); --json prints one JSON array per refresh.
--wait-empty D waits, at most D, until every work queue (all but the
dead-letter queue) is empty — nothing visible, in flight or delayed, on
two reads a second apart — then prints the table; exit 1 when D passes
first (for scripts: wait until the mill has done what it was given).`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			prefix := queuePrefixFlag(fs)
			watch := fs.Bool("watch", false, "refresh until interrupted")
			interval := fs.Duration("interval", 5*time.Second, "refresh `interval` with --watch")
			asJSON := fs.Bool("json", false, "print JSON")
			noAge := fs.Bool("no-age", false, "do not ask CloudWatch for the oldest message age")
			fleetTable := fs.String("fleet-table", fleet.DefaultTable, "DynamoDB `table` of the fleet registry, for the pauses (empty: not shown)")
			waitEmpty := fs.Duration("wait-empty", 0, "wait at most this `long` until every work queue is empty, then print (0: do not wait)")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected arguments: %q", args)
				}
				if *interval <= 0 {
					return usagef("--interval must be positive")
				}
				if *waitEmpty < 0 || (*waitEmpty > 0 && *watch) {
					return usagef("--wait-empty: a positive duration, without --watch")
				}
				awsCfg, err := a.awsConfig(ctx)
				if err != nil {
					return err
				}
				var ages queuestats.Ages
				if !*noAge {
					ages = queuestats.CloudWatchAges{Client: awsCfg.CloudWatch()}
				}
				sqsc := awsCfg.SQS()
				qs := queuestats.New(*prefix, func(ctx context.Context, _, name string) (queue.Queue, error) {
					return sqsqueue.Open(ctx, sqsc, name, sqsqueue.Config{})
				}, ages)
				if *fleetTable != "" {
					qs.WithFleet(dynamofleet.New(awsCfg.DynamoDB(), *fleetTable, nil))
				}
				if *waitEmpty > 0 {
					if err := waitQueuesEmpty(ctx, qs, *waitEmpty); err != nil {
						return err
					}
				}
				return watchLoop(ctx, a, *watch, *asJSON, *interval, func(ctx context.Context) (any, func(io.Writer) error, error) {
					rows, err := qs.Read(ctx)
					return rows, func(w io.Writer) error { return printQueueTable(w, rows) }, err
				})
			}
		},
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
