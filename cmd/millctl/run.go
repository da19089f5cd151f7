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

const runUsage = `Process the tasks of one queue (--queue, a key or name) in the foreground
with Workman's manager — retries, dead-lettering, visibility extension —
and stop once the queue is empty (no visible, in-flight or delayed messages
for two checks in a row) or on ^C. Handy for debugging a queue.

The processors are Workman's own (internal/wiring), for the task types
--task-types names: NOOP by default, which needs nothing but the queues;
"all" or a list such as AUDIT,DUP opens what those processors need (the
config bucket or directory, the audit-log table, PostgreSQL, the reports
bucket), exactly as workman does. Tasks of other types are dead-lettered.`

// runOptions are the options of run.
type runOptions struct {
	configOptions
	prefix, queue, taskTypes             string
	workers, maxAttempts                 int
	retryBase, check, noopSleep, recheck time.Duration
	dbURL, auditTable                    string
	reports                              *wiring.Reports
	claims                               *wiring.Claims
	tracing                              *wiring.Tracing
}

func (o *runOptions) define(fs *flag.FlagSet, _ *app) {
	wiring.QueuePrefixVar(fs, &o.prefix)
	fs.StringVar(&o.queue, "queue", "", "queue `key` or name to process (required)")
	fs.IntVar(&o.workers, "workers", 4, "tasks run at once")
	fs.IntVar(&o.maxAttempts, "max-attempts", workman.DefaultMaxAttempts, "failures before a task is dead-lettered")
	fs.DurationVar(&o.retryBase, "retry-base", workman.DefaultRetryBase, "delay before the first retry (doubling)")
	fs.DurationVar(&o.check, "check", 2*time.Second, "how often to check whether the queue is empty")
	fs.DurationVar(&o.noopSleep, "noop-sleep", 0, "how long each NOOP task takes")
	fs.StringVar(&o.taskTypes, "task-types", "NOOP", "task `types` to process: all, or a comma-separated list (NOOP,AUDIT,DUP,BIT,BIT_ERROR,BIT_REPORT,STORAGE_STATS)")
	databaseURLVar(fs, &o.dbURL)
	fs.StringVar(&o.auditTable, "audit-table", auditlog.DefaultTable, "DynamoDB audit log `table`")
	o.reports = wiring.ReportsFlags(fs)
	fs.DurationVar(&o.recheck, "recheck-delay", bit.DefaultRecheckDelay, "the bit check's \"wait 5 minutes\" before re-checking an item")
	o.claims = wiring.ClaimsFlags(fs)
	o.tracing = wiring.TracingFlag(fs)
}

func (o *runOptions) run(ctx context.Context, a *app, args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	if o.queue == "" {
		return usagef("--queue is required")
	}
	if o.check <= 0 {
		return usagef("--check must be positive")
	}
	name := o.queue
	if !strings.HasPrefix(name, o.prefix) {
		name = queue.Name(o.prefix, name)
	}
	types, err := wiring.ParseTypes(o.taskTypes)
	if err != nil {
		return usagef("%v", err)
	}
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return err
	}
	tracing, stopTracing, err := o.tracing.Install(ctx, "millctl", a.getenv, a.logger, cfg, o.claims)
	if err != nil {
		return err
	}
	defer stopTracing()
	key := strings.TrimPrefix(name, o.prefix)
	if !slices.Contains(queue.AllKeys, key) || key == queue.KeyDeadLetter {
		return usagef("--queue %q: not one of the work queues %v (under --queue-prefix %q)", o.queue, queue.DefaultPriority, o.prefix)
	}
	workerID := "millctl-" + workman.DefaultWorkerID()
	d, closeDeps, err := wiring.AWS(ctx, wiring.AWSConfig{
		AWS: cfg, Claims: o.claims, Tracing: tracing, QueuePrefix: o.prefix, QueueNames: map[string]string{key: name},
		Config:     *o.src.ConfigSource,
		AuditTable: o.auditTable, DatabaseURL: o.dbURL, ReportsBucket: o.reports.Bucket, ReportsPrefix: o.reports.Prefix,
		Types: types, RecheckDelay: o.recheck,
		Noop: noop.Config{Sleep: o.noopSleep}, Logger: a.logger,
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
		Workers: o.workers, MaxAttempts: o.maxAttempts, RetryBase: o.retryBase,
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
	tick := time.NewTicker(o.check)
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
