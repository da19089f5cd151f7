package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/millfleet/mill/internal/progress"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/queue"
)

// The dlq commands are pkg/deadletter's Inspector on the command line; its
// doc says how the queue is read without being consumed.
func init() {
	register(&command{name: "dlq list", summary: "list dead-lettered tasks (without consuming them)",
		usage: `List the messages on the dead-letter queue: message ID, task type, source
queue, attempts, when it failed, and the error (cut to --width). Filters:
--type, --error (substring, case-insensitive), --source (queue name or key).
The queue is read without consuming it: messages are received with a short
visibility timeout (--hold) and made visible again afterwards.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			e := dlqFlags(fs, a)
			limit := fs.Int("limit", 100, "list at most `n` matching messages (0 = all)")
			width := fs.Int("width", 60, "cut errors to `n` characters (0 = no limit)")
			return e.run(func(ctx context.Context, in *deadletter.Inspector, args []string) error {
				l, err := in.List(ctx, e.filter, *limit)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tTYPE\tSOURCE\tATTEMPTS\tFAILED\tERROR")
				for _, en := range l.Entries {
					d := en.Letter
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", en.Message.ID, cmp.Or(string(d.TaskType), "-"), cmp.Or(d.SourceQueue, "-"),
						d.Attempts, deadletter.Timestamp(d.Time), en.ErrorLine(*width))
				}
				fmt.Fprintf(tw, "%d matching of %d looked at\n", len(l.Entries), l.Looked)
				return tw.Flush()
			})
		}})
	register(&command{name: "dlq show", summary: "show one dead-lettered task in full",
		usage: `Show one message of the dead-letter queue (by its ID as dlq list prints it,
or the ID the task had on its source queue): the dead-letter metadata, the
original task decoded, and the original body.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			e := dlqFlags(fs, a)
			e.args = 1
			return e.run(func(ctx context.Context, in *deadletter.Inspector, args []string) error {
				en, err := in.Find(ctx, args[0])
				if err == nil {
					printDeadLetter(e, en)
				}
				return err
			})
		}})
	register(&command{name: "dlq redrive", summary: "send dead-lettered tasks back to their source queues",
		usage: `Send each matching message of the dead-letter queue back to the queue it
failed on — its original body, with attempts reset to 0 unless
--keep-attempts — and only then delete it from the dead-letter queue: a
crash in between duplicates a task, it never loses one. Only Mill's work
queues under --queue-prefix are targets: a message naming another source
queue is refused, and messages the SQS redrive policy moved (not in Mill's
dead-letter form) carry no source queue and are skipped, unless --to names
one. --rate limits sends per second; --dry-run only says what would be sent.
On a terminal a progress bar shows the way, otherwise a log line per batch.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			e := dlqFlags(fs, a)
			r := deadletter.Redrive{}
			fs.BoolVar(&r.KeepAttempts, "keep-attempts", false, "send the tasks with their attempts as they were")
			fs.BoolVar(&r.DryRun, "dry-run", false, "print what would be redriven; change nothing")
			fs.Float64Var(&r.Rate, "rate", 0, "send at most `n` messages per second (0 = no limit)")
			fs.StringVar(&r.To, "to", "", "queue `key` or name for messages without a source queue of Mill's")
			return e.run(func(ctx context.Context, in *deadletter.Inspector, args []string) error {
				if r.Rate < 0 {
					return usagef("--rate must not be negative")
				}
				r.Filter, r.Each = e.filter, nil
				if r.DryRun {
					r.Each = func(en *deadletter.Entry, target string) {
						fmt.Fprintf(a.stdout, "would redrive %s %s → %s\n", en.Message.ID, cmp.Or(string(en.Letter.TaskType), "-"), target)
					}
				}
				var bar *progress.Bar
				if d, err := in.Depth(ctx); !r.DryRun && isTerminal(a.stderr) && err == nil {
					bar = progress.New(a.stderr, "redrive", map[bool]int{true: int(d.Visible + d.InFlight)}[e.filter.Empty()])
				}
				done := 0
				r.Progress = func(st deadletter.RedriveStats) {
					if bar != nil {
						bar.Add(st.Redriven + st.Failed - done)
					} else if !r.DryRun && st.Redriven+st.Failed > done {
						a.logger.Info("redriven", "messages", st.Redriven, "failed", st.Failed, "looked", st.Looked)
					}
					done = st.Redriven + st.Failed
				}
				start := time.Now()
				st, err := in.Redrive(ctx, r)
				if bar != nil {
					bar.Finish()
				}
				fmt.Fprintf(a.stdout, "redrive: %s, in %v\n", st.Summary(r.DryRun), time.Since(start).Round(time.Millisecond))
				return err
			})
		}})
	register(&command{name: "dlq purge", summary: "delete dead-lettered tasks (all, or those matching filters)",
		usage: `Delete messages from the dead-letter queue. Without filters the whole queue
is purged (SQS PurgeQueue); with --type, --error or --source only matching
messages are deleted. Asks for confirmation on stdin unless --yes.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			e := dlqFlags(fs, a)
			yes := fs.Bool("yes", false, "do not ask for confirmation")
			return e.run(func(ctx context.Context, in *deadletter.Inspector, args []string) error {
				res, err := in.Purge(ctx, deadletter.Purge{Filter: e.filter, Confirm: func(n, looked int) bool {
					if looked < 0 {
						return *yes || confirm(a, fmt.Sprintf("Purge all %d messages of %s?", n, in.QueueName()))
					}
					return *yes || confirm(a, fmt.Sprintf("Delete %d matching messages of %s (of %d looked at)?", n, in.QueueName(), looked))
				}})
				if err == nil || res.Deleted+res.Failed > 0 {
					fmt.Fprintf(a.stdout, "purge: %s\n", res.Summary(in.QueueName()))
				}
				return err
			})
		}})
}

// dlqEnv is what the dlq commands share: their flags.
type dlqEnv struct {
	a            *app
	prefix, name *string
	hold         *time.Duration
	filter       deadletter.Filter
	claims       *wiring.Claims
	args         int // positional arguments the command takes
}

func dlqFlags(fs *flag.FlagSet, a *app) *dlqEnv {
	e := &dlqEnv{a: a, prefix: queuePrefixFlag(fs)}
	e.name = fs.String("dead-letter-queue", "", "dead-letter queue `name` (default: the prefix + dead-letter)")
	e.hold = fs.Duration("hold", deadletter.DefaultHold, "visibility timeout of messages looked at (they are released when done)")
	fs.StringVar(&e.filter.Type, "type", "", "only tasks of this `type` (DUP, BIT, …)")
	fs.StringVar(&e.filter.Error, "error", "", "only tasks whose error contains `text` (case-insensitive)")
	fs.StringVar(&e.filter.Source, "source", "", "only tasks from this source queue (`key` or name)")
	e.claims = wiring.ClaimsFlags(fs)
	return e
}

// run returns a command's action: fn with the dead-letter queue's
// inspector (behind the claim check, so bodies are resolved).
func (e *dlqEnv) run(fn func(context.Context, *deadletter.Inspector, []string) error) func(context.Context, []string) error {
	return func(ctx context.Context, args []string) error {
		switch {
		case e.args == 1 && len(args) != 1:
			return usagef("want one message ID")
		case e.args == 0 && len(args) > 0:
			return usagef("unexpected arguments: %q", args)
		}
		if *e.hold < time.Second || *e.hold > queue.MaxVisibility {
			return usagef("--hold %v: want 1s to %v", *e.hold, queue.MaxVisibility)
		}
		cfg, err := e.a.awsConfig(ctx)
		if err != nil {
			return err
		}
		in, err := e.claims.DeadLetters(ctx, cfg.SQS(), cfg.S3(), *e.name, deadletter.Config{Prefix: *e.prefix, Hold: *e.hold, Logger: e.a.logger})
		if err != nil {
			return err
		}
		return fn(ctx, in, args)
	}
}

func printDeadLetter(e *dlqEnv, en *deadletter.Entry) {
	w, d := e.a.stdout, en.Letter
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

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }
