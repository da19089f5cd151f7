package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/millfleet/mill/internal/cli/progress"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/queue"
)

// The dlq commands are pkg/deadletter's Inspector on the command line; its
// doc says how the queue is read without being consumed.

// dlqEnv is the flag group of the dlq commands.
type dlqEnv struct {
	prefix, name string
	hold         time.Duration
	filter       deadletter.Filter
	claims       *wiring.Claims
}

func (e *dlqEnv) defineGroup(fs *flag.FlagSet, _ *app) {
	wiring.QueuePrefixVar(fs, &e.prefix)
	fs.StringVar(&e.name, "dead-letter-queue", "", "dead-letter queue `name` (default: the prefix + dead-letter)")
	fs.DurationVar(&e.hold, "hold", deadletter.DefaultHold, "visibility timeout of messages looked at (they are released when done)")
	fs.StringVar(&e.filter.Type, "type", "", "only tasks of this `type` (DUP, BIT, …)")
	fs.StringVar(&e.filter.Error, "error", "", "only tasks whose error contains `text` (case-insensitive)")
	fs.StringVar(&e.filter.Source, "source", "", "only tasks from this source queue (`key` or name)")
	e.claims = wiring.ClaimsFlags(fs)
}

// inspector checks the arguments (nargs: how many the command takes, 0 or
// 1) and --hold, and opens the dead-letter queue's inspector (behind the
// claim check, so bodies are resolved).
func (e *dlqEnv) inspector(ctx context.Context, a *app, args []string, nargs int) (*deadletter.Inspector, error) {
	switch {
	case nargs == 1 && len(args) != 1:
		return nil, usagef("want one message ID")
	case nargs == 0 && len(args) > 0:
		return nil, usagef("unexpected arguments: %q", args)
	}
	if e.hold < time.Second || e.hold > queue.MaxVisibility {
		return nil, usagef("--hold %v: want 1s to %v", e.hold, queue.MaxVisibility)
	}
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	return e.claims.DeadLetters(ctx, cfg.SQS(), cfg.S3(), e.name, deadletter.Config{Prefix: e.prefix, Hold: e.hold, Logger: a.logger})
}

const dlqListUsage = `List the messages on the dead-letter queue: message ID, task type, source
queue, attempts, when it failed, and the error (cut to --width). Filters:
--type, --error (substring, case-insensitive), --source (queue name or key).
The queue is read without consuming it: messages are received with a short
visibility timeout (--hold) and made visible again afterwards.`

// dlqListOptions are the options of dlq list.
type dlqListOptions struct {
	dlqEnv
	limit, width int
}

func (o *dlqListOptions) define(fs *flag.FlagSet, _ *app) {
	fs.IntVar(&o.limit, "limit", 100, "list at most `n` matching messages (0 = all)")
	fs.IntVar(&o.width, "width", 60, "cut errors to `n` characters (0 = no limit)")
}

func (o *dlqListOptions) run(ctx context.Context, a *app, args []string) error {
	in, err := o.inspector(ctx, a, args, 0)
	if err != nil {
		return err
	}
	l, err := in.List(ctx, o.filter, o.limit)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tSOURCE\tATTEMPTS\tFAILED\tERROR")
	for _, en := range l.Entries {
		d := en.Letter
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", en.Message.ID, cmp.Or(string(d.TaskType), "-"), cmp.Or(d.SourceQueue, "-"),
			d.Attempts, deadletter.Timestamp(d.Time), en.ErrorLine(o.width))
	}
	fmt.Fprintf(tw, "%d matching of %d looked at\n", len(l.Entries), l.Looked)
	return tw.Flush()
}

const dlqShowUsage = `Show one message of the dead-letter queue (by its ID as dlq list prints it,
or the ID the task had on its source queue): the dead-letter metadata, the
original task decoded, and the original body.`

// dlqShowOptions are the options of dlq show.
type dlqShowOptions struct{ dlqEnv }

func (o *dlqShowOptions) run(ctx context.Context, a *app, args []string) error {
	in, err := o.inspector(ctx, a, args, 1)
	if err != nil {
		return err
	}
	en, err := in.Find(ctx, args[0])
	if err == nil {
		printDeadLetter(a, en)
	}
	return err
}

const dlqRedriveUsage = `Send each matching message of the dead-letter queue back to the queue it
failed on — its original body, with attempts reset to 0 unless
--keep-attempts — and only then delete it from the dead-letter queue: a
crash in between duplicates a task, it never loses one. Only Mill's work
queues under --queue-prefix are targets: a message naming another source
queue is refused, and messages the SQS redrive policy moved (not in Mill's
dead-letter form) carry no source queue and are skipped, unless --to names
one. --rate limits sends per second; --dry-run only says what would be sent.
On a terminal a progress bar shows the way, otherwise a log line per batch.`

// dlqRedriveOptions are the options of dlq redrive.
type dlqRedriveOptions struct {
	dlqEnv
	r deadletter.Redrive
}

func (o *dlqRedriveOptions) define(fs *flag.FlagSet, _ *app) {
	fs.BoolVar(&o.r.KeepAttempts, "keep-attempts", false, "send the tasks with their attempts as they were")
	fs.BoolVar(&o.r.DryRun, "dry-run", false, "print what would be redriven; change nothing")
	fs.Float64Var(&o.r.Rate, "rate", 0, "send at most `n` messages per second (0 = no limit)")
	fs.StringVar(&o.r.To, "to", "", "queue `key` or name for messages without a source queue of Mill's")
}

func (o *dlqRedriveOptions) run(ctx context.Context, a *app, args []string) error {
	in, err := o.inspector(ctx, a, args, 0)
	if err != nil {
		return err
	}
	r := o.r
	if r.Rate < 0 {
		return usagef("--rate must not be negative")
	}
	r.Filter, r.Each = o.filter, nil
	if r.DryRun {
		r.Each = func(en *deadletter.Entry, target string) {
			fmt.Fprintf(a.stdout, "would redrive %s %s → %s\n", en.Message.ID, cmp.Or(string(en.Letter.TaskType), "-"), target)
		}
	}
	bar := o.progress(ctx, a, in, &r)
	start := time.Now()
	st, err := in.Redrive(ctx, r)
	if bar != nil {
		bar.Finish()
	}
	fmt.Fprintf(a.stdout, "redrive: %s, in %v\n", st.Summary(r.DryRun), time.Since(start).Round(time.Millisecond))
	return err
}

// progress sets r.Progress: a progress bar on a terminal (returned, to
// finish), otherwise a log line per batch.
func (o *dlqRedriveOptions) progress(ctx context.Context, a *app, in *deadletter.Inspector, r *deadletter.Redrive) *progress.Bar {
	var bar *progress.Bar
	if d, err := in.Depth(ctx); !r.DryRun && isTerminal(a.stderr) && err == nil {
		bar = progress.New(a.stderr, "redrive", map[bool]int{true: int(d.Visible + d.InFlight)}[o.filter.Empty()])
	}
	done, dryRun := 0, r.DryRun
	r.Progress = func(st deadletter.RedriveStats) {
		if bar != nil {
			bar.Add(st.Redriven + st.Failed - done)
		} else if !dryRun && st.Redriven+st.Failed > done {
			a.logger.Info("redriven", "messages", st.Redriven, "failed", st.Failed, "looked", st.Looked)
		}
		done = st.Redriven + st.Failed
	}
	return bar
}

const dlqPurgeUsage = `Delete messages from the dead-letter queue. Without filters the whole queue
is purged (SQS PurgeQueue); with --type, --error or --source only matching
messages are deleted. Asks for confirmation on stdin unless --yes.`

// dlqPurgeOptions are the options of dlq purge.
type dlqPurgeOptions struct {
	dlqEnv
	yes bool
}

func (o *dlqPurgeOptions) define(fs *flag.FlagSet, _ *app) {
	fs.BoolVar(&o.yes, "yes", false, "do not ask for confirmation")
}

func (o *dlqPurgeOptions) run(ctx context.Context, a *app, args []string) error {
	in, err := o.inspector(ctx, a, args, 0)
	if err != nil {
		return err
	}
	res, err := in.Purge(ctx, deadletter.Purge{Filter: o.filter, Confirm: func(n, looked int) bool {
		if looked < 0 {
			return o.yes || confirm(a, fmt.Sprintf("Purge all %d messages of %s?", n, in.QueueName()))
		}
		return o.yes || confirm(a, fmt.Sprintf("Delete %d matching messages of %s (of %d looked at)?", n, in.QueueName(), looked))
	}})
	if err == nil || res.Deleted+res.Failed > 0 {
		fmt.Fprintf(a.stdout, "purge: %s\n", res.Summary(in.QueueName()))
	}
	return err
}

// printDeadLetter prints one dead letter in full (dlq show).
func printDeadLetter(a *app, en *deadletter.Entry) {
	w, d := a.stdout, en.Letter
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	for _, f := range en.Provenance() {
		fmt.Fprintf(tw, "%s:\t%s\n", f.Name, f.Value)
	}
	_ = tw.Flush()
	if !en.Foreign {
		fmt.Fprintf(w, "error:\n  %s\n", indent(d.Error))
	}
	if format, desc, err := deadletter.DescribeTask(d.Body); err == nil {
		fmt.Fprintf(w, "task (%s):\n  %s\n", format, indent(desc))
	} else {
		fmt.Fprintf(w, "task: not decodable: %v\n", err)
	}
	fmt.Fprintf(w, "body:\n  %s\n", indent(string(d.Body)))
}
