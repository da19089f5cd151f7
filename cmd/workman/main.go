// Command workman is Mill's worker daemon: it receives tasks from the work
// queues in priority order and runs them on a bounded pool of workers
// (package workman; docs/ARCHITECTURE.md, Workman). SIGTERM or SIGINT stops
// it gracefully: no more receives, running tasks get a grace period,
// unfinished ones are made visible again, and it exits 0. On EC2 an Auto
// Scaling termination or Spot interruption notice from the instance
// metadata service does the same, and the termination lifecycle hook is
// completed afterwards (package lifecycle). Every heartbeat interval it
// reports to the fleet registry and applies the fleet-wide pauses (package
// fleet; docs/ARCHITECTURE.md, Workman).
//
// Every flag can also be set with its MILL_* environment variable; run
// `workman --help` for the list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/base/buildinfo"
	"github.com/millfleet/mill/internal/cli/envflag"
	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/aimd"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/lifecycle"
	"github.com/millfleet/mill/pkg/metrics"
	"github.com/millfleet/mill/pkg/metrics/cloudwatchmetrics"
	"github.com/millfleet/mill/pkg/metrics/prometheusmetrics"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/workman"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/bit"
	"github.com/millfleet/mill/processors/noop"
)

const summary = `workman — Mill's worker daemon.

Receives tasks from the work queues (a receiver per queue, long polls on
quiet ones) and runs them on a bounded pool of workers in strict priority
order: a free worker takes the highest queue's waiting task (--min-share
sets floors for lower queues). Retries failures with backoff and sends a
task that failed --max-attempts times to the dead-letter queue. Task bodies
too big for SQS travel through S3 (--claims-bucket). Serves /healthz,
/readyz and /metrics, and publishes CloudWatch metrics once per interval.
SIGTERM/SIGINT: stop receiving (a long poll in flight is waited for, at
most --long-poll-wait), let running tasks finish within the grace period,
release the rest, exit 0; a second signal ends it at once. On EC2 an Auto Scaling termination or a
Spot interruption notice does the same, then completes the termination
lifecycle hook (--lifecycle-hook). Every --heartbeat-interval it writes its
heartbeat to the fleet registry (--fleet-table; see millctl fleet) and reads
the fleet-wide pauses: a paused queue is not received from, tasks of a
paused type are handed back.

Usage: workman [flags]`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop) // a second signal ends the process at once
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "workman:", wiring.Explain(err))
		os.Exit(1)
	}
}

// options are the parsed flags.
type options struct {
	queues                             string
	prefix                             *string
	deadLetter                         string
	workers                            int
	receiveWait                        time.Duration
	timeouts                           string
	defaultTimeout                     time.Duration
	queueBackoffMin                    time.Duration
	queueBackoffMax                    time.Duration
	minShare                           string
	longPollWait                       time.Duration
	grace                              time.Duration
	httpAddr                           string
	metricsInterval                    time.Duration
	cloudwatch                         bool
	namespace                          string
	maxAttempts                        int
	workerID                           string
	logLevel                           string
	format                             *wiring.WireFormat
	duracloudDB                        string
	tracing                            *wiring.Tracing
	noopSleep                          time.Duration
	noopRecord                         string
	taskTypes                          string
	config                             *wiring.ConfigSource
	policyRefresh                      time.Duration
	auditTable                         string
	databaseURL                        *string
	reports                            *wiring.Reports
	checkpointBucket, checkpointPrefix string
	transfer                           *storage.Transfer
	resumeMinSize                      int64
	bitCheckpointEvery                 int64
	recheckDelay                       time.Duration
	notifyTopic                        *string
	adminReports                       bool
	priceTable                         string
	dupRestoreDays                     int
	claims                             *wiring.Claims
	fleet                              *fleetOptions
}

func defineFlags(fs *flag.FlagSet) *options {
	o := &options{}
	fs.StringVar(&o.queues, "queues", strings.Join(queue.DefaultPriority, ","),
		"work queues to receive from, highest priority first, comma-separated `list`;\neach is a queue key (audit, dup-high, bit-report, bit-error, dup-low, bit),\nnamed with --queue-prefix, or a full queue name")
	o.prefix = wiring.QueuePrefixFlag(fs)
	fs.StringVar(&o.deadLetter, "dead-letter-queue", queue.KeyDeadLetter, "dead-letter queue `key or name`")
	fs.IntVar(&o.workers, "workers", workman.DefaultWorkers, "`number` of tasks run at once")
	fs.DurationVar(&o.receiveWait, "receive-wait", workman.DefaultReceiveWait, "wait of a batch receive from a queue with a backlog, and the longest a long poll must go\nunanswered before its queue counts as empty; after the first answers, four times the slowest\nrecent round trip, at least 50ms (must be > 0: a 0 s poll is not authoritative)")
	fs.StringVar(&o.timeouts, "timeouts", "", "per-task-type deadlines, comma-separated TYPE=`duration` (e.g. DUP=2h,BIT=30m);\na negative duration means no deadline")
	fs.DurationVar(&o.defaultTimeout, "default-timeout", workman.DefaultTaskTimeout, "deadline of task types not listed in --timeouts")
	fs.DurationVar(&o.queueBackoffMin, "queue-backoff-min", workman.DefaultQueueBackoffMin, "first backoff of a queue whose receive failed (doubles)")
	fs.DurationVar(&o.queueBackoffMax, "queue-backoff-max", workman.DefaultQueueBackoffMax, "longest backoff of a queue whose receive failed")
	fs.DurationVar(&o.longPollWait, "long-poll-wait", workman.DefaultIdlePollWait, "wait of the long poll that watches a queue without a backlog (at most 20s; one request\nper wait, answered as soon as a message arrives)")
	fs.StringVar(&o.minShare, "min-share", "", "starvation floor, comma-separated QUEUE=`fraction` (e.g. bit=0.2): while a higher queue\nhas a backlog, QUEUE still gets that fraction of the task starts (default none: strict priority)")
	fs.DurationVar(&o.grace, "grace-period", workman.DefaultGracePeriod, "on SIGTERM/SIGINT, how long running tasks may finish before they are cancelled and released")
	fs.StringVar(&o.httpAddr, "http-addr", ":9464", "`address` of the /healthz, /readyz and /metrics server (empty: none)")
	fs.DurationVar(&o.metricsInterval, "metrics-interval", cloudwatchmetrics.DefaultPublishInterval, "CloudWatch publication interval (one PutMetricData per interval)")
	fs.BoolVar(&o.cloudwatch, "cloudwatch", true, "publish CloudWatch metrics")
	fs.StringVar(&o.namespace, "cloudwatch-namespace", cloudwatchmetrics.DefaultNamespace, "CloudWatch `namespace`")
	fs.IntVar(&o.maxAttempts, "max-attempts", workman.DefaultMaxAttempts, "failures after which a task goes to the dead-letter queue")
	fs.StringVar(&o.workerID, "worker-id", "", "this worker's `id` in logs, dead letters, the fleet registry and the bit log's rows\n(default hostname-pid)")
	fs.StringVar(&o.logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	o.format = wiring.WireFormatFlag(fs)
	fs.StringVar(&o.taskTypes, "task-types", "all", "task types this worker processes: all, or a comma-separated `list` (e.g. NOOP);\nothers are dead-lettered. A NOOP-only worker needs no registry, audit table or database")
	o.config = wiring.ConfigFlags(fs)
	fs.DurationVar(&o.policyRefresh, "policy-refresh", policy.DefaultRefresh, "how long duplication policies are cached before they are read again")
	fs.StringVar(&o.auditTable, "audit-table", auditlog.DefaultTable, "DynamoDB `table` of the audit log")
	o.databaseURL = wiring.DatabaseURLFlag(fs, "the content index and bit log", "required unless --task-types is NOOP")
	o.reports = wiring.ReportsFlags(fs)
	fs.StringVar(&o.duracloudDB, "duracloud-db", "", "MySQL `DSN` of DuraCloud's mill database (user:pass@tcp(host:port)/db): the content index's\nchanges, bit reports and statistics are also written there for DuraStore and DurAdmin\n(empty: not written)")
	fs.BoolVar(&o.adminReports, "report-admin-space", false, "also store each bit-integrity report in the account's primary store, space\nx-duracloud-admin, named as the Java Mill names them (audited writes)")
	fs.StringVar(&o.priceTable, "price-table", "", "JSON price `file` of the cost estimates of bit reports and run reports (default: the\nbuilt-in us-east-1 list prices, dated; see docs/CAPACITY.md)")
	fs.IntVar(&o.dupRestoreDays, "dup-restore-days", 0, "when a DUP must copy an archived source item (S3 Glacier, Deep Archive), ask S3 to\nrestore it for this many `days` before dead-lettering the task (redrive it once restored);\n0: dead-letter it without asking")
	o.notifyTopic = wiring.NotifyFlag(fs)
	o.transfer = wiring.TransferFlags(fs)
	fs.StringVar(&o.checkpointBucket, "checkpoint-bucket", setup.DefaultStateBucket, "S3 `bucket` where long copies and bit checks keep their checkpoints (the state bucket;\nempty: none, a restarted transfer starts over)")
	fs.StringVar(&o.checkpointPrefix, "checkpoint-prefix", setup.CheckpointPrefix, "key `prefix` of the checkpoints in the checkpoint bucket")
	fs.Int64Var(&o.resumeMinSize, "resume-min-size", bit.DefaultResumeMinSize, "`bytes`: copies and bit checks of items at least this big are resumable")
	fs.Int64Var(&o.bitCheckpointEvery, "bit-checkpoint-every", bit.DefaultCheckpointEvery, "`bytes` a resumable bit check reads between two checkpoints (a copy saves one per part)")
	o.claims = wiring.ClaimsFlags(fs)
	o.tracing = wiring.TracingFlag(fs)
	o.fleet = fleetFlags(fs)
	fs.DurationVar(&o.recheckDelay, "recheck-delay", bit.DefaultRecheckDelay, "the bit check's \"wait before trying again\" (cases 4, 8, 9, 10), also the report's\nwait for missing results (at most 15m)")
	fs.DurationVar(&o.noopSleep, "noop-sleep", 0, "how long each NOOP task takes (tests and benchmarks)")
	fs.StringVar(&o.noopRecord, "noop-record", "", "for tests only: append the id property of every completed NOOP task to this `file`")
	return o
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("workman", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := defineFlags(fs)
	fs.Usage = func() { envflag.Usage(fs, stderr, summary) }
	if err := envflag.Parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	level, err := parseLevel(o.logLevel)
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("log-level: %w", err))
	}
	format, err := o.format.Parse()
	if err != nil {
		errs = append(errs, err)
	}
	timeouts, err := parseTimeouts(o.timeouts)
	if err != nil {
		errs = append(errs, err)
	}
	minShare, err := parseShares(*o.prefix, o.minShare)
	if err != nil {
		errs = append(errs, err)
	}
	types, err := wiring.ParseTypes(o.taskTypes)
	if err != nil {
		errs = append(errs, err)
	}
	var prices *pricing.Table
	if o.priceTable != "" {
		if prices, err = pricing.Load(o.priceTable); err != nil {
			errs = append(errs, fmt.Errorf("price-table: %w", err))
		}
	}
	if o.dupRestoreDays < 0 {
		errs = append(errs, fmt.Errorf("dup-restore-days %d: must not be negative", o.dupRestoreDays))
	}
	if o.recheckDelay <= 0 || o.recheckDelay > queue.MaxDelay {
		errs = append(errs, fmt.Errorf("recheck-delay %s: must be within (0, %s]", o.recheckDelay, queue.MaxDelay))
	}
	if o.fleet.table != "" && o.fleet.interval < time.Second {
		errs = append(errs, fmt.Errorf("heartbeat-interval %s: must be at least 1s", o.fleet.interval))
	}
	if o.fleet.lifecyclePoll <= 0 {
		errs = append(errs, fmt.Errorf("lifecycle-poll %s: must be positive", o.fleet.lifecyclePoll))
	}
	if err := (bitlog.Agent{Instance: o.workerID}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("worker-id: %w", err))
	}
	if wiring.NeedsStorage(types) && *o.databaseURL == "" {
		errs = append(errs, wiring.DatabaseURLRequired(" to process "+o.taskTypes+" (use --task-types NOOP for a NOOP-only worker)"))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))

	// A task waits at most 2 s for its store's turn (pkg/aimd), then is
	// released until it: a worker is not held by a throttled store while
	// other stores' tasks wait.
	awsCfg, err := awsconfig.Load(ctx, awsconfig.Options{Logger: logger, Getenv: getenv, Throttle: aimd.Config{MaxWait: 2 * time.Second}})
	if err != nil {
		return err
	}
	tracing, stopTracing, err := o.tracing.Install(ctx, "workman", getenv, logger, awsCfg, o.claims)
	if err != nil {
		return err
	}
	defer stopTracing()
	meter := sqsqueue.NewMeter()
	client := awsCfg.SQS(meter.Option())
	s3c := awsCfg.S3()
	var queues []queue.Queue
	var queueNames []string
	for _, s := range strings.Split(o.queues, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		q, err := o.claims.Open(ctx, client, s3c, queue.Resolve(*o.prefix, s), sqsqueue.Config{Logger: logger})
		if err != nil {
			return fmt.Errorf("open queue %s: %w", queue.Resolve(*o.prefix, s), err)
		}
		queues = append(queues, q)
		queueNames = append(queueNames, q.Name())
	}
	dlq, err := o.claims.Open(ctx, client, s3c, queue.Resolve(*o.prefix, o.deadLetter), sqsqueue.Config{Logger: logger})
	if err != nil {
		return fmt.Errorf("open dead-letter queue %s: %w", queue.Resolve(*o.prefix, o.deadLetter), err)
	}

	noopCfg := noop.Config{Sleep: o.noopSleep}
	if o.noopRecord != "" {
		rec, err := noop.OpenFileRecorder(o.noopRecord)
		if err != nil {
			return err
		}
		defer rec.Close()
		noopCfg.Recorder = rec
	}
	workerID := o.workerID
	if workerID == "" {
		workerID = workman.DefaultWorkerID()
	}
	deps, closeDeps, err := wiring.AWS(ctx, wiring.AWSConfig{
		AWS: awsCfg, SQSOptions: []func(*sqs.Options){meter.Option()}, Claims: o.claims, Tracing: tracing, QueuePrefix: *o.prefix,
		Config: *o.config, PolicyRefresh: o.policyRefresh, AuditTable: o.auditTable, DatabaseURL: *o.databaseURL,
		ReportsBucket: o.reports.Bucket, ReportsPrefix: o.reports.Prefix, Types: types,
		NotifyTopicARN: *o.notifyTopic, ReportAdminSpace: o.adminReports, Prices: prices,
		DuraCloudDB:      o.duracloudDB,
		DupRestoreDays:   o.dupRestoreDays,
		CheckpointBucket: o.checkpointBucket, CheckpointPrefix: o.checkpointPrefix,
		Transfer:      *o.transfer,
		ResumeMinSize: o.resumeMinSize, CheckpointEvery: o.bitCheckpointEvery,
		Format: format, RecheckDelay: o.recheckDelay, Noop: noopCfg, Logger: logger,
		Agent: bitlog.Agent{Instance: workerID, Version: buildinfo.Version()},
	})
	if err != nil {
		return err
	}
	defer closeDeps()

	// Metric labels: the served task types, "other" for the rest (a queue
	// flooded with made-up types must not make a series per type).
	prom := prometheusmetrics.New(prometheusmetrics.Options{Requests: meter.Snapshot, TaskTypes: types})
	var rec metrics.Recorder = prom
	var cw *cloudwatchmetrics.Recorder
	if o.cloudwatch {
		cw, err = cloudwatchmetrics.New(awsCfg.CloudWatch(), cloudwatchmetrics.Config{
			Namespace: o.namespace, Interval: o.metricsInterval, Logger: logger, TaskTypes: types,
		})
		if err != nil {
			return err
		}
		rec = metrics.Multi(prom, cw)
	}
	// The per-store request limits (pkg/aimd) are metrics, and logged.
	awsCfg.OnLimitChange(func(c aimd.Change) {
		prom.LimitChanged(c.Key, c.Kind, c.Limit)
		if cw != nil {
			cw.LimitChanged(c.Key, c.Kind, c.Limit)
		}
		if c.Kind != aimd.KindIncrease {
			logger.Info("store request limit changed", "store", c.Key, "change", c.Kind, "limit", c.Limit)
		}
	})
	member, err := newMember(o.fleet, awsCfg, workerID, *o.prefix, queueNames, o.workers, logger)
	if err != nil {
		return err
	}
	var pauser workman.Pauser
	var outer []processors.Middleware
	if member != nil {
		rec = metrics.Multi(rec, member) // counts by type for the heartbeat
		pauser = member
		// Outermost: a task stopped by a pause is logged and counted as
		// cancelled, then handed back.
		outer = []processors.Middleware{member.Middleware()}
	}
	m, err := wiring.Workman(deps, wiring.WorkmanConfig{Types: types, Outer: outer, Manager: workman.Config{
		Queues: queues, DeadLetter: dlq,
		Workers: o.workers, ReceiveWait: o.receiveWait,
		QueueBackoffMin: o.queueBackoffMin, QueueBackoffMax: o.queueBackoffMax, MinShare: minShare,
		IdlePollWait: o.longPollWait,
		TaskTimeouts: timeouts, DefaultTaskTimeout: o.defaultTimeout,
		MaxAttempts: o.maxAttempts, Format: format, GracePeriod: o.grace,
		WorkerID: workerID, Logger: logger, Observer: rec, Pauser: pauser, Tracing: tracing,
	}})
	if err != nil {
		return err
	}
	if member != nil {
		member.SetOutages(func() []fleet.Outage { return fleetOutages(m.Outages()) })
	}

	// Background services outlive the manager so its last results are
	// published and /healthz answers during shutdown.
	bgCtx, bgCancel := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	defer func() { bgCancel(); bg.Wait() }()
	if cw != nil {
		bg.Go(func() { _ = cw.Run(bgCtx) })
	}
	if o.httpAddr != "" {
		ln, err := net.Listen("tcp", o.httpAddr)
		if err != nil {
			return fmt.Errorf("http: %w", err)
		}
		logger.Info("serving /healthz /readyz /metrics", "addr", ln.Addr().String())
		srv := &http.Server{Handler: prometheusmetrics.Handler(prom.Registry(), m.Ready), ReadHeaderTimeout: 10 * time.Second}
		bg.Go(func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("http server", "error", err)
			}
		})
		bg.Go(func() {
			<-bgCtx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		})
	}

	// The manager stops on SIGTERM/SIGINT (ctx) or on a termination notice
	// from the instance metadata service.
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	md := lifecycle.NewMetadataClient(awsCfg.AWS)
	notices := make(chan lifecycle.Notice, 1)
	if o.fleet.instanceMetadata {
		bg.Go(func() { watchInstance(bgCtx, o.fleet, md, member, logger, notices) })
	}
	var notice *lifecycle.Notice
	var noticeMu sync.Mutex
	bg.Go(func() {
		select {
		case <-ctx.Done():
			if member != nil {
				member.Drain("stop signal")
			}
		case n := <-notices:
			noticeMu.Lock()
			notice = &n
			noticeMu.Unlock()
			if member != nil {
				member.Drain(n.Detail)
			}
			stopRun()
		case <-bgCtx.Done():
		}
	})
	if member != nil {
		memberCtx, stopMember := context.WithCancel(bgCtx)
		defer stopMember()
		bg.Go(func() { member.Run(memberCtx) })
	}
	err = m.Run(runCtx)
	if member != nil {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_ = member.Leave(lctx)
		cancel()
	}
	noticeMu.Lock()
	n := notice
	noticeMu.Unlock()
	if err == nil && n != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		completeLifecycle(cctx, o.fleet, awsCfg, md, *n, logger)
		cancel()
	}
	return err
}
