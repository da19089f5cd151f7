package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/millfleet/mill/pkg/fleet/dynamofleet"

	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// fleetRegistry opens the fleet registry in table.
func (a *app) fleetRegistry(ctx context.Context, table string) (*dynamofleet.Registry, error) {
	awsCfg, err := a.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	return dynamofleet.New(awsCfg.DynamoDB(), table, nil), nil
}

const fleetUsage = `Show the fleet registry: one line per Workman (worker ID, state, EC2 instance
and zone, version, uptime, age of its last heartbeat, queues, pool size,
messages held, tasks running by type, and tasks processed, failed and
dead-lettered since it started), the totals per state, and the pauses in force
(millctl pause). A worker that has not written a heartbeat for three of its
intervals is lost: it is marked "!" (in red on a terminal). Workers that shut
down cleanly are gone; they are counted, and listed with --all (their records
expire after an hour). --watch refreshes every --interval until interrupted;
--json prints one JSON object per refresh (the workers with the state shown,
the totals and the pauses).`

// fleetOptions are the options of fleet.
type fleetOptions struct {
	table, prefix    string
	watch, json, all bool
	interval         time.Duration
}

func (o *fleetOptions) define(fs *flag.FlagSet, _ *app) {
	fleetTableVar(fs, &o.table)
	wiring.QueuePrefixVar(fs, &o.prefix)
	fs.BoolVar(&o.watch, "watch", false, "refresh until interrupted")
	fs.DurationVar(&o.interval, "interval", 5*time.Second, "refresh `interval` with --watch")
	fs.BoolVar(&o.json, "json", false, "print JSON")
	fs.BoolVar(&o.all, "all", false, "also list the workers that are gone")
}

func (o *fleetOptions) run(ctx context.Context, a *app, args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	if o.interval <= 0 {
		return usagef("--interval must be positive")
	}
	reg, err := a.fleetRegistry(ctx, o.table)
	if err != nil {
		return err
	}
	color := isTerminal(a.stdout) && !o.json
	return watchLoop(ctx, a, o.watch, o.json, o.interval, func(ctx context.Context) (any, func(io.Writer) error, error) {
		s, err := fleet.Read(ctx, reg, time.Now())
		return s, func(w io.Writer) error { return printFleet(w, s, o.prefix, o.all, color) }, err
	})
}

const pauseUsage = `millctl pause [--reason TEXT] TYPE|QUEUE...

Pause task types (DUP, BIT, BIT_REPORT, BIT_ERROR, AUDIT, NOOP) or queues (a
queue key such as dup-low, named with --queue-prefix, or a full queue name)
for the whole fleet. Every Workman reads the pauses with its heartbeat, so
within one interval (30 s by default): a paused queue is not received from; a
paused type's queues are not received from, and its tasks already received —
waiting or running — are handed back to their queue (visibility 0), not
counted as attempts. Nothing is lost: the messages wait in their queues until
millctl resume. Pausing again replaces the reason. A queue must exist.`

// pauseOptions are the options of pause.
type pauseOptions struct{ table, prefix, reason string }

func (o *pauseOptions) define(fs *flag.FlagSet, _ *app) {
	fleetTableVar(fs, &o.table)
	wiring.QueuePrefixVar(fs, &o.prefix)
	fs.StringVar(&o.reason, "reason", "", "why (shown in millctl fleet)")
}

func (o *pauseOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) == 0 {
		return usagef("name a task type or a queue to pause")
	}
	awsCfg, err := a.awsConfig(ctx)
	if err != nil {
		return err
	}
	var ps []fleet.Pause
	var errs []error
	for _, arg := range args {
		p, err := pauseTarget(ctx, awsCfg.SQS(), o.prefix, arg)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ps = append(ps, p)
	}
	if err := errors.Join(errs...); err != nil {
		return usagef("%v", err)
	}
	reg := dynamofleet.New(awsCfg.DynamoDB(), o.table, nil)
	for _, p := range ps {
		p.By, p.At, p.Reason = operator(), time.Now(), o.reason
		if err := reg.Pause(ctx, p); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "paused %s\n", p)
	}
	return nil
}

const resumeUsage = `millctl resume TYPE|QUEUE...

Lift pauses set by millctl pause (the same names). Every Workman receives
from the queue, or runs the type, again within one heartbeat interval.`

// resumeOptions are the options of resume.
type resumeOptions struct{ table, prefix string }

func (o *resumeOptions) define(fs *flag.FlagSet, _ *app) {
	fleetTableVar(fs, &o.table)
	wiring.QueuePrefixVar(fs, &o.prefix)
}

func (o *resumeOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) == 0 {
		return usagef("name a task type or a queue to resume")
	}
	reg, err := a.fleetRegistry(ctx, o.table)
	if err != nil {
		return err
	}
	for _, arg := range args {
		p := fleet.ParseTarget(o.prefix, arg)
		ok, err := reg.Resume(ctx, p.Kind, p.Name)
		if err != nil {
			return err
		}
		if ok {
			fmt.Fprintf(a.stdout, "resumed %s %s\n", p.Kind, p.Name)
		} else {
			fmt.Fprintf(a.stdout, "%s %s was not paused\n", p.Kind, p.Name)
		}
	}
	return nil
}

// pauseTarget is the pause arg asks for; a queue must exist (a typo must
// not pause nothing and look done).
func pauseTarget(ctx context.Context, sq *sqs.Client, prefix, arg string) (fleet.Pause, error) {
	p := fleet.ParseTarget(prefix, arg)
	if p.Kind == fleet.PauseQueue {
		if p.Name == queue.Name(prefix, queue.KeyDeadLetter) {
			return fleet.Pause{}, fmt.Errorf("%s: Workman never receives from the dead-letter queue", arg)
		}
		if _, err := sq.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(p.Name)}); err != nil {
			return fleet.Pause{}, fmt.Errorf("%s is not a task type (%s) nor an existing queue: %v", arg, knownTypes(), err)
		}
	}
	return p, nil
}

func knownTypes() string {
	var ts []string
	for t := range fleet.TypeQueues {
		ts = append(ts, string(t))
	}
	ts = append(ts, string(task.TypeNoop))
	sort.Strings(ts)
	return strings.Join(ts, ", ")
}

// shortQueue strips prefix from a queue name that is one of Mill's keys.
func shortQueue(prefix, name string) string {
	if k, ok := strings.CutPrefix(name, prefix); ok && slices.Contains(queue.AllKeys, k) {
		return k
	}
	return name
}

func ago(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return d.Round(time.Minute).String()
	default:
		return d.Round(time.Hour).String()
	}
}

// typeCounts formats a map by type: "DUP 3, BIT 1" ("-" when empty).
func typeCounts[V any](m map[string]V, f func(V) int64) string {
	var parts []string
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if n := f(m[k]); n != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func printFleet(w io.Writer, s fleet.Snapshot, prefix string, all, color bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  WORKER\tSTATE\tINSTANCE\tZONE\tVERSION\tUP\tBEAT\tQUEUES\tPOOL\tHELD\tRUNNING\tPROCESSED\tFAILED\tDEAD")
	for _, wk := range s.Workers {
		if wk.State == fleet.StateGone && !all {
			continue
		}
		mark, state := " ", string(wk.State)
		if wk.State == fleet.StateLost {
			mark = "!"
			if color {
				state = "\033[1;31m" + state + "\033[0m"
			}
		}
		if wk.Note != "" && wk.State == fleet.StateDraining {
			state += " (" + wk.Note + ")"
		}
		qs := make([]string, len(wk.Queues))
		for i, q := range wk.Queues {
			qs[i] = shortQueue(prefix, q)
		}
		up := "-"
		if !wk.Started.IsZero() {
			up = ago(s.At.Sub(wk.Started))
		}
		tot := wk.Total()
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\t%s\t%s ago\t%s\t%d\t%d\t%s\t%d\t%d\t%d\n", mark, wk.ID, state,
			dash(wk.InstanceID), dash(wk.Zone), dash(wk.Version), up, ago(s.At.Sub(wk.Heartbeat)),
			strings.Join(qs, ","), wk.Pool, wk.Held, typeCounts(wk.Running, func(n int) int64 { return int64(n) }),
			tot.Processed, tot.Failed, tot.DeadLettered)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var totals []string
	for _, st := range fleet.States {
		totals = append(totals, fmt.Sprintf("%d %s", s.Totals[st], st))
	}
	fmt.Fprintf(w, "\nworkers: %s\n", strings.Join(totals, ", "))
	printOutages(w, s)
	if len(s.Pauses) == 0 {
		fmt.Fprintln(w, "pauses: none")
		return nil
	}
	fmt.Fprintln(w, "pauses:")
	for _, p := range s.Pauses {
		fmt.Fprintf(w, "  %s\n", p)
	}
	return nil
}

// printOutages lists the dependencies workers found down: what they hold
// back, since when.
func printOutages(w io.Writer, s fleet.Snapshot) {
	for _, wk := range s.Workers {
		if wk.State == fleet.StateGone || wk.State == fleet.StateLost {
			continue
		}
		for _, o := range wk.Outages {
			fmt.Fprintf(w, "outage: %s: %s down for %s, holding back %s", wk.ID, o.Dependency, ago(s.At.Sub(o.Since)), dash(strings.Join(o.Types, ",")))
			if o.Cause != "" {
				fmt.Fprintf(w, " (%s)", o.Cause)
			}
			fmt.Fprintln(w)
		}
	}
}
