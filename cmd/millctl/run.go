package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/millfleet/mill/internal/base/buildinfo"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/bit"
	"github.com/millfleet/mill/processors/noop"
)

// runCommand is the run command of the tree.
func runCommand() *command {
	return &command{
		name:    "run",
		summary: "process one queue's tasks in the foreground until it is empty",
		usage: `Process the tasks of one queue (--queue, a key or name) in the foreground
with Workman's manager — retries, dead-lettering, visibility extension —
and stop once the queue is empty (no visible, in-flight or delayed messages
for two checks in a row) or on ^C. Handy for debugging a queue.

The processors are Workman's own (internal/wiring), for the task types
--task-types names: NOOP by default, which needs nothing but the queues;
"all" or a list such as AUDIT,DUP opens what those processors need (the
config bucket or directory, the audit-log table, PostgreSQL, the reports
bucket), exactly as workman does. Tasks of other types are dead-lettered.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			prefix := wiring.QueuePrefixFlag(fs)
			qflag := fs.String("queue", "", "queue `key` or name to process (required)")
			workers := fs.Int("workers", 4, "tasks run at once")
			maxAttempts := fs.Int("max-attempts", workman.DefaultMaxAttempts, "failures before a task is dead-lettered")
			retryBase := fs.Duration("retry-base", workman.DefaultRetryBase, "delay before the first retry (doubling)")
			check := fs.Duration("check", 2*time.Second, "how often to check whether the queue is empty")
			noopSleep := fs.Duration("noop-sleep", 0, "how long each NOOP task takes")
			taskTypes := fs.String("task-types", "NOOP", "task `types` to process: all, or a comma-separated list (NOOP,AUDIT,DUP,BIT,BIT_ERROR,BIT_REPORT,STORAGE_STATS)")
			cfgSrc := configFlags(fs, a)
			dbURL := databaseURLFlag(fs)
			auditTable := fs.String("audit-table", auditlog.DefaultTable, "DynamoDB audit log `table`")
			reports := wiring.ReportsFlags(fs)
			recheck := fs.Duration("recheck-delay", bit.DefaultRecheckDelay, "the bit check's \"wait 5 minutes\" before re-checking an item")
			claims := wiring.ClaimsFlags(fs)
			tracingFlag := wiring.TracingFlag(fs)
			return func(ctx context.Context, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				if *qflag == "" {
					return usagef("--queue is required")
				}
				if *check <= 0 {
					return usagef("--check must be positive")
				}
				name := *qflag
				if !strings.HasPrefix(name, *prefix) {
					name = queue.Name(*prefix, name)
				}
				types, err := wiring.ParseTypes(*taskTypes)
				if err != nil {
					return usagef("%v", err)
				}
				cfg, err := a.awsConfig(ctx)
				if err != nil {
					return err
				}
				tracing, stopTracing, err := tracingFlag.Install(ctx, "millctl", a.getenv, a.logger, cfg, claims)
				if err != nil {
					return err
				}
				defer stopTracing()
				key := strings.TrimPrefix(name, *prefix)
				if !slices.Contains(queue.AllKeys, key) || key == queue.KeyDeadLetter {
					return usagef("--queue %q: not one of the work queues %v (under --queue-prefix %q)", *qflag, queue.DefaultPriority, *prefix)
				}
				workerID := "millctl-" + workman.DefaultWorkerID()
				d, closeDeps, err := wiring.AWS(ctx, wiring.AWSConfig{
					AWS: cfg, Claims: claims, Tracing: tracing, QueuePrefix: *prefix, QueueNames: map[string]string{key: name},
					Config:     *cfgSrc.ConfigSource,
					AuditTable: *auditTable, DatabaseURL: *dbURL, ReportsBucket: reports.Bucket, ReportsPrefix: reports.Prefix,
					Types: types, RecheckDelay: *recheck,
					Noop: noop.Config{Sleep: *noopSleep}, Logger: a.logger,
					Agent: bitlog.Agent{Instance: workerID, Version: buildinfo.Version()},
				})
				if err != nil {
					return err
				}
				defer closeDeps()
				q, err := d.Queues.Get(key)
				if err != nil {
					return err
				}
				obs := &runObserver{}
				m, err := wiring.Workman(d, wiring.WorkmanConfig{Types: types, Manager: workman.Config{
					Queues:  []queue.Queue{q},
					Workers: *workers, MaxAttempts: *maxAttempts, RetryBase: *retryBase,
					// One queue, run until empty: never back off for long.
					QueueBackoffMax: time.Second,
					IdlePollWait:    time.Second, GracePeriod: 10 * time.Second,
					Logger: a.logger, Observer: obs, WorkerID: workerID, Tracing: tracing,
				}})
				if err != nil {
					return err
				}
				runCtx, stop := context.WithCancel(ctx)
				defer stop()
				runErr := make(chan error, 1)
				start := time.Now()
				go func() { runErr <- m.Run(runCtx) }()
				empty := 0
				tick := time.NewTicker(*check)
				defer tick.Stop()
			wait:
				for {
					select {
					case err := <-runErr:
						return err
					case <-ctx.Done():
						break wait
					case <-tick.C:
					}
					d, err := q.Depth(ctx)
					if err != nil {
						a.logger.Warn("depth", "queue", name, "error", err)
						continue
					}
					if d.Total() == 0 && obs.inFlight.Load() == 0 {
						if empty++; empty >= 2 {
							break wait
						}
					} else {
						empty = 0
					}
				}
				stop()
				err = <-runErr
				fmt.Fprintf(a.stdout, "run: %s: %d done, %d failed attempts, %d dead-lettered, in %v\n",
					name, obs.done.Load(), obs.failed.Load(), obs.deadLettered.Load(), time.Since(start).Round(time.Millisecond))
				return err
			}
		},
	}
}

// runObserver counts what `millctl run` reports: it is both the manager's
// observer and the handler chain's (processors.Observer).
type runObserver struct {
	inFlight, deadLettered, done, failed atomic.Int64
}

func (o *runObserver) Received(string, int)           {}
func (o *runObserver) InFlight(delta int)             { o.inFlight.Add(int64(delta)) }
func (o *runObserver) DeadLettered(task.Type, string) { o.deadLettered.Add(1) }

func (o *runObserver) TaskDone(_ task.Type, result string, _ time.Duration) {
	if result == processors.ResultSuccess {
		o.done.Add(1)
	} else {
		o.failed.Add(1)
	}
}
