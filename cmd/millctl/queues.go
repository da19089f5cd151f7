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

	"golang.org/x/term"

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
--watch refreshes every --interval until interrupted (clearing the screen
only on a terminal); --json prints one JSON array per refresh.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			prefix := queuePrefixFlag(fs)
			watch := fs.Bool("watch", false, "refresh until interrupted")
			interval := fs.Duration("interval", 5*time.Second, "refresh `interval` with --watch")
			asJSON := fs.Bool("json", false, "print JSON")
			noAge := fs.Bool("no-age", false, "do not ask CloudWatch for the oldest message age")
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
				var ages queuestats.Ages
				if !*noAge {
					ages = queuestats.CloudWatchAges{Client: awsCfg.CloudWatch()}
				}
				sqsc := awsCfg.SQS()
				qs := queuestats.New(*prefix, func(ctx context.Context, _, name string) (queue.Queue, error) {
					return sqsqueue.Open(ctx, sqsc, name, sqsqueue.Config{})
				}, ages)
				clear := *watch && !*asJSON && isTerminal(a.stdout)
				for {
					rows, err := qs.Read(ctx)
					if err != nil {
						return err
					}
					if clear {
						fmt.Fprint(a.stdout, "\033[H\033[2J")
					}
					if *asJSON {
						err = json.NewEncoder(a.stdout).Encode(rows)
					} else {
						if *watch {
							fmt.Fprintf(a.stdout, "%s — every %v, ^C to stop\n", time.Now().Format(time.DateTime), *interval)
						}
						err = printQueueTable(a.stdout, rows)
					}
					if err != nil || !*watch {
						return err
					}
					select {
					case <-ctx.Done():
						return nil
					case <-time.After(*interval):
					}
				}
			}
		},
	})
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func printQueueTable(w io.Writer, rows []queuestats.Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tVISIBLE\tIN FLIGHT\tDELAYED\tOLDEST")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\n", r.Name, r.Error)
			continue
		}
		age := "-"
		if r.OldestAgeSeconds != nil {
			age = (time.Duration(*r.OldestAgeSeconds) * time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, strconv.FormatInt(r.Visible, 10), strconv.FormatInt(r.InFlight, 10), strconv.FormatInt(r.Delayed, 10), age)
	}
	return tw.Flush()
}
