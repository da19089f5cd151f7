// Command dupproducer is Mill's looping duplication producer
// (docs/ARCHITECTURE.md, Duplication and Looping producers): run from cron (a
// scheduled container), each invocation continues or starts a run that puts
// DUP tasks for every duplicated space and item on the low-priority
// duplication queue, stopping when the queue is full and resuming there next
// time.
//
// Every flag can also be set with its MILL_* environment variable; run
// `dupproducer --help` for the list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/producercmd"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/lease"
	"github.com/millfleet/mill/pkg/lease/dynamolease"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/producers/dup"
	"github.com/millfleet/mill/producers/looping"
)

// Defaults.
const (
	DefaultConfigBucket = "mill-config"
	// StateKey is the state's key in --state-bucket.
	StateKey         = "dupproducer.json"
	DefaultFrequency = "7d"
)

const summary = `dupproducer — Mill's looping duplication producer.

One invocation per cron tick. It takes the "dupproducer" lease (a DynamoDB
table), loads its state (a local file or an s3://bucket/key object), and, when
a run is due or one is in progress, queues DUP tasks on the low-priority
duplication queue: for every account of duplication-accounts.json that is
active in accounts.json and has a policy file, every space of each store
policy's source or destination store (spacesToIgnore and x- spaces skipped),
first a space-level task and one task per destination item absent from the
source (for a space gone from the source: its destination items, then the
space), then one task per source item, 1000 (--bite-size) at a time,
interleaved across spaces. It stops, saving the
state, when the queue holds --max-queue-size visible messages; the next
invocation resumes there. When the run is complete the next one is due
--frequency after this run's start (at the --start-at time of that day, when
given). --notify-topic-arn announces completed runs and failed invocations.

Exit status: 0 when the run is done, not due, stopped by a full queue, or when
another invocation holds the lease (its holder is printed); 3 when the
invocation gave up stores or spaces that kept failing (or completed a run that
did): the rest was swept, the summary lists them, and the next run retries
them; 1 on errors; 2 on bad flags.

The configuration source (--config-dir, or --config-bucket under
--config-prefix) holds accounts.json, duplication-accounts.json and the
{account}-duplication-policy.json files. AWS access uses the SDK's default
chain (AWS_REGION, AWS_ENDPOINT_URL, profiles, instance or task roles).

Usage: dupproducer [flags]`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(producercmd.ExitCode("dupproducer", err, os.Stderr))
}

type options struct {
	configBucket, configPrefix, configDir string
	queuePrefix, queueName                string
	state, stateBucket                    string
	frequency                             string
	maxQueueSize                          int64
	biteSize                              int
	leaseTable                            string
	leaseTTL                              time.Duration
	output                                *producercmd.Output
	schedule                              *producercmd.Schedule
}

func defineFlags(fs *flag.FlagSet) *options {
	o := &options{}
	fs.StringVar(&o.configBucket, "config-bucket", DefaultConfigBucket, "S3 `bucket` holding accounts.json, duplication-accounts.json and the policies")
	fs.StringVar(&o.configPrefix, "config-prefix", "", "key `prefix` of those files in the config bucket")
	fs.StringVar(&o.configDir, "config-dir", "", "local `directory` holding those files, instead of the config bucket")
	fs.StringVar(&o.queuePrefix, "queue-prefix", queue.DefaultPrefix, "`prefix` of queue names")
	fs.StringVar(&o.queueName, "queue", queue.KeyDupLow, "the low-priority duplication queue: a queue `key` (named with --queue-prefix) or a full name")
	fs.StringVar(&o.state, "state", "", "where the state is kept between invocations: a local file `path` or s3://bucket/key (default s3://STATE-BUCKET/"+StateKey+")")
	fs.StringVar(&o.stateBucket, "state-bucket", wiring.DefaultStateBucket, "S3 `bucket` of the state when --state is not given (millctl setup creates it)")
	fs.StringVar(&o.frequency, "frequency", DefaultFrequency, "time between run starts, N[sMhdm] (s seconds, M minutes, h hours, d days, m months; 0: one run only)")
	fs.Int64Var(&o.maxQueueSize, "max-queue-size", looping.DefaultMaxQueueSize, "stop (and resume next time) when the queue has this many visible `messages`")
	fs.IntVar(&o.biteSize, "bite-size", looping.DefaultBiteSize, "source `items` queued per space per turn")
	fs.StringVar(&o.leaseTable, "lease-table", lease.DefaultTable, "DynamoDB `table` of the producer lease (one invocation at a time)")
	fs.DurationVar(&o.leaseTTL, "lease-ttl", looping.DefaultLeaseTTL, "how long the lease outlives a crashed holder (renewed every third of it)")
	o.output = producercmd.OutputFlags(fs)
	o.schedule = producercmd.ScheduleFlags(fs)
	return o
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dupproducer", flag.ContinueOnError)
	o := defineFlags(fs)
	if err := producercmd.Parse(fs, args, getenv, stderr, summary); err != nil {
		return err
	}
	errs := o.output.Parse()
	freq, err := looping.ParseFrequency(o.frequency)
	if err != nil {
		errs = append(errs, fmt.Errorf("frequency: %w", err))
	}
	if err := o.schedule.Check(freq); err != nil {
		errs = append(errs, err)
	}
	if o.maxQueueSize < 1 {
		errs = append(errs, fmt.Errorf("max-queue-size %d: must be at least 1", o.maxQueueSize))
	}
	if o.biteSize < 1 {
		errs = append(errs, fmt.Errorf("bite-size %d: must be at least 1", o.biteSize))
	}
	if o.state, err = wiring.StateLocation(o.state, o.stateBucket, StateKey); err != nil {
		errs = append(errs, err)
	}
	if o.configDir == "" && o.configBucket == "" {
		errs = append(errs, errors.New("config-bucket or config-dir is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return producercmd.Usage(err)
	}
	logger := o.output.Logger(stderr)

	awsCfg, err := awsconfig.Load(ctx, awsconfig.Options{Logger: logger, Getenv: getenv})
	if err != nil {
		return err
	}
	s3c := awsCfg.S3(func(so *s3.Options) { so.UsePathStyle = awsCfg.EndpointOverride })

	src := wiring.ConfigSource{Dir: o.configDir, Bucket: o.configBucket, Prefix: o.configPrefix}
	reg, err := src.Registry(ctx, s3c)
	if err != nil {
		return err
	}
	// One run reads each file once (InForce reads the account list per
	// account).
	pols := policy.NewCache(src.Policies(s3c), policy.CacheConfig{Refresh: 24 * time.Hour, Logger: logger})
	opener := wiring.NewOpener(reg, &awsCfg.AWS, awsCfg.EndpointOverride)
	prod, err := dup.New(dup.Config{Registry: reg, Policies: pols, Opener: opener, Logger: logger})
	if err != nil {
		return err
	}
	q, err := producercmd.OpenQueue(ctx, awsCfg.SQS(), queue.Resolve(o.queuePrefix, o.queueName))
	if err != nil {
		return err
	}
	state, err := producercmd.OpenState(o.state, s3c)
	if err != nil {
		return err
	}
	return producercmd.Run(ctx, looping.Config{
		Kind: dup.Kind, Producer: prod, Queue: q, State: state,
		Lease:     dynamolease.New(awsCfg.DynamoDB(), o.leaseTable, nil),
		LeaseTTL:  o.leaseTTL,
		Frequency: freq, MaxQueueSize: o.maxQueueSize, BiteSize: o.biteSize, Logger: logger,
	}, o.output, o.schedule, awsCfg, stdout, stderr)
}
