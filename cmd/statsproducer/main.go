// Command statsproducer is the looping storage statistics producer
// (docs/ARCHITECTURE.md, Storage statistics and Looping producers), run from
// a scheduler, one invocation at a time: it walks accounts → stores → spaces
// (filtered by --include/--exclude files, as bitproducer's) and queues one
// STORAGE_STATS task per space on the bit queue, whose processor records the
// space's items and bytes in the space_stats table. Spaces the history holds
// items for that a store no longer lists are queued too, so they are
// measured as empty. State is saved after every space (--state), so the next
// invocation resumes where this one stopped.
//
// Exit status: 0 when the run finished, the queue was full, the next run is
// not due yet or another invocation holds the lease; 3 when spaces that kept
// failing were given up for the run; 1 on errors; 2 on bad
// usage. Every flag can also be set with its MILL_* environment variable;
// run `statsproducer --help` for the list.
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

	"github.com/millfleet/mill/internal/producercmd"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/lease"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/spacestats/pgspacestats"
	"github.com/millfleet/mill/producers/looping"
	"github.com/millfleet/mill/producers/stats"
)

const summary = `statsproducer — Mill's looping storage statistics producer.

Queues one STORAGE_STATS task per selected space (and per space the history
holds items for that is gone since) on the bit queue while that queue is under
its maximum size; Workman's STORAGE_STATS processor counts the space's items
and bytes from a listing and records them in PostgreSQL (space_stats), one row
per space per run, read by millctl stats and the console. One invocation at a
time (a DynamoDB lease); state saved after every space. Exits 0 when done, not
due, the queue is full or the lease is held; 3 when spaces that kept failing
were given up (the rest was measured; the next run retries them).

Filter files (--include, --exclude): as bitproducer's, one /account/store/space
pattern per line.

Usage: statsproducer [flags]`

// Defaults of the flags.
const (
	defaultConfigBucket = "mill-config"
	stateKey            = "statsproducer/state.json"
	defaultFrequency    = "1d"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(producercmd.ExitCode("statsproducer", err, os.Stderr))
}

type options struct {
	configBucket, configPrefix, configDir string
	queuePrefix, queueName                string
	state, stateBucket, leaseTable        string
	frequency                             looping.Frequency
	maxQueueSize                          int64
	databaseURL                           string
	filter                                *producercmd.Filter
	output                                *producercmd.Output
	schedule                              *producercmd.Schedule
}

func defineFlags(fs *flag.FlagSet) *options {
	o := &options{}
	freq, _ := looping.ParseFrequency(defaultFrequency)
	fs.StringVar(&o.configBucket, "config-bucket", defaultConfigBucket, "S3 `bucket` holding accounts.json")
	fs.StringVar(&o.configPrefix, "config-prefix", "", "key `prefix` of accounts.json in the config bucket")
	fs.StringVar(&o.configDir, "config-dir", "", "local `directory` holding accounts.json, instead of the config bucket")
	fs.StringVar(&o.queuePrefix, "queue-prefix", queue.DefaultPrefix, "`prefix` of the queue names")
	fs.StringVar(&o.queueName, "queue", queue.KeyBit, "the queue STORAGE_STATS tasks go to: a queue `key` (named with --queue-prefix) or a full name")
	fs.StringVar(&o.state, "state", "", "where the state is kept: a local file `path` or s3://bucket/key (default s3://STATE-BUCKET/"+stateKey+")")
	fs.StringVar(&o.stateBucket, "state-bucket", wiring.DefaultStateBucket, "S3 `bucket` of the state when --state is not given (millctl setup creates it)")
	fs.TextVar(&o.frequency, "frequency", freq, "time between run starts, N followed by s, M (minutes), h, d or m (months); 0 = one run only")
	fs.Int64Var(&o.maxQueueSize, "max-queue-size", looping.DefaultMaxQueueSize, "stop (and resume next time) when the queue has this many visible `messages`")
	fs.StringVar(&o.leaseTable, "lease-table", lease.DefaultTable, "DynamoDB lease `table` (\"none\": no lease, for a single local process)")
	fs.StringVar(&o.databaseURL, "database-url", "", "PostgreSQL connection `URL` of the statistics history (required)")
	o.filter = producercmd.FilterFlags(fs)
	o.output = producercmd.OutputFlags(fs)
	o.schedule = producercmd.ScheduleFlags(fs)
	return o
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("statsproducer", flag.ContinueOnError)
	o := defineFlags(fs)
	if err := producercmd.Parse(fs, args, getenv, stderr, summary); err != nil {
		return err
	}
	errs := o.output.Parse()
	filter, ferrs := o.filter.Load()
	errs = append(errs, ferrs...)
	if err := o.schedule.Check(o.frequency); err != nil {
		errs = append(errs, err)
	}
	if o.maxQueueSize <= 0 {
		errs = append(errs, fmt.Errorf("--max-queue-size %d: must be positive", o.maxQueueSize))
	}
	stateAt, err := wiring.StateLocation(o.state, o.stateBucket, stateKey)
	if err != nil {
		errs = append(errs, err)
	}
	o.state = stateAt
	if o.databaseURL == "" {
		errs = append(errs, errors.New("--database-url (MILL_DATABASE_URL) is required: the statistics go to PostgreSQL"))
	}
	if err := errors.Join(errs...); err != nil {
		return producercmd.Usage(err)
	}
	logger := o.output.Logger(stderr)
	aws, err := awsconfig.Load(ctx, awsconfig.Options{Logger: logger, Getenv: getenv})
	if err != nil {
		return err
	}
	s3c := aws.S3()
	reg, err := wiring.ConfigSource{Dir: o.configDir, Bucket: o.configBucket, Prefix: o.configPrefix}.Registry(ctx, s3c)
	if err != nil {
		return err
	}
	db, err := milldb.Open(ctx, o.databaseURL, milldb.Config{})
	if err != nil {
		return err
	}
	defer db.Close()
	q, err := producercmd.OpenQueue(ctx, aws.SQS(), queue.Resolve(o.queuePrefix, o.queueName))
	if err != nil {
		return err
	}
	state, err := producercmd.OpenState(o.state, s3c)
	if err != nil {
		return err
	}
	p, err := stats.New(stats.Config{Registry: reg, Opener: wiring.NewOpener(reg, &aws.AWS, aws.EndpointOverride),
		Known: pgspacestats.New(db.Pool), Filter: filter, Logger: logger})
	if err != nil {
		return err
	}
	return producercmd.Run(ctx, looping.Config{Kind: stats.Kind, Producer: p, Queue: q, State: state,
		Lease: producercmd.Lease(aws, o.leaseTable), Frequency: o.frequency, MaxQueueSize: o.maxQueueSize, Logger: logger},
		o.output, o.schedule, aws, stdout, stderr)
}
